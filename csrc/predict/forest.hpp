#pragma once
// A tree-ensemble evaluator for LightGBM regression models, read from
// LightGBM's text model format (Booster.model_to_string()).
//
// Scores equal LightGBM's raw scores (booster.predict(x, raw_score=True)) for
// float32 rows: numerical splits with their missing-value rules, categorical
// bitset splits, linear-tree leaves, average_output. Only single-output
// models (num_class=1, one tree per iteration) are read.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace itercast::predict {

// Malformed or unsupported model text; what() says what and where (line).
class ForestError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Which bit-set kernel scores forests of trees with <= 64 leaves: 64 rows at a time with AVX-512
// mask registers where platform::simd_level() is AVX-512, otherwise 16 rows with portable vector code.
enum class BitKernel { Auto, Portable };
void set_bit_kernel(BitKernel kernel);  // Portable forces the portable kernel (tests compare both)
const char* bit_kernel_name();          // "avx512" or "portable": what scoring uses now

class Forest {
public:
    static Forest parse(std::string_view text);

    int num_features() const { return num_features_; }
    int num_trees() const { return static_cast<int>(roots_.size()); }
    int num_nodes() const { return static_cast<int>(nodes_.size()); }
    bool average_output() const { return average_output_; }
    // The objective's name ("regression", "huber", ...): the first word of objective=, "" if absent.
    const std::string& objective() const { return objective_; }
    // Whether LightGBM's predict() without raw_score returns the raw score (averaged when
    // average_output): true for objectives whose output conversion is the identity.
    bool identity_output() const;
    bool has_categorical() const { return has_categorical_; }
    bool has_linear() const { return has_linear_; }

    // Linear leaves read feature f clamped to [low[f], high[f]] (one bound per feature; unbounded until
    // set): given the range a model was fitted on, a leaf's slopes stop at its edge. Splits are
    // unaffected when the bounds hold every threshold. Throws std::invalid_argument on a size other
    // than num_features() or low[f] > high[f].
    void set_linear_bounds(std::vector<float> low, std::vector<float> high);
    bool linear_bounded() const { return !linear_low_.empty(); }
    const std::vector<float>& linear_low() const { return linear_low_; }  // empty until set
    const std::vector<float>& linear_high() const { return linear_high_; }

    // Raw scores (LightGBM's raw_score=True: the sum over trees, never averaged) of `rows` float32 rows, `row_stride` floats apart; out[i] for row i.
    // If `select` is not null, scores rows select[0..rows) of x instead (out[i] for row select[i]).
    // `threads` > 1 splits the rows between that many std::threads when they are many.
    void predict(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                 const std::int64_t* select = nullptr, int threads = 1) const;

    // Node layout: 16 bytes, depth-first; each leaf is a sink node whose children are itself,
    // so that a tree is walked in exactly depth_ steps with no test for having arrived.
    struct Node {
        union {
            float threshold;     // numerical: go left iff x <= threshold (rounded down to float)
            std::uint32_t cat;   // categorical: index into cat_ranges_
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
    };

    // The fast path's layout (forests of plain numerical splits, rows without NaN): siblings
    // adjacent, so a step is base + (x > threshold); a row group's features are stored
    // feature-major, only those the forest splits on (used_features_): `offset` = slot * kGroup,
    // slot being the feature's place in used_features_. Leaves are sinks: threshold +inf, base itself.
    static constexpr std::size_t kGroup = 16;
    static constexpr std::size_t kWideGroup = 64;  // rows per group of the AVX-512 bit-set kernel
    struct FastNode {
        float threshold;
        std::uint32_t offset;
        std::int32_t base;
        std::int32_t leaf;  // global leaf index for sinks, -1 otherwise
    };

