#include "predict/op_rows.hpp"

#include "predict/row_features.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace itercast::predict {
namespace {

void check_layout(const WindowArrays& w, const RowLayout& layout) {
    const std::size_t blocks = w.width * (layout.op_features + 1);
    if (w.width == 0) throw RowsError("windows of width 0");
    if (blocks + layout.aggregates > w.row_width) {
        throw RowsError("window rows of " + std::to_string(w.row_width) + " floats; the layout reads " +
                        std::to_string(blocks + layout.aggregates) + " (" + std::to_string(w.width) + " blocks of " +
                        std::to_string(layout.op_features + 1) + " and " + std::to_string(layout.aggregates) +
                        " aggregates)");
    }
    if (layout.class_begin > layout.class_end || layout.class_end > layout.op_features ||
        layout.log_flops >= layout.op_features || layout.log_bytes >= layout.op_features ||
        layout.optimizer_phase >= layout.op_features || layout.log_nested_ops >= layout.op_features) {
        throw RowsError("row layout: an op feature index is outside the " + std::to_string(layout.op_features) +
                        " op features");
    }
}

void check_pair(const WindowArrays& w, std::size_t i, std::int64_t window, std::int64_t position) {
    if (window < 0 || static_cast<std::size_t>(window) >= w.windows) {
        throw RowsError("pair " + std::to_string(i) + ": window " + std::to_string(window) + " outside 0.." +
                        std::to_string(w.windows));
    }
    const std::int64_t count = w.index[3 * static_cast<std::size_t>(window) + 2];
    if (position < 0 || position >= count || static_cast<std::size_t>(position) >= w.width) {
        throw RowsError("pair " + std::to_string(i) + ": position " + std::to_string(position) + " of window " +
                        std::to_string(window) + ", which holds " + std::to_string(count) + " ops");
    }
}

// The neighbour view of the op block at `block` (is_op first): is_op, class index, log FLOPs, log bytes.
void neighbour_view(const float* block, const RowLayout& layout, float* out) {
    const float* features = block + 1;
    out[0] = block[0];
    out[1] = hot_index(features, layout.class_begin, layout.class_end);
    out[2] = features[layout.log_flops];
    out[3] = features[layout.log_bytes];
}

void check_pairs(const WindowArrays& w, const RowLayout& layout, const std::int64_t* window,
                 const std::int64_t* position, std::size_t pairs) {
    check_layout(w, layout);
    for (std::size_t i = 0; i < pairs; ++i) check_pair(w, i, window[i], position[i]);
}

// The op features of the op at a checked (window, position) pair.
const float* op_features(const WindowArrays& w, const RowLayout& layout, std::int64_t window, std::int64_t position) {
    const std::size_t block = layout.op_features + 1;
    return w.x + static_cast<std::size_t>(window) * w.row_width + static_cast<std::size_t>(position) * block + 1;
}

float log1p_of_total(double total) { return static_cast<float>(std::log1p(std::max(total, 0.0))); }


}  // namespace

IterationTotals iteration_totals(const WindowArrays& w, const RowLayout& layout, const std::int64_t* window,
                                 const std::int64_t* position, std::size_t pairs) {
    check_pairs(w, layout, window, position, pairs);
    // The four features are gathered first, then summed: the gathers (two cache lines an op, spread over
    // the windows) overlap when no exp() sits between them.
    std::vector<float> gathered(4 * pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
        const float* op = op_features(w, layout, window[i], position[i]);
        float* to = gathered.data() + 4 * i;
        to[0] = op[layout.log_bytes];
        to[1] = op[layout.log_flops];
        to[2] = op[layout.optimizer_phase];
        to[3] = op[layout.log_nested_ops];
    }
    double bytes = 0, flops = 0, optimizer_bytes = 0, recorded = 0;
    for (std::size_t i = 0; i < pairs; ++i) {
        const float* op = gathered.data() + 4 * i;
        const double op_bytes = from_log1p(op[0]);
        bytes += op_bytes;
        flops += from_log1p(op[1]);
        if (op[2] > 0.5f) optimizer_bytes += op_bytes;
        // nested-op counts are stored as float32 logs: rounded back to the count
        recorded += 1.0 + std::rint(from_log1p(op[3]));
    }
    IterationTotals totals;
    totals.context[0] = log1p_of_total(bytes);
    totals.context[1] = log1p_of_total(flops);
    totals.context[2] = log1p_of_total(optimizer_bytes);
    totals.recorded_ops = recorded;
    return totals;
}

