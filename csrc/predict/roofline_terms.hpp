#pragma once
// What the roofline prior (python/itercast/predict/roofline.py) reads from each model row: the op's
// (class, phase) group and its FLOPs and bytes, from the row's one-hot and log(1 + v) columns.
#include <cstddef>
#include <cstdint>
#include <optional>

namespace itercast::predict {

struct RooflineColumns {
    std::size_t class_begin = 0, class_end = 0;  // the op class one-hot: columns [class_begin, class_end)
    std::size_t phase_begin = 0, phase_end = 0;  // the phase one-hot
    std::size_t log_flops = 0, log_bytes = 0;
    // when set, an op's bytes are at least its output bytes (autograd nodes the trace gives no
    // operands for have 0 in log_bytes although they write a whole tensor)
    std::optional<std::size_t> log_output_bytes;
    std::size_t groups() const { return (class_end - class_begin) * (phase_end - phase_begin); }
};

// For each of `rows` rows (`stride` floats apart): group[i] = class index x phases + phase index
// (each index the one-hot's dot product with 0, 1, 2, ...; clipped to 0..groups - 1), and the
// FLOPs and bytes the log columns stand for (bytes at least the output bytes, with log_output_bytes).
void roofline_terms(const float* x, std::size_t rows, std::size_t stride, const RooflineColumns& columns,
                    std::int64_t* group, double* flops, double* bytes);

}  // namespace itercast::predict
