#pragma once
// Low-level JSON reading over one contiguous buffer. Every read is bounds
// checked: running off the end throws NeedMore, so a caller can retry once
// more bytes have arrived. Malformed input throws ParseError.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "trace/parse_error.hpp"

namespace itercast::trace {

struct NeedMore {};

// A decimal number token: value = mantissa * 10^exponent (exactly, unless
// more than 38 significant digits were given, then `inexact_tail` is set).
struct Decimal {
    bool negative = false;
    unsigned __int128 mantissa = 0;
    int exponent = 0;
    bool inexact_tail = false;
};

enum class ScaleResult { kExact, kRounded, kOverflow };

// mantissa * 10^(exponent + scale) to int64, rounding half to even.
ScaleResult scale_decimal(const Decimal& number, int scale, int64_t& out);

// Appends the unescaped form of the JSON string body `raw` (no quotes) to `out`.
// Returns false on an invalid escape.
bool unescape_json_string(std::string_view raw, std::string& out);

inline bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

class Cursor {
public:
    Cursor(const char* begin, const char* end, int64_t base_offset)
        : p(begin), end(end), begin_(begin), base_offset_(base_offset) {}

    const char* p;
    const char* end;

    int64_t offset_of(const char* at) const { return base_offset_ + (at - begin_); }
    int64_t offset() const { return offset_of(p); }

    [[noreturn]] void fail(const std::string& message) const { fail_at(p, message); }
    [[noreturn]] void fail_at(const char* at, const std::string& message) const;

    // Next non-space character, left unconsumed.
    char peek() {
        while (p < end && is_json_space(*p)) ++p;
        if (p == end) throw NeedMore{};
        return *p;
    }

    void expect(char wanted, const char* what) {
        if (peek() != wanted) fail(std::string("expected ") + what);
        ++p;
    }

    // At an opening quote: returns the raw body and moves past the closing quote.
    std::string_view string_body(bool& has_escape);
    // At any value: moves past it. Containers are checked for matching brackets.
    void skip_value();
    // At a number: reads it exactly.
    Decimal number();

private:
    void skip_container();
    void skip_scalar();

    const char* begin_;
    int64_t base_offset_;
};

std::string excerpt_around(const char* begin, const char* end, const char* at);

}  // namespace itercast::trace
