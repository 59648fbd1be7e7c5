// The portable scoring kernels: plain C++ and GCC/Clang vector extensions, compiled for the SIMD
// level chosen at run time where they say so (platform::run_at_simd_level).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "platform/simd.hpp"
#include "predict/forest_kernels.hpp"

namespace itercast::predict {
namespace {

inline bool go_left(const TreeNode& node, float x, const std::uint32_t* cat_ranges,
                    const std::uint32_t* cat_bits) {
    const std::uint32_t flags = node.feature_flags;
    if (flags & kCategorical) {
        // LightGBM: NaN, negative and (on x86) out-of-int-range values go right
        if (std::isnan(x) || x <= -1.0f || x >= 2147483648.0f) return false;
        const auto value = static_cast<std::uint32_t>(static_cast<std::int32_t>(x));
        const std::uint32_t begin = cat_ranges[2 * node.cat], words = cat_ranges[2 * node.cat + 1];
        const std::uint32_t word = value / 32;
        return word < words && ((cat_bits[begin + word] >> (value % 32)) & 1u);
    }
    if (std::isnan(x)) return flags & kNanLeft;
    if ((flags & kZeroMissing) && x == 0.0f) return flags & kDefaultLeft;
    return x <= node.threshold;
}

// x as linear leaves read it: within [low[i], high[i]] when there are bounds (set_linear_bounds).
inline float within_bounds(float x, std::size_t i, const std::vector<float>& low, const std::vector<float>& high) {
    return low.empty() ? x : std::min(std::max(x, low[i]), high[i]);
}

// A leaf's output for a row: its value, or its linear terms (the value where a term's feature is NaN).
inline double leaf_output(const TreeLayout& tree, const LinearLayout& linear, bool has_linear, std::int32_t leaf,
                          const float* row) {
    if (!has_linear) return tree.leaf_value[static_cast<std::size_t>(leaf)];
    const std::uint32_t begin = linear.begin[static_cast<std::size_t>(leaf)];
    const std::uint32_t end = linear.begin[static_cast<std::size_t>(leaf) + 1];
    double output = linear.constant[static_cast<std::size_t>(leaf)];
    for (std::uint32_t i = begin; i < end; ++i) {
        const auto feature = static_cast<std::size_t>(linear.feature[i]);
        const float x = row[feature];
        if (std::isnan(x)) return tree.leaf_value[static_cast<std::size_t>(leaf)];
        output += linear.coeff[i] * static_cast<double>(within_bounds(x, feature, linear.low, linear.high));
    }
    return output;
}

}  // namespace

template <bool General>
void score_rows(const TreeLayout& tree, const LinearLayout& linear, bool has_linear, std::size_t num_features,
                const float* block, std::size_t rows, double* out) {
    // The general path (NaN in the rows, zero-as-missing or categorical splits).
    // G rows walk each tree in lockstep: G independent load chains for the core to overlap.
    // A group stops when all its rows sit in sinks; at worst after the tree's depth.
    // (Why G=16 with that early stop: docs/decisions.md.)
    constexpr std::size_t G = 16;
    const std::size_t f = num_features;
    const TreeNode* nodes = tree.nodes.data();
    const std::size_t trees = tree.trees();
    for (std::size_t r0 = 0; r0 < rows; r0 += G) {
        const std::size_t g_count = std::min(G, rows - r0);
        const float* row[G];
        for (std::size_t g = 0; g < G; ++g) row[g] = block + (r0 + std::min(g, g_count - 1)) * f;
        double sum[G] = {};
        for (std::size_t t = 0; t < trees; ++t) {
            std::int32_t n[G];
            for (std::size_t g = 0; g < G; ++g) n[g] = tree.roots[t];
            const int depth = tree.depth[t];
            for (int d = 0; d < depth; ++d) {
                std::uint32_t active = 0;
                for (std::size_t g = 0; g < G; ++g) {
                    const TreeNode& node = nodes[n[g]];
                    const float x = row[g][node.feature_flags >> 8];
                    active |= ~node.feature_flags & kLeaf;
                    if constexpr (General) {
                        if (node.feature_flags & kLeaf) continue;
                        n[g] = go_left(node, x, tree.cat_ranges.data(), tree.cat_bits.data()) ? node.left : node.right;
                    } else {
                        n[g] = x <= node.threshold ? node.left : node.right;
                    }
                }
                if (!active) break;
            }
            // trees in order, as LightGBM adds them
            for (std::size_t g = 0; g < G; ++g) {
                sum[g] += leaf_output(tree, linear, has_linear, tree.node_leaf[static_cast<std::size_t>(n[g])], row[g]);
            }
        }
        for (std::size_t g = 0; g < g_count; ++g) out[r0 + g] = sum[g];
    }
}

template void score_rows<true>(const TreeLayout&, const LinearLayout&, bool, std::size_t, const float*, std::size_t,
                               double*);
template void score_rows<false>(const TreeLayout&, const LinearLayout&, bool, std::size_t, const float*, std::size_t,
                                double*);

// A fast path for trees of more than 64 leaves: G rows (feature-major) through every tree; the
// step is branch-free, n[] can live in registers, and the group stops once every row sits in a
// sink. Faster than the general path; bit sets (score_bits), for trees of up to 64 leaves, are
// faster still (docs/decisions.md).
void score_fast(const FastLayout& fast, const TreeLayout& tree, const float* transposed, double* sum,
                std::int32_t* leaves) {
    constexpr std::size_t G = kGroup;
    const FastNode* nodes = fast.nodes.data();
    const std::size_t trees = tree.trees();
    for (std::size_t t = 0; t < trees; ++t) {
        std::int32_t n[G];
        for (std::size_t g = 0; g < G; ++g) n[g] = fast.roots[t];
        const int depth = tree.depth[t];
        for (int d = 0; d < depth; ++d) {
            std::int32_t active = 0;
#pragma GCC unroll 16
            for (std::size_t g = 0; g < G; ++g) {
                const FastNode& node = nodes[n[g]];
                active |= node.leaf;
                n[g] = node.base + (transposed[node.offset + g] > node.threshold);
            }
            if (active >= 0) break;
        }
        if (leaves) {  // linear leaves: add_linear_terms adds their outputs
            for (std::size_t g = 0; g < G; ++g) leaves[t * G + g] = nodes[n[g]].leaf;
        } else {
            for (std::size_t g = 0; g < G; ++g) sum[g] += tree.leaf_value[static_cast<std::size_t>(nodes[n[g]].leaf)];
        }
    }
}

// 16 rows at once: a row's 64-bit leaf set is kept as two 32-bit halves, in vectors of 4 lanes
// each, so the comparison's lanes mask both directly (GCC/Clang vector extensions: baseline, AVX2 or
// AVX-512 code, as platform::simd_level() chooses at run time). 4 lanes, not 16: GCC turns a vector
// comparison wider than the instruction set's registers into one scalar comparison per lane
// (ten times slower with SSE2 or AVX2).
typedef float F32x4 __attribute__((vector_size(16)));
typedef std::int32_t I32x4 __attribute__((vector_size(16)));
static_assert(kGroup == 16, "score_bits handles 16 rows");

// inline: run_at_simd_level can only copy a body into each level's function if no other library can
// replace it at load time (under -fPIC, an exported function could be).
inline void score_bits_body(const BitLayout& bits, std::size_t trees, const float* transposed, double* sum,
                            std::int32_t* leaves) {
    constexpr std::size_t C = kGroup / 4;  // 4-row slices
    const BitSplit* splits = bits.splits.data();
    for (std::size_t t = 0; t < trees; ++t) {
        I32x4 low[C], high[C];
        for (std::size_t c = 0; c < C; ++c) low[c] = high[c] = ~I32x4{};
        for (std::uint32_t j = bits.begin[t]; j < bits.begin[t + 1]; ++j) {
            const float* rows = transposed + splits[j].slot * kGroup;
            for (std::size_t c = 0; c < C; ++c) {
                F32x4 x;
                std::memcpy(&x, rows + 4 * c, sizeof x);
                const I32x4 pass = ~(x > splits[j].threshold);  // all ones where the row goes left
                low[c] &= splits[j].keep_low | pass;
                high[c] &= splits[j].keep_high | pass;
            }
        }
        const double* values = bits.leaf_value.data() + bits.leaf_base[t];
        for (std::size_t g = 0; g < kGroup; ++g) {
            const auto lo = static_cast<std::uint32_t>(low[g / 4][g % 4]);
            const int leaf = lo ? __builtin_ctz(lo) : 32 + __builtin_ctz(static_cast<std::uint32_t>(high[g / 4][g % 4]));
            if (leaves) {  // linear leaves: add_linear_terms adds their outputs
                leaves[t * kGroup + g] = bits.leaf_global[bits.leaf_base[t] + static_cast<std::uint32_t>(leaf)];
            } else {
                sum[g] += values[leaf];
            }
        }
    }
}

void score_bits(const BitLayout& bits, std::size_t trees, const float* transposed, double* sum, std::int32_t* leaves) {
    platform::run_at_simd_level([&] { score_bits_body(bits, trees, transposed, sum, leaves); });
}

// The linear leaves' outputs, constant plus coefficient x value over the leaf's features, added in
// tree order to a group of kGroup rows: leaves[t * kGroup + g] is row g's leaf in tree t (global
// index). A leaf at a time, as add_linear_terms_avx512 takes 64 rows: the rows a tree sent to one
// leaf share its terms, so each 4-row slice takes them in one vector of doubles and only that leaf's
// rows keep the result. The rows are read in double once, into `widened`. Per lane, the arithmetic
// of leaf_output in its order (the build keeps multiplies and adds unfused), so a row scores the
// same whichever path its block takes.
typedef double F64x4 __attribute__((vector_size(32)));
typedef std::int64_t I64x4 __attribute__((vector_size(32)));

inline void add_linear_terms_body(const LinearLayout& linear, std::size_t trees, std::size_t slots,
                                  const std::int32_t* leaves, const float* transposed, double* widened, double* sum) {
    constexpr std::size_t G = kGroup, S = G / 4;  // rows, and 4-row slices
    static_assert(G <= 32, "a group's rows are one 32-bit set");
    // lanes of a 4-row slice picked by four bits of a row set
    static const I64x4 kPick[16] = {
        {0, 0, 0, 0},   {-1, 0, 0, 0},   {0, -1, 0, 0},   {-1, -1, 0, 0},   {0, 0, -1, 0},   {-1, 0, -1, 0},
        {0, -1, -1, 0}, {-1, -1, -1, 0}, {0, 0, 0, -1},   {-1, 0, 0, -1},   {0, -1, 0, -1},  {-1, -1, 0, -1},
        {0, 0, -1, -1}, {-1, 0, -1, -1}, {0, -1, -1, -1}, {-1, -1, -1, -1}};
    for (std::size_t i = 0; i < slots * G; ++i) {
        widened[i] = static_cast<double>(within_bounds(transposed[i], i / G, linear.slot_low, linear.slot_high));
    }
    const LinearLeaf* leaf_terms = linear.leaves.data();
    const std::uint32_t* slot = linear.slot.data();
    const double* coeff = linear.coeff.data();
    F64x4 total[S];
    std::memcpy(total, sum, sizeof total);
    for (std::size_t t = 0; t < trees; ++t) {
        const std::int32_t* reached = leaves + t * G;
        std::uint32_t pending = (std::uint32_t{1} << (G - 1) << 1) - 1;  // all G rows
        while (pending) {
            const std::int32_t leaf = reached[__builtin_ctz(pending)];
            std::uint32_t rows = 0;
            for (std::size_t g = 0; g < G; ++g) rows |= std::uint32_t{reached[g] == leaf} << g;
            pending &= ~rows;
            const LinearLeaf& terms = leaf_terms[static_cast<std::size_t>(leaf)];
            F64x4 output[S];
            for (auto& o : output) o = F64x4{} + terms.constant;
            for (std::uint32_t i = terms.begin; i < terms.end; ++i) {
                const double* x = widened + slot[i] * G;
                for (std::size_t k = 0; k < S; ++k) {
                    F64x4 v;
                    std::memcpy(&v, x + 4 * k, sizeof v);
                    output[k] = output[k] + coeff[i] * v;
                }
            }
            for (std::size_t k = 0; k < S; ++k) {
                const I64x4 pick = kPick[(rows >> (4 * k)) & 15];  // (a vector cast reinterprets the bits)
                const I64x4 chosen = (pick & (I64x4)(total[k] + output[k])) | (~pick & (I64x4)total[k]);
                total[k] = (F64x4)chosen;
            }
        }
    }
    std::memcpy(sum, total, sizeof total);
}

void add_linear_terms(const LinearLayout& linear, std::size_t trees, std::size_t slots, const std::int32_t* leaves,
                      const float* transposed, double* widened, double* sum) {
    platform::run_at_simd_level([&] { add_linear_terms_body(linear, trees, slots, leaves, transposed, widened, sum); });
}

bool transpose(const FeatureSlots& slots, const float* x, std::size_t row_stride, const std::int64_t* select,
               std::size_t first, std::size_t count, std::size_t group, float* transposed) {
    const std::uint32_t* used = slots.used.data();
    const std::size_t u = slots.used.size();
    bool nan = false;
    for (std::size_t g = 0; g < group; ++g) {
        const std::size_t i = first + std::min(g, count - 1);
        const float* in = x + (select ? static_cast<std::size_t>(select[i]) : i) * row_stride;
        for (std::size_t s = 0; s < u; ++s) {
            const float v = in[used[s]];
            nan |= v != v;
            transposed[s * group + g] = std::fabs(v) <= kZeroThreshold ? 0.0f : v;
        }
    }
    return nan;
}

}  // namespace itercast::predict
