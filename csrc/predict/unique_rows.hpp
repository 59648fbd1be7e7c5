#pragma once
// Distinct rows of a row-major matrix, by their bytes: rows equal byte for byte
// score the same, so a model need only see each once.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itercast::predict {

struct UniqueRows {
    std::vector<std::int64_t> first;    // per distinct row, in order of first appearance: its first row
    std::vector<std::int64_t> inverse;  // per row: index into first
};

UniqueRows unique_rows(const void* data, std::size_t rows, std::size_t row_bytes, std::size_t stride_bytes);

}  // namespace itercast::predict
