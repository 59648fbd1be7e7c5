#pragma once
// Finds where one JSON value ends in a byte stream that arrives in pieces of
// any size. Used for the rare values that straddle a chunk boundary and for
// top-level metadata; the common case parses events in place.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itercast::trace {

class ValueSplitter {
public:
    enum class Status { kNeedMore, kDone, kMalformed };

    void reset();
    // Scans `data`; sets `consumed` to the bytes that belong to the value.
    // A scalar ends before its delimiter, which is not consumed.
    Status scan(const char* data, size_t size, size_t& consumed);

private:
    enum class Kind { kNone, kString, kContainer, kScalar };
    Status scan_string_byte(char c);

    Kind kind_ = Kind::kNone;
    std::vector<char> stack_;
    bool in_string_ = false;
    bool escape_ = false;
};

}  // namespace itercast::trace