void op_rows(const WindowArrays& w, const RowLayout& layout, const std::int64_t* window,
             const std::int64_t* position, std::size_t pairs, const float* context, float* out) {
    check_pairs(w, layout, window, position, pairs);
    const std::size_t out_stride = layout.columns();

    const std::size_t F = layout.op_features, block = F + 1, k = RowLayout::kNeighbourFeatures;
    for (std::size_t i = 0; i < pairs; ++i) {
        const auto win = static_cast<std::size_t>(window[i]);
        const std::int64_t p = position[i], count = w.index[3 * win + 2];
        const float* blocks = w.x + win * w.row_width;
        float* row = out + i * out_stride;
        std::memcpy(row, op_features(w, layout, window[i], p), F * sizeof(float));
        std::memcpy(row + F, blocks + w.width * block, layout.aggregates * sizeof(float));
        float* previous = row + F + layout.aggregates;
        float* next = previous + k;
        if (p > 0) {
            neighbour_view(blocks + static_cast<std::size_t>(p - 1) * block, layout, previous);
        } else {
            std::fill(previous, previous + k, 0.0f);
        }
        if (p + 1 < count) {
            neighbour_view(blocks + static_cast<std::size_t>(p + 1) * block, layout, next);
        } else {
            std::fill(next, next + k, 0.0f);
        }
        float* at = next + k;
        at[0] = static_cast<float>(p);
        at[1] = static_cast<float>(count);
        at[2] = static_cast<float>(static_cast<double>(p) / static_cast<double>(std::max<std::int64_t>(count, 1)));
        std::copy(context, context + RowLayout::kContextColumns, at + RowLayout::kPositionColumns);
    }
}

std::size_t ops_in_order(const WindowArrays& w) {
    if (w.windows == 0) return 0;
    const std::int64_t* last = w.index + 3 * (w.windows - 1);
    return static_cast<std::size_t>(std::max<std::int64_t>(0, last[1] + last[2]));
}

bool windows_in_order(const WindowArrays& w, std::size_t stride) {
    const auto width = static_cast<std::int64_t>(w.width), step = static_cast<std::int64_t>(stride);
    if (w.windows == 0 || step < 1 || step > width) return false;
    for (std::size_t k = 0; k < w.windows; ++k) {
        const std::int64_t* at = w.index + 3 * k;
        const bool full_or_last = at[2] == width || (k + 1 == w.windows && at[2] >= 1 && at[2] <= width);
        if (at[0] != w.index[0] || at[1] != static_cast<std::int64_t>(k) * step || !full_or_last) return false;
    }
    return true;
}

void central_pairs(const WindowArrays& w, std::size_t stride, std::int64_t* window, std::int64_t* position) {
    if (w.windows == 0) return;
    if (!windows_in_order(w, stride)) {
        throw RowsError("central_pairs: the windows are not one iteration's in order (window k starting at op "
                        "k * " + std::to_string(stride) + ", all but the last holding " + std::to_string(w.width) +
                        " ops)");
    }
    const auto width = static_cast<std::int64_t>(w.width), step = static_cast<std::int64_t>(stride);
    const auto ops = static_cast<std::int64_t>(ops_in_order(w));
    const auto last = static_cast<std::int64_t>(w.windows) - 1;
    for (std::int64_t i = 0; i < ops; ++i) {
        const std::int64_t lowest = std::max<std::int64_t>(0, (i - width + step) / step);  // ceil((i-width+1)/step)
        const std::int64_t highest = std::min(last, i / step);
        std::int64_t best = -1, best_off = 0;
        for (std::int64_t k = lowest; k <= highest; ++k) {
            const std::int64_t p = i - k * step, count = w.index[3 * k + 2];
            if (p >= count) continue;
            const std::int64_t off = std::abs(2 * p - (count - 1));
            if (best < 0 || off < best_off) best = k, best_off = off;
        }
        window[i] = best;
        position[i] = i - best * step;
    }
}

}  // namespace itercast::predict
