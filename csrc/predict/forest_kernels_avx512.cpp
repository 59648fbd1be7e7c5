// The AVX-512 scoring kernels (64 rows at a time), used where platform::simd_level() is AVX-512.
#include "predict/forest_kernels.hpp"

#ifdef ITERCAST_AVX512
#include <immintrin.h>

#include <algorithm>

namespace itercast::predict {

// GCC 12 warns inside its own avx512fintrin.h (intrinsics that start from an undefined vector).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {
// set &= keep in the lanes of m, in place. GCC 12 copies the set before and after
// _mm512_mask_and_epi32 when its result replaces its source (two moves per AND in this loop).
__attribute__((target("avx512f"), always_inline)) inline void masked_and(__m512i& set, __mmask16 m, __m512i keep) {
#if defined(__GNUC__) && !defined(__clang__)
    asm("vpandd %1, %0, %0%{%2%}" : "+v"(set) : "v"(keep), "Yk"(m));
#else
    set = _mm512_mask_and_epi32(set, m, set, keep);
#endif
}
}  // namespace

// The bit-set kernel for 64 rows: AVX-512 compares put each split's test for 16 rows in a mask
// register, which clears leaves by a masked AND with no blend; the exit leaf's index comes from
// the lowest set bit (isolated, converted to float: its exponent) and its value from a gather.
// Scores equal score_bits' (each row's leaf values added in tree order, in double).
__attribute__((target("avx512f"))) void score_bits_avx512(const BitLayout& bits, std::size_t trees,
                                                          const float* transposed, std::uint16_t* masks, double* sum,
                                                          std::int32_t* leaves) {
    const BitTest* tests = bits.tests.data();
    const std::size_t test_count = bits.tests.size();
    const TestSplit* splits = bits.test_splits.data();
    const std::uint32_t* begin = bits.begin.data();
    const std::uint8_t* narrow = bits.narrow.data();
    const std::uint32_t* leaf_base = bits.leaf_base.data();
    const double* leaf_value = bits.leaf_value.data();
    constexpr std::size_t G = kWideGroup, C = G / 16;  // rows, and vectors of 16 rows
    // each distinct test once: masks[test * C + c], bit g set where row 16 c + g goes right (x > threshold)
    for (std::size_t i = 0; i < test_count; ++i) {
        const float* x = transposed + tests[i].slot * G;
        const __m512 threshold = _mm512_set1_ps(tests[i].threshold);
#pragma GCC unroll 8
        for (std::size_t c = 0; c < C; ++c) {
            masks[i * C + c] = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 16 * c), threshold, _CMP_GT_OQ);
        }
    }
    __m512d acc[2 * C];
    for (auto& a : acc) a = _mm512_setzero_pd();
    const __m512i ones = _mm512_set1_epi32(-1), zero = _mm512_setzero_si512();
    const __m512i bias = _mm512_set1_epi32(127), upper = _mm512_set1_epi32(32);
    for (std::size_t t = 0; t < trees; ++t) {
        const double* values = leaf_value + leaf_base[t];
        __m512i lo[C], hi[C];
#pragma GCC unroll 8
        for (std::size_t c = 0; c < C; ++c) lo[c] = hi[c] = ones;
        if (narrow[t]) {
            // <= 32 leaves: every split keeps all of leaves 32-63, the high half never changes
            for (std::uint32_t j = begin[t]; j < begin[t + 1]; ++j) {
                const std::uint16_t* m = masks + splits[j].test * C;
                const __m512i keep_lo = _mm512_set1_epi32(splits[j].keep_low);
#pragma GCC unroll 8
                for (std::size_t c = 0; c < C; ++c) masked_and(lo[c], m[c], keep_lo);
            }
        } else {
            for (std::uint32_t j = begin[t]; j < begin[t + 1]; ++j) {
                const TestSplit& split = splits[j];
                const std::uint16_t* m = masks + split.test * C;
                const __m512i keep_lo = _mm512_set1_epi32(split.keep_low);
                const __m512i keep_hi = _mm512_set1_epi32(split.keep_high);
#pragma GCC unroll 8
                for (std::size_t c = 0; c < C; ++c) {
                    // rows going right clear the split's left subtree
                    masked_and(lo[c], m[c], keep_lo);
                    masked_and(hi[c], m[c], keep_hi);
                }
            }
        }
#pragma GCC unroll 8
        for (std::size_t c = 0; c < C; ++c) {
            // the exit leaf is the lowest set bit: isolated, converted to float, read from the exponent
            const __mmask16 in_low = _mm512_test_epi32_mask(lo[c], lo[c]);
            const __m512i v = _mm512_mask_blend_epi32(in_low, hi[c], lo[c]);
            const __m512i lowest = _mm512_and_si512(v, _mm512_sub_epi32(zero, v));  // a power of two
            const __m512i exponent = _mm512_srli_epi32(_mm512_castps_si512(_mm512_cvtepu32_ps(lowest)), 23);
            __m512i leaf = _mm512_sub_epi32(exponent, bias);
            leaf = _mm512_mask_add_epi32(leaf, static_cast<__mmask16>(~in_low), leaf, upper);
            if (leaves) {  // linear leaves: each row's leaf in bits.linear, for add_linear_terms_avx512
                const __m512i at = _mm512_add_epi32(leaf, _mm512_set1_epi32(static_cast<std::int32_t>(leaf_base[t])));
                _mm512_storeu_si512(leaves + t * G + 16 * c, at);
                continue;
            }
            acc[2 * c] = _mm512_add_pd(acc[2 * c], _mm512_i32gather_pd(_mm512_castsi512_si256(leaf), values, 8));
            acc[2 * c + 1] = _mm512_add_pd(acc[2 * c + 1],
                                           _mm512_i32gather_pd(_mm512_extracti64x4_epi64(leaf, 1), values, 8));
        }
    }
    for (std::size_t k = 0; k < 2 * C; ++k) _mm512_storeu_pd(sum + 8 * k, acc[k]);
}

