#pragma once
// Model rows from window rows: one row per (window, position) pair, the op at that
// position seen from that window. Prediction builds one row per op of an iteration
// every step, so this is written once, into the caller's buffer, with no temporaries.
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace itercast::predict {

// Where things are in a window row and in an op's feature block; schema_row_layout() is the one the
// feature schema lays out (python/itercast/predict/rows.py reads it from there).
struct RowLayout {
    std::size_t op_features = 0;  // F: floats per op block after its is_op flag
    std::size_t aggregates = 0;   // window aggregates right after the width op blocks
    std::size_t class_begin = 0;  // the op class one-hot: op features [class_begin, class_end)
    std::size_t class_end = 0;
    std::size_t log_flops = 0;    // op feature indices
    std::size_t log_bytes = 0;
    std::size_t optimizer_phase = 0;  // 1 for an op of the optimizer phase
    std::size_t log_nested_ops = 0;   // log(1 + framework ops recorded inside the op)

    // The names of a row's columns after the op's features and its window's aggregates.
    static constexpr std::array<const char*, 4> kNeighbourFeatureNames = {"is_op", "class", "log_flops",
                                                                          "log_bytes"};
    static constexpr std::array<const char*, 3> kPositionColumnNames = {"position", "window_ops",
                                                                        "relative_position"};
    static constexpr std::array<const char*, 3> kContextColumnNames = {  // IterationTotals::context
        "iteration.log_bytes", "iteration.log_flops", "iteration.log_optimizer_bytes"};
    static constexpr std::size_t kNeighbourFeatures = kNeighbourFeatureNames.size();
    static constexpr std::size_t kPositionColumns = kPositionColumnNames.size();
    static constexpr std::size_t kContextColumns = kContextColumnNames.size();
    std::size_t columns() const {
        return op_features + aggregates + 2 * kNeighbourFeatures + kPositionColumns + kContextColumns;
    }
};

class RowsError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// The layout of the feature schema (timeline::feature_columns() and the window aggregates), found by
// column name. Throws std::logic_error if the schema lacks a column rows read, or splits the class one-hot.
const RowLayout& schema_row_layout();

struct WindowArrays {
    const float* x = nullptr;             // windows x row_width
    std::size_t row_width = 0;
    const std::int64_t* index = nullptr;  // windows x 3: (iteration, first op, ops in window)
    std::size_t windows = 0;
    std::size_t width = 0;
};

// An iteration's totals over its ops, each counted once.
struct IterationTotals {
    // log(1 + sum) of the ops' bytes, their FLOPs, and the bytes of optimizer-phase ops (sums in
    // double, in op order; a negative sum, only from made-up features, counts as 0)
    float context[RowLayout::kContextColumns] = {0, 0, 0};
    double recorded_ops = 0;  // each op and the framework ops nested in it
};

// The totals of the ops at these (window, position) pairs, which must name each op of one iteration once.
// Throws RowsError for a layout that does not fit the windows or a pair outside them.
IterationTotals iteration_totals(const WindowArrays& windows, const RowLayout& layout, const std::int64_t* window,
                                 const std::int64_t* position, std::size_t pairs);

// For each pair i, writes row i of `out` (layout.columns() floats): the op's own features, its
// window's aggregates, the (is_op, class, log_flops, log_bytes) view of the ops before and after
// it in the window (zeros at the window's edges), its position, the window's op count,
// position / count, and `context` (the iteration's IterationTotals::context).
// Throws RowsError for a layout that does not fit the windows or a pair outside them.
void op_rows(const WindowArrays& windows, const RowLayout& layout, const std::int64_t* window,
             const std::int64_t* position, std::size_t pairs, const float* context, float* out);

// For one iteration's windows in order (window k starts at op k * stride; every window but the last
// holds `width` ops), each op's covering window where it sits nearest the middle of the window's
// ops (the earlier window on a tie) and its position there: window[i], position[i] for op i, for
// every op of the iteration (the last window's start + count of them).
// Throws RowsError for windows that are not so laid out.
void central_pairs(const WindowArrays& windows, std::size_t stride, std::int64_t* window, std::int64_t* position);

// Whether these are one iteration's windows in order, as central_pairs needs them (false for none).
bool windows_in_order(const WindowArrays& windows, std::size_t stride);

// Ops of the iteration whose windows in order these are (0 if there are none).
std::size_t ops_in_order(const WindowArrays& windows);

}  // namespace itercast::predict
