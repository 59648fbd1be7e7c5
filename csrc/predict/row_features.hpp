#pragma once
// Reading op features as the feature schema stores them: one-hot blocks and log(1 + v) values.
#include <cmath>
#include <cstddef>

namespace itercast::predict {

// The index of the hot column of the one-hot at features[begin, end): its dot product with 0, 1, 2, ...
// in float (0 for an all-zero block), as numpy's `one_hot @ arange(n, dtype=float32)` gives it.
inline float hot_index(const float* features, std::size_t begin, std::size_t end) {
    float hot = 0.0f;
    for (std::size_t c = begin; c < end; ++c) hot += features[c] * static_cast<float>(c - begin);
    return hot;
}

// The count or amount a log(1 + v) feature stands for. exp - 1 rather than expm1 (2.4x its cost, and
// several per op in every prediction): the two differ only for v far below 1, and v is a count of
// bytes, FLOPs or ops, 0 or at least 1.
inline double from_log1p(float feature) { return std::exp(static_cast<double>(feature)) - 1.0; }

}  // namespace itercast::predict
