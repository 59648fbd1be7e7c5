#include "predict/unique_rows.hpp"

#include <cstring>

namespace itercast::predict {
namespace {

std::uint64_t hash_bytes(const unsigned char* p, std::size_t n) {
    // 64-bit multiply-mix over 8-byte words, then the tail; rows are short (~1 KB).
    std::uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 32;
    return h;
}

}  // namespace

UniqueRows unique_rows(const void* data, std::size_t rows, std::size_t row_bytes, std::size_t stride_bytes) {
    UniqueRows result;
    result.inverse.resize(rows);
    std::size_t capacity = 16;
    while (capacity < 2 * rows) capacity *= 2;
    std::vector<std::int64_t> table(capacity, -1);  // slot -> distinct index
    std::vector<std::uint64_t> hashes;
    const auto* base = static_cast<const unsigned char*>(data);
    for (std::size_t r = 0; r < rows; ++r) {
        const unsigned char* row = base + r * stride_bytes;
        const std::uint64_t h = hash_bytes(row, row_bytes);
        std::size_t slot = h & (capacity - 1);
        for (;;) {
            const std::int64_t u = table[slot];
            if (u < 0) {
                table[slot] = static_cast<std::int64_t>(result.first.size());
                result.inverse[r] = static_cast<std::int64_t>(result.first.size());
                result.first.push_back(static_cast<std::int64_t>(r));
                hashes.push_back(h);
                break;
            }
            const auto ui = static_cast<std::size_t>(u);
            if (hashes[ui] == h &&
                std::memcmp(base + static_cast<std::size_t>(result.first[ui]) * stride_bytes, row, row_bytes) == 0) {
                result.inverse[r] = u;
                break;
            }
            slot = (slot + 1) & (capacity - 1);
        }
    }
    return result;
}

}  // namespace itercast::predict
