#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace itercast::trace {

// Malformed input. `offset` is the byte offset in the uncompressed stream.
class ParseError : public std::runtime_error {
public:
    ParseError(const std::string& message, int64_t offset, std::string excerpt, bool truncated = false)
        : std::runtime_error(message), offset(offset), excerpt(std::move(excerpt)), truncated(truncated) {}

    int64_t offset;
    std::string excerpt;
    bool truncated;
};

}  // namespace itercast::trace
