#include "predict/roofline_terms.hpp"

#include "predict/row_features.hpp"

#include <algorithm>
#include <cmath>

namespace itercast::predict {

void roofline_terms(const float* x, std::size_t rows, std::size_t stride, const RooflineColumns& columns,
                    std::int64_t* group, double* flops, double* bytes) {
    const auto phases = static_cast<float>(columns.phase_end - columns.phase_begin);
    const double last = static_cast<double>(columns.groups()) - 1.0;
    for (std::size_t i = 0; i < rows; ++i) {
        const float* row = x + i * stride;
        const float index = hot_index(row, columns.class_begin, columns.class_end) * phases +
                            hot_index(row, columns.phase_begin, columns.phase_end);
        const double nearest = std::isnan(index) ? 0.0 : std::nearbyint(static_cast<double>(index));
        group[i] = static_cast<std::int64_t>(std::clamp(nearest, 0.0, last));
        flops[i] = from_log1p(row[columns.log_flops]);
        bytes[i] = from_log1p(row[columns.log_bytes]);
        if (columns.log_output_bytes) bytes[i] = std::max(bytes[i], from_log1p(row[*columns.log_output_bytes]));
    }
}

}  // namespace itercast::predict
