#pragma once
// Sliding windows over an iteration's op sequence (ETS: width 12, stride 3),
// built incrementally: ops are pushed one at a time and a window is emitted
// as soon as it is known to be complete. Memory holds the last width+1 ops.
#include <cstdint>
#include <string>
#include <vector>

namespace itercast::features {

struct WindowConfig {
    int width = 12;
    int stride = 3;
    std::vector<float> extra;  // constant columns appended to every window (hardware descriptor)
};

// One op as the window builder sees it.
struct OpRow {
    const float* features = nullptr;  // op_feature_width floats
    int op_class = 0;
    int phase = 0;
    double flops = 0, bytes = 0;
    double duration = 0, gap = 0;  // labels, in ns
};

// Per window, in the row of `x`: width blocks of [is_op, op features...] (a
// padding block is all zeros, is_op included, so it can never look like an
// op), then the aggregates below, then `extra`.
class WindowBuilder {
public:
    static constexpr int kClassCount = 16;
    static constexpr int kAggregateCount = kClassCount + 3 + 2 + 3;

    WindowBuilder(WindowConfig config, size_t op_feature_width);

    // Sizes the outputs for about this many more windows (avoids regrowth copies).
    void reserve(size_t windows);
    void begin_iteration(int64_t iteration);
    void push(const OpRow& op);
    void end_iteration();

    size_t row_width() const { return row_width_; }
    size_t windows() const { return index_.size() / 3; }
    const WindowConfig& config() const { return config_; }
    // Names of the columns of a window row.
    std::vector<std::string> column_names(const std::vector<std::string>& op_feature_names) const;

    // Outputs, appended window by window (row-major).
    std::vector<float> x;         // windows x row_width
    std::vector<double> y;        // windows x width x 2: (duration, gap) per position, 0 for padding
    std::vector<double> y_sum;    // windows: sum of duration + gap over the window's ops
    std::vector<int64_t> index_;  // windows x 3: (iteration, first op position, ops in window)

private:
    void emit(int64_t start, int64_t count);
    // The ring slot of an op position: the last width+1 ops are kept.
    size_t slot_of(int64_t position) const { return static_cast<size_t>(position) % ring_.size(); }

    WindowConfig config_;
    size_t op_width_;
    size_t row_width_;
    int64_t iteration_ = -1;
    int64_t pushed_ = 0;       // ops pushed in this iteration
    int64_t next_start_ = 0;   // start of the next window to emit
    std::vector<OpRow> ring_;           // the last width+1 ops (features pointers unused)
    std::vector<float> ring_features_;  // their features, slot by slot
};

}  // namespace itercast::features
