#pragma once
// The layouts a Forest is scored from: the trees as parsed (the general path), and the forms the
// fast paths read, each built once from them (forest_layouts.cpp). The kernels (forest_kernels.hpp)
// take these structs.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itercast::predict {

// LightGBM's kZeroThreshold: its dense-row reader drops |x| <= this, so such values predict as 0.
inline constexpr float kZeroThreshold = 1e-35f;

// Rows per group of the fast paths' feature-major copies, and of the AVX-512 bit-set kernel.
inline constexpr std::size_t kGroup = 16;
inline constexpr std::size_t kWideGroup = 64;

// Node layout: 16 bytes, depth-first; each leaf is a sink node whose children are itself,
// so that a tree is walked in exactly its depth's steps with no test for having arrived.
struct TreeNode {
    union {
        float threshold;     // numerical: go left iff x <= threshold (rounded down to float)
        std::uint32_t cat;   // categorical: index into TreeLayout::cat_ranges
    };
    std::uint32_t feature_flags;  // feature << 8 | flags
    std::int32_t left;
    std::int32_t right;
};
enum : std::uint32_t {
    kCategorical = 1,
    kDefaultLeft = 2,
    kZeroMissing = 4,  // zero (and NaN) take the default direction
    kNanMissing = 8,   // NaN takes the default direction
    kNanLeft = 16,     // where NaN goes (derived from the above and the threshold)
    kLeaf = 32,        // a leaf's sink (both children point to itself)
};

// The trees as parsed: what the general path (NaN, zero-as-missing, categorical splits) walks.
struct TreeLayout {
    std::vector<TreeNode> nodes;
    std::vector<std::int32_t> roots;      // per tree: its root node (a leaf's sink for one-leaf trees)
    std::vector<int> depth;               // per tree: steps from the root to its deepest sink
    std::vector<std::int32_t> node_leaf;  // per node: global leaf index of a sink, -1 otherwise
    std::vector<double> leaf_value;       // per global leaf
    std::vector<std::uint32_t> cat_ranges;  // pairs: begin, words into cat_bits
    std::vector<std::uint32_t> cat_bits;
    std::size_t trees() const { return roots.size(); }
};

// A linear leaf as the vector paths read it: its constant and its terms' range, in one place.
struct LinearLeaf {
    double constant;
    std::uint32_t begin, end;  // into LinearLayout::slot and LinearLayout::coeff
};

// Linear leaves: constant + sum coeff * x over [begin[l], begin[l + 1]), x within bounds when set.
struct LinearLayout {
    std::vector<double> constant;          // per global leaf
    std::vector<std::uint32_t> begin;      // per global leaf, and one past the last
    std::vector<std::int32_t> feature;     // per term
    std::vector<double> coeff;             // per term
    std::vector<std::uint32_t> slot;       // per term: its feature's slot (FeatureSlots), for the fast paths
    std::vector<LinearLeaf> leaves;        // per global leaf (linear forests)
    // Forest::set_linear_bounds: per feature (general path) and per slot (fast paths); empty: none
    std::vector<float> low, high;
    std::vector<float> slot_low, slot_high;
    bool bounded() const { return !low.empty(); }
};

// The features some split or linear leaf reads, ascending: the fast paths copy only these, feature-major,
// a feature's rows at its slot * group size.
struct FeatureSlots {
    std::vector<std::uint32_t> used;
    std::vector<std::uint32_t> slot_of;  // per feature: its place in `used`
};

// The fast path for trees of more than 64 leaves (forests of plain numerical splits, rows without
// NaN): siblings adjacent, so a step is base + (x > threshold). Leaves are sinks: threshold +inf,
// base itself.
struct FastNode {
    float threshold;
    std::uint32_t offset;  // slot * kGroup
    std::int32_t base;
    std::int32_t leaf;     // global leaf index for sinks, -1 otherwise
};
struct FastLayout {
    std::vector<FastNode> nodes;
    std::vector<std::int32_t> roots;
};

// Bit-vector evaluation (QuickScorer, vectorised over rows) for forests whose trees all have <= 64
// leaves: each split whose test fails (go right) clears the leaves of its left subtree from a row's
// 64-bit leaf set; the exit leaf is the leftmost left. Every split is tested, but for many rows at
// once and with no dependent loads.
struct BitSplit {
    std::uint32_t slot;  // the feature's slot (rows at slot * group size)
    float threshold;
    // leaves kept when x > threshold, all but the left subtree's: a 64-bit set as two halves,
    // leaves 0-31 and 32-63 (kernels keep a row's set as two 32-bit lanes)
    std::int32_t keep_low;
    std::int32_t keep_high;
};
// The AVX-512 kernel's form of the same splits: many splits of a forest test the same
// (feature, threshold) (LightGBM's thresholds are bin edges; on the CPU collection's boosters
// 9,300 splits hold 1,250 distinct tests), so each test is evaluated once per row group into
// a mask, and a split only reads its test's mask.
struct BitTest {
    std::uint32_t slot;
    float threshold;
};
struct TestSplit {
    std::uint32_t test;  // index into BitLayout::tests
    std::int32_t keep_low;
    std::int32_t keep_high;
};
struct BitLayout {
    bool usable = false;                    // every tree has <= 64 leaves (the rest is empty otherwise)
    std::vector<BitSplit> splits;
    std::vector<std::uint32_t> begin;       // per tree: its splits [begin[t], begin[t + 1])
    std::vector<std::uint8_t> narrow;       // per tree: <= 32 leaves (the leaf sets' high halves stay full)
    std::vector<std::uint32_t> leaf_base;   // per tree: where its leaves start in leaf_value
    std::vector<double> leaf_value;         // leaf values, each tree's left to right
    std::vector<std::int32_t> leaf_global;  // the same leaves' global indices
    std::vector<LinearLeaf> linear;         // the same leaves' linear outputs (linear forests)
    std::vector<BitTest> tests;             // distinct (slot, threshold), by slot then threshold
    std::vector<TestSplit> test_splits;     // splits in the same order, by test
};

FeatureSlots build_feature_slots(const TreeLayout& tree, const std::vector<std::int32_t>& linear_features,
                                 std::size_t num_features);
// Fills linear.slot and linear.leaves from the parsed terms (no leaves for a forest without linear ones).
void build_linear_leaves(LinearLayout& linear, const FeatureSlots& slots, bool has_linear);
FastLayout build_fast_layout(const TreeLayout& tree, const FeatureSlots& slots);
// `linear` null for forests without linear leaves.
BitLayout build_bit_layout(const TreeLayout& tree, const FeatureSlots& slots, const LinearLayout* linear);

}  // namespace itercast::predict
