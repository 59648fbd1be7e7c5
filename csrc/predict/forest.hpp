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

#include "predict/forest_layouts.hpp"

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
    int num_trees() const { return static_cast<int>(tree_.trees()); }
    int num_nodes() const { return static_cast<int>(tree_.nodes.size()); }
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
    bool linear_bounded() const { return linear_.bounded(); }
    const std::vector<float>& linear_low() const { return linear_.low; }  // empty until set
    const std::vector<float>& linear_high() const { return linear_.high; }

    // Raw scores (LightGBM's raw_score=True: the sum over trees, never averaged) of `rows` float32 rows, `row_stride` floats apart; out[i] for row i.
    // If `select` is not null, scores rows select[0..rows) of x instead (out[i] for row select[i]).
    // `threads` > 1 splits the rows between that many std::threads when they are many.
    void predict(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                 const std::int64_t* select = nullptr, int threads = 1) const;

private:
    // The fast paths' layouts from the parsed trees and linear terms (after parse()).
    void build_layouts();
    void predict_block(const float* x, std::size_t rows, std::size_t row_stride, double* out,
                       const std::int64_t* select) const;
    // Scores one group of rows copied feature-major into `transposed` (kWideGroup rows when `wide`,
    // kGroup otherwise) into sum[0, group).
    void score_group(bool wide, const float* transposed, std::uint16_t* masks, std::int32_t* reached,
                     double* widened, double* sum) const;

    int num_features_ = 0;
    std::string objective_;
    bool average_output_ = false;
    bool has_categorical_ = false;
    bool has_linear_ = false;
    bool has_special_ = false;  // any node needing more than `x <= threshold` on non-NaN rows
    // parse() (forest_text.cpp) fills these two; build_layouts() the rest
    TreeLayout tree_;
    LinearLayout linear_;
    FeatureSlots slots_;
    FastLayout fast_;
    BitLayout bits_;
};

}  // namespace itercast::predict
