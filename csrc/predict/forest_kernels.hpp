#pragma once
// Scoring kernels, each taking the layout it reads (forest_layouts.hpp). The portable kernels
// (forest_kernels_portable.cpp) run everywhere, their vector code compiled for the SIMD level chosen
// at run time; the AVX-512 ones (forest_kernels_avx512.cpp) are built where the compiler can target
// AVX-512 and used only where platform::simd_level() is AVX-512. Both give the same bits.
#include <cstddef>
#include <cstdint>

#include "predict/forest_layouts.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ITERCAST_NO_AVX512)
#define ITERCAST_AVX512 1
#endif

namespace itercast::predict {

// The general path: `rows` rows of `num_features` floats at `block` (read as LightGBM reads them),
// through every tree; out[i] for row i. General: NaN in the rows, zero-as-missing or categorical
// splits; otherwise every split is a plain x <= threshold.
template <bool General>
void score_rows(const TreeLayout& tree, const LinearLayout& linear, bool has_linear, std::size_t num_features,
                const float* block, std::size_t rows, double* out);

// Rows first .. first + count of x (or of x[select]) into `transposed`, feature-major over the
// slots' features, `group` rows per feature (a short group repeats its last row); values LightGBM
// reads as zero become 0. Returns whether any of those features is NaN.
bool transpose(const FeatureSlots& slots, const float* x, std::size_t row_stride, const std::int64_t* select,
               std::size_t first, std::size_t count, std::size_t group, float* transposed);

// kGroup transposed rows through every tree. They add each row's leaf values to sum; with `leaves`
// (linear forests) they write the leaf each row reached in each tree instead (leaves[tree * kGroup + row]):
// its global index, for add_linear_terms.
void score_fast(const FastLayout& fast, const TreeLayout& tree, const float* transposed, double* sum,
                std::int32_t* leaves);
void score_bits(const BitLayout& bits, std::size_t trees, const float* transposed, double* sum, std::int32_t* leaves);

// The linear leaves' outputs added in tree order to kGroup rows' sums: leaves[t * kGroup + g] is row g's
// leaf in tree t (global index). `widened`: room for the transposed rows in double.
void add_linear_terms(const LinearLayout& linear, std::size_t trees, std::size_t slots, const std::int32_t* leaves,
                      const float* transposed, double* widened, double* sum);

#ifdef ITERCAST_AVX512
// transpose() for kWideGroup rows of x (no select), each used feature's 16-row slices gathered at once.
bool transpose_avx512(const FeatureSlots& slots, const float* x, std::size_t row_stride, std::size_t count,
                      float* transposed);
// score_bits for kWideGroup rows; with `leaves`, each row's leaf as an index into bits.linear.
// `masks`: room for bits.tests.size() * kWideGroup / 16 masks.
void score_bits_avx512(const BitLayout& bits, std::size_t trees, const float* transposed, std::uint16_t* masks,
                       double* sum, std::int32_t* leaves);
// add_linear_terms for kWideGroup rows whose leaves index bits.linear.
void add_linear_terms_avx512(const BitLayout& bits, const LinearLayout& linear, std::size_t trees, std::size_t slots,
                             const std::int32_t* leaves, const float* transposed, double* widened, double* sum);
#endif

}  // namespace itercast::predict