    // Bit-vector evaluation (QuickScorer, vectorised over rows) for forests whose trees all have
    // <= 64 leaves: each split whose test fails (go right) clears the leaves of its left subtree
    // from a row's 64-bit leaf set; the exit leaf is the leftmost left. Every split is tested,
    // but for 16 rows at once and with no dependent loads.
    struct BitSplit {
        std::uint32_t slot;    // the feature's place in used_features_ (rows at slot * group size)
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
    // A linear leaf as the vector paths read it: its constant and its terms' range, in one place.
    struct LinearLeaf {
        double constant;
        std::uint32_t begin, end;  // into linear_slot_ and linear_coeff_
    };
    struct TestSplit {
        std::uint32_t test;  // index into bit_tests_
        std::int32_t keep_low;
        std::int32_t keep_high;
    };

private:
    void build_used_features();
    void build_bit_tests();
    void build_bit_splits();
    // Kernels add each row's leaf values to sum; with `leaves` (linear forests), they write the leaf
    // each row reached in each tree instead (leaves[tree * group + row]) for add_linear_terms: its
    // index into leaf_value_, or on AVX-512 into bit_leaf_value_ (and bit_linear_).
    void score_group_bits(const float* transposed, double* sum, std::int32_t* leaves) const;
    // The code of score_group_bits and add_linear_terms, which inline it into one copy per SIMD level.
    void score_group_bits_body(const float* transposed, double* sum, std::int32_t* leaves) const;
    bool transpose(const float* x, std::size_t row_stride, const std::int64_t* select, std::size_t first,
                   std::size_t count, std::size_t group, float* transposed) const;
    void build_fast_nodes();
    void score_group_fast(const float* transposed, double* sum, std::int32_t* leaves) const;
    void build_linear_leaves();
    void add_linear_terms(const std::int32_t* leaves, const float* transposed, double* widened, double* sum) const;
    void add_linear_terms_body(const std::int32_t* leaves, const float* transposed, double* widened,
                               double* sum) const;
    void predict_block(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                       const std::int64_t* select) const;
    template <bool General>
    void score_rows(const float* block, std::size_t rows, double* out) const;
    double leaf_output(std::int32_t leaf, const float* row) const;

    int num_features_ = 0;
    std::string objective_;
    bool average_output_ = false;
    bool has_categorical_ = false;
    bool has_linear_ = false;
    bool has_special_ = false;  // any node needing more than `x <= threshold` on non-NaN rows
    std::vector<Node> nodes_;
    std::vector<FastNode> fast_;
    std::vector<std::uint32_t> used_features_;  // features some split reads, ascending
    std::vector<std::uint32_t> slot_of_;        // per feature: its place in used_features_
    bool bits_ok_ = false;                   // every tree has <= 64 leaves
    std::vector<BitSplit> bit_splits_;
    std::vector<BitTest> bit_tests_;      // distinct (slot, threshold), by slot then threshold
    std::vector<TestSplit> test_splits_;  // bit_splits_ in the same order, by test
    std::vector<std::uint8_t> narrow_;    // per tree: <= 32 leaves (the leaf sets' high halves stay full)
    std::vector<std::uint32_t> bit_begin_;   // per tree: its splits [bit_begin_[t], bit_begin_[t + 1])
    std::vector<std::uint32_t> bit_leaf_base_;  // per tree: where its leaves start in bit_leaf_value_
    std::vector<double> bit_leaf_value_;        // leaf values, each tree's left to right
    std::vector<std::int32_t> bit_leaf_global_;  // the same leaves' indices into leaf_value_
    std::vector<LinearLeaf> bit_linear_;          // the same leaves' linear outputs (linear forests)
    std::vector<std::int32_t> fast_roots_;
    std::vector<std::int32_t> roots_;  // per tree: its root node (a leaf's sink for one-leaf trees)
    std::vector<int> depth_;           // per tree: steps from the root to its deepest sink
    std::vector<std::int32_t> node_leaf_;  // per node: global leaf index of a sink, -1 otherwise
    std::vector<double> leaf_value_;
    // linear leaves: leaf_const_ + sum coeff * x over [linear_begin_[l], linear_begin_[l + 1])
    std::vector<double> leaf_const_;
    std::vector<std::uint32_t> linear_begin_;
    std::vector<std::int32_t> linear_feature_;
    std::vector<double> linear_coeff_;
    std::vector<std::uint32_t> linear_slot_;  // per linear_feature_: its place in used_features_ (fast paths)
    std::vector<LinearLeaf> linear_leaf_;     // per global leaf: its constant and terms (linear forests)
    // set_linear_bounds: per feature (general path) and per used feature's slot (fast paths); empty: none
    std::vector<float> linear_low_, linear_high_;
    std::vector<float> slot_low_, slot_high_;
    std::vector<std::uint32_t> cat_ranges_;  // pairs: begin, words into cat_bits_
    std::vector<std::uint32_t> cat_bits_;
};

}  // namespace itercast::predict
