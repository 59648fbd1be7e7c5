#pragma once
// Feeds a finished timeline's iterations, op by op, to a window builder.
#include "features/windows.hpp"
#include "timeline/timeline.hpp"

namespace itercast::features {

void window_timeline(const timeline::TimelineBuilder& timeline, WindowBuilder& windows);

}  // namespace itercast::features