// add_linear_terms for a group of kWideGroup rows, a leaf at a time: the rows a tree sent to one leaf
// share its terms, so every 8-row slice takes them in one vector and only that leaf's rows keep
// the result (fewer branches the core cannot predict than choosing slices; eight independent sums
// hide the add's latency). The rows are read in double once, `widened`: a term is then a multiply
// and an add. Per lane, the scalar arithmetic in its order (the build keeps the two unfused), so a
// row scores the same bits as on the other paths.
__attribute__((target("avx512f"))) void add_linear_terms_avx512(const BitLayout& bits, const LinearLayout& linear_terms,
                                                                std::size_t trees, std::size_t slots,
                                                                const std::int32_t* leaves, const float* transposed,
                                                                double* widened, double* sum) {
    const LinearLeaf* linear = bits.linear.data();
    const std::uint32_t* slot = linear_terms.slot.data();
    const double* coeff = linear_terms.coeff.data();
    const float* low = linear_terms.bounded() ? linear_terms.slot_low.data() : nullptr;
    const float* high = linear_terms.bounded() ? linear_terms.slot_high.data() : nullptr;
    constexpr std::size_t G = kWideGroup, C = G / 16, S = G / 8;  // rows, 16-row and 8-row slices
    for (std::size_t s = 0; s < slots; ++s) {
        for (std::size_t k = 0; k < S; ++k) {
            __m256 v = _mm256_loadu_ps(transposed + s * G + 8 * k);
            if (low) v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(low[s])), _mm256_set1_ps(high[s]));
            _mm512_storeu_pd(widened + s * G + 8 * k, _mm512_cvtps_pd(v));
        }
    }
    __m512d total[S];
    for (std::size_t k = 0; k < S; ++k) total[k] = _mm512_loadu_pd(sum + 8 * k);
    for (std::size_t t = 0; t < trees; ++t) {
        const std::int32_t* reached = leaves + t * G;
        __m512i leaf_of[C];
        for (std::size_t c = 0; c < C; ++c) leaf_of[c] = _mm512_loadu_si512(reached + 16 * c);
        std::uint64_t pending = ~std::uint64_t{0};
        while (pending) {
            const std::int32_t leaf = reached[__builtin_ctzll(pending)];
            const __m512i wanted = _mm512_set1_epi32(leaf);
            std::uint64_t rows = 0;
            for (std::size_t c = 0; c < C; ++c) {
                rows |= std::uint64_t{_mm512_cmpeq_epi32_mask(leaf_of[c], wanted)} << (16 * c);
            }
            pending &= ~rows;
            const LinearLeaf& terms = linear[static_cast<std::size_t>(leaf)];
            __m512d output[S];
            for (auto& o : output) o = _mm512_set1_pd(terms.constant);
            for (std::uint32_t i = terms.begin; i < terms.end; ++i) {
                const double* x = widened + slot[i] * G;
                const __m512d c = _mm512_set1_pd(coeff[i]);
#pragma GCC unroll 8
                for (std::size_t k = 0; k < S; ++k) {
                    output[k] = _mm512_add_pd(output[k], _mm512_mul_pd(c, _mm512_loadu_pd(x + 8 * k)));
                }
            }
#pragma GCC unroll 8
            for (std::size_t k = 0; k < S; ++k) {
                total[k] = _mm512_mask_add_pd(total[k], static_cast<__mmask8>(rows >> (8 * k)), total[k], output[k]);
            }
        }
    }
    for (std::size_t k = 0; k < S; ++k) _mm512_storeu_pd(sum + 8 * k, total[k]);
}

// transpose() for 64 rows of x (row_stride floats apart, `count` of them real, the rest
// repeating the last): each used feature's 16-row slices gathered in one instruction.
__attribute__((target("avx512f"))) bool transpose_avx512(const FeatureSlots& slots, const float* x,
                                                         std::size_t row_stride, std::size_t count, float* transposed) {
    const std::uint32_t* used = slots.used.data();
    const std::size_t used_count = slots.used.size();
    constexpr std::size_t C = kWideGroup / 16;
    __m512i offset[C];
    for (std::size_t c = 0; c < C; ++c) {
        alignas(64) std::int32_t lanes[16];
        for (std::size_t g = 0; g < 16; ++g) {
            lanes[g] = static_cast<std::int32_t>(std::min(16 * c + g, count - 1) * row_stride);
        }
        offset[c] = _mm512_load_si512(lanes);
    }
    const __m512 tiny = _mm512_set1_ps(kZeroThreshold);
    __mmask16 nan = 0;
    for (std::size_t s = 0; s < used_count; ++s) {
        const float* column = x + used[s];
#pragma GCC unroll 4
        for (std::size_t c = 0; c < C; ++c) {
            const __m512 v = _mm512_i32gather_ps(offset[c], column, 4);
            nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            const __mmask16 zero = _mm512_cmp_ps_mask(_mm512_abs_ps(v), tiny, _CMP_LE_OQ);
            _mm512_storeu_ps(transposed + s * kWideGroup + 16 * c, _mm512_mask_mov_ps(v, zero, _mm512_setzero_ps()));
        }
    }
    return nan != 0;
}

#pragma GCC diagnostic pop

}  // namespace itercast::predict
#endif
