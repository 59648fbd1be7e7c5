#include "features/timeline_windows.hpp"

namespace itercast::features {

void window_timeline(const timeline::TimelineBuilder& timeline, WindowBuilder& windows) {
    const size_t width = timeline::feature_count();
    const auto& ops = timeline.ops();
    const auto& iterations = timeline.iterations();
    size_t expected = 0;
    for (const auto& it : iterations) expected += it.op_count / static_cast<size_t>(windows.config().stride) + 1;
    windows.reserve(expected);
    for (size_t it = 0; it < iterations.size(); ++it) {
        windows.begin_iteration(static_cast<int64_t>(it));
        const uint32_t end = iterations[it].first_op + iterations[it].op_count;
        for (uint32_t i = iterations[it].first_op; i < end; ++i) {
            const timeline::OpRecord& op = ops[i];
            OpRow row;
            row.features = timeline.features().data() + static_cast<size_t>(i) * width;
            row.op_class = static_cast<int>(op.op_class);
            row.phase = static_cast<int>(op.phase);
            row.flops = op.flops;
            row.bytes = op.bytes;
            row.duration = static_cast<double>(op.duration);
            row.gap = static_cast<double>(op.gap);
            windows.push(row);
        }
        windows.end_iteration();
    }
}

}  // namespace itercast::features
