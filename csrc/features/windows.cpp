#include "features/windows.hpp"

#include <cmath>
#include <stdexcept>

namespace itercast::features {

namespace {
const char* const kPhaseNames[] = {"forward", "backward", "optimizer"};

float log1p_feature(double value) { return static_cast<float>(std::log1p(value > 0 ? value : 0)); }
}  // namespace

WindowBuilder::WindowBuilder(WindowConfig config, size_t op_feature_width)
    : config_(std::move(config)), op_width_(op_feature_width) {
    if (config_.width < 1 || config_.stride < 1 || config_.stride > config_.width)
        throw std::invalid_argument("windows need width >= 1 and 1 <= stride <= width");
    row_width_ = static_cast<size_t>(config_.width) * (op_width_ + 1) + kAggregateCount + config_.extra.size();
    ring_.resize(static_cast<size_t>(config_.width) + 1);
    ring_features_.resize(ring_.size() * op_width_);
}

void WindowBuilder::reserve(size_t more) {
    x.reserve(x.size() + more * row_width_);
    y.reserve(y.size() + more * static_cast<size_t>(config_.width) * 2);
    y_sum.reserve(y_sum.size() + more);
    index_.reserve(index_.size() + more * 3);
}

std::vector<std::string> WindowBuilder::column_names(const std::vector<std::string>& op_feature_names) const {
    std::vector<std::string> names;
    names.reserve(row_width_);
    for (int p = 0; p < config_.width; ++p) {
        const std::string prefix = "w" + std::to_string(p) + ".";
        names.push_back(prefix + "is_op");
        for (const auto& name : op_feature_names) names.push_back(prefix + name);
    }
    for (int c = 0; c < kClassCount; ++c) names.push_back("agg.class_count" + std::to_string(c));
    for (const char* phase : kPhaseNames) names.push_back(std::string("agg.fraction_") + phase);
    names.push_back("agg.log_flops");
    names.push_back("agg.log_bytes");
    names.push_back("agg.log_start");
    names.push_back("agg.is_first");
    names.push_back("agg.ops");
    for (size_t i = 0; i < config_.extra.size(); ++i) names.push_back("extra" + std::to_string(i));
    return names;
}

void WindowBuilder::begin_iteration(int64_t iteration) {
    iteration_ = iteration;
    pushed_ = 0;
    next_start_ = 0;
}

void WindowBuilder::push(const OpRow& op) {
    const size_t slot = slot_of(pushed_);
    ring_[slot] = op;
    std::copy(op.features, op.features + op_width_, ring_features_.begin() + static_cast<ptrdiff_t>(slot * op_width_));
    ++pushed_;
    // A window is complete once an op beyond it exists; the last one waits for end_iteration.
    if (next_start_ + config_.width < pushed_) {
        emit(next_start_, config_.width);
        next_start_ += config_.stride;
    }
}

void WindowBuilder::end_iteration() {
    if (pushed_ > next_start_) emit(next_start_, std::min<int64_t>(config_.width, pushed_ - next_start_));
    pushed_ = next_start_ = 0;
}

void WindowBuilder::emit(int64_t start, int64_t count) {
    const size_t base = x.size();
    x.resize(base + row_width_, 0.0f);
    float* row = x.data() + base;
    const size_t y_base = y.size();
    y.resize(y_base + static_cast<size_t>(config_.width) * 2, 0.0);
    double window_sum = 0, flops = 0, bytes = 0;
    float* aggregates = row + static_cast<size_t>(config_.width) * (op_width_ + 1);
    for (int64_t k = 0; k < count; ++k) {
        const size_t slot = slot_of(start + k);
        const OpRow& op = ring_[slot];
        const float* features = ring_features_.data() + slot * op_width_;
        float* block = row + static_cast<size_t>(k) * (op_width_ + 1);
        block[0] = 1.0f;
        std::copy(features, features + op_width_, block + 1);
        y[y_base + static_cast<size_t>(k) * 2] = op.duration;
        y[y_base + static_cast<size_t>(k) * 2 + 1] = op.gap;
        window_sum += op.duration + op.gap;
        flops += op.flops;
        bytes += op.bytes;
        if (op.op_class >= 0 && op.op_class < kClassCount) aggregates[op.op_class] += 1;
        if (op.phase >= 0 && op.phase < 3) aggregates[kClassCount + op.phase] += 1.0f / static_cast<float>(count);
    }
    float* tail = aggregates + kClassCount + 3;
    tail[0] = log1p_feature(flops);
    tail[1] = log1p_feature(bytes);
    tail[2] = log1p_feature(static_cast<double>(start));
    tail[3] = start == 0 ? 1.0f : 0.0f;
    tail[4] = static_cast<float>(count);
    std::copy(config_.extra.begin(), config_.extra.end(), tail + 5);
    y_sum.push_back(window_sum);
    index_.insert(index_.end(), {iteration_, start, count});
}

}  // namespace itercast::features
