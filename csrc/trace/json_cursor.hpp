#pragma once
// Low-level JSON reading over one contiguous buffer. Every read is bounds
// checked: running off the end throws NeedMore, so a caller can retry once
// more bytes have arrived. Malformed input throws ParseError.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "trace/parse_error.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

inline bool is_scalar_char(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E';
}

inline bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// First non-space byte in [p, end), or end. Indentation runs are common.
inline const char* skip_space(const char* p, const char* end) {
    if (p < end && static_cast<unsigned char>(*p) > ' ') return p;
    if (end - p >= 2 && *p == ' ' && static_cast<unsigned char>(p[1]) > ' ') return p + 1;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' ');
    const __m128i newline = _mm_set1_epi8('\n');
    const __m128i carriage = _mm_set1_epi8('\r');
    const __m128i tab = _mm_set1_epi8('\t');
    while (end - p >= 16) {
        const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i is_space = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, space), _mm_cmpeq_epi8(block, newline)),
                                              _mm_or_si128(_mm_cmpeq_epi8(block, carriage), _mm_cmpeq_epi8(block, tab)));
        const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(is_space)) & 0xFFFFu;
        if (other) return p + __builtin_ctz(other);
        p += 16;
    }
#endif
    while (p < end && is_json_space(*p)) ++p;
    return p;
}

inline uint64_t load_u64(const char* p) {
    uint64_t value;
    std::memcpy(&value, p, 8);
    return value;
}

// SWAR digit parsing (little-endian): the value of 8 ASCII digits.
inline uint32_t eight_digits_value(uint64_t v) {
    v -= 0x3030303030303030ULL;
    v = v * 10 + (v >> 8);
    const uint64_t pairs = 0x000000FF000000FFULL;
    v = (((v & pairs) * (100 + (1000000ULL << 32))) + (((v >> 16) & pairs) * (1 + (10000ULL << 32)))) >> 32;
    return static_cast<uint32_t>(v);
}

// Number of leading bytes of v (little-endian) that are ASCII digits, 0 to 8.
// A carry out of a non-digit byte can only disturb the bytes after it.
inline unsigned leading_digit_count(uint64_t v) {
    const uint64_t high = 0xF0F0F0F0F0F0F0F0ULL, threes = 0x3030303030303030ULL;
    const uint64_t not_digit = ((v & high) ^ threes) | (((v + 0x0606060606060606ULL) & high) ^ threes);
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL;
    const uint64_t nonzero = (((not_digit & low7) + low7) | not_digit) & 0x8080808080808080ULL;
    return nonzero ? static_cast<unsigned>(__builtin_ctzll(nonzero)) >> 3 : 8;
}

// Appends the digits at q to mantissa (wrapping past 19 digits: callers check the count).
// The first two a digit at a time (most runs in a trace are that short: ids,
// "0.000"), then eight bytes at a time: a run of fewer than 8 digits is
// left-padded with '0's in the register.
inline const char* accumulate_digits(const char* q, const char* end, uint64_t& mantissa) {
    static constexpr uint64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    for (int i = 0; i < 2; ++i, ++q) {
        if (q == end || static_cast<unsigned>(*q - '0') >= 10) return q;
        mantissa = mantissa * 10 + static_cast<unsigned>(*q - '0');
    }
    while (end - q >= 8) {
        const uint64_t v = load_u64(q);
        const unsigned n = leading_digit_count(v);
        if (n == 8) {
            mantissa = mantissa * 100000000ULL + eight_digits_value(v);
            q += 8;
            continue;
        }
        if (n != 0) {
            const uint64_t padded = (v << (64 - 8 * n)) | (0x3030303030303030ULL >> (8 * n));
            mantissa = mantissa * kPow10[n] + eight_digits_value(padded);
            q += n;
        }
        return q;
    }
    while (q < end && static_cast<unsigned>(*q - '0') < 10) mantissa = mantissa * 10 + static_cast<unsigned>(*q++ - '0');
    return q;
}

// [-]digits[.digits] with at most 18 digits and no exponent: exact in uint64.
struct PlainNumber {
    uint64_t digits = 0;
    ptrdiff_t fraction_digits = 0;
    bool negative = false;
};

inline bool read_plain_number(const char*& p, const char* end, PlainNumber& out) {
    const char* q = p;
    out.negative = *q == '-';
    q += out.negative;
    const char* integer_start = q;
    q = accumulate_digits(q, end, out.digits);
    const ptrdiff_t integer_digits = q - integer_start;
    if (q < end && *q == '.') {
        const char* fraction_start = ++q;
        q = accumulate_digits(q, end, out.digits);
        out.fraction_digits = q - fraction_start;
        if (out.fraction_digits == 0) return false;
    }
    if (integer_digits == 0 || integer_digits + out.fraction_digits > 18 || q >= end || *q == 'e' || *q == 'E')
        return false;
    p = q;
    return true;
}

// The plain number at p as microseconds with up to 3 decimals, in nanoseconds;
// p past it. false (p unmoved) where the general reader must decide
// (rounding, overflow, exponents, long numbers, not a number).
inline bool read_plain_time_ns(const char*& p, const char* end, int64_t& out) {
    static constexpr int64_t kNanosPerUnit[] = {1000, 100, 10, 1};  // by fraction digits
    const char* q = p;
    PlainNumber number;
    if (!read_plain_number(q, end, number) || number.fraction_digits > 3) return false;
    int64_t value;
    if (__builtin_mul_overflow(static_cast<int64_t>(number.digits), kNanosPerUnit[number.fraction_digits], &value))
        return false;
    out = number.negative ? -value : value;
    p = q;
    return true;
}

// The plain integer at p; p past it. false (p unmoved) for anything else (fractions too).
inline bool read_plain_int(const char*& p, const char* end, int64_t& out) {
    const char* q = p;
    PlainNumber number;
    if (!read_plain_number(q, end, number) || number.fraction_digits != 0) return false;
    const auto value = static_cast<int64_t>(number.digits);
    out = number.negative ? -value : value;
    p = q;
    return true;
}

// A one-character string without an escape ("X", as ph is) at p, 3 bytes
// readable: its character, and p past it; false (p unmoved) otherwise.
inline bool read_one_char_string(const char*& p, uint8_t& out) {
    if (p[0] != '"' || p[2] != '"' || p[1] == '\\' || p[1] == '"') return false;
    out = static_cast<uint8_t>(p[1]);
    p += 3;
    return true;
}

#if defined(__SSE2__)
// Bit i set where p[i] is '"' or '\\', for the 16 bytes at p (all readable).
inline unsigned quote_or_backslash_mask(const char* p) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return static_cast<unsigned>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')), _mm_cmpeq_epi8(block, _mm_set1_epi8('\\')))));
}
#endif

// First '"' or '\\' in [p, end), or end. Strings are most of a trace's bytes.
inline const char* find_quote_or_backslash(const char* p, const char* end) {
#if defined(__SSE2__)
    while (end - p >= 16) {
        if (const unsigned mask = quote_or_backslash_mask(p)) return p + __builtin_ctz(mask);
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\') ++p;
    return p;
}

// The body of a string without escapes at p ('"'), and p past its closing
// quote; false (p unmoved) at an escape or where the buffer ends first.
inline bool read_plain_string(const char*& p, const char* end, std::string_view& body) {
    const char* close = find_quote_or_backslash(p + 1, end);
    if (close == end || *close != '"') return false;
    body = std::string_view(p + 1, static_cast<size_t>(close - p - 1));
    p = close + 1;
    return true;
}

// First of '"', '{', '}', '[', ']' in [p, end), or end: what matters when skipping a container.
inline const char* find_structural(const char* p, const char* end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i open_brace = _mm_set1_epi8('{');
    const __m128i close_brace = _mm_set1_epi8('}');
    const __m128i open_bracket = _mm_set1_epi8('[');
    const __m128i close_bracket = _mm_set1_epi8(']');
    while (end - p >= 16) {
        const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i braces = _mm_or_si128(_mm_cmpeq_epi8(block, open_brace), _mm_cmpeq_epi8(block, close_brace));
        const __m128i brackets =
            _mm_or_si128(_mm_cmpeq_epi8(block, open_bracket), _mm_cmpeq_epi8(block, close_bracket));
        const int mask =
            _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_or_si128(braces, brackets)));
        if (mask) return p + __builtin_ctz(static_cast<unsigned>(mask));
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '{' && *p != '}' && *p != '[' && *p != ']') ++p;
    return p;
}

#if defined(__SSE2__)
// Bit i: byte i of the 16 at p (all readable) is `wanted`.
inline unsigned bits_of(__m128i block, char wanted) {
    return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(wanted))));
}

// Bit i: an odd number of the bits at positions <= i are set (inside a string, given quote bits).
inline unsigned prefix_xor16(unsigned bits) {
    bits ^= bits << 1;
    bits ^= bits << 2;
    bits ^= bits << 4;
    bits ^= bits << 8;
    return bits & 0xFFFFu;
}

// The end of the container opening at p ('[' or '{'), 16 bytes at a time
// (shapes and type lists end within two), up to 256 bytes: past its closing
// bracket, or nullptr where skip_container must decide (a backslash, the
// other kind of bracket outside strings, under 16 readable bytes, a longer
// container). Brackets inside strings do not count.
inline const char* find_small_container_end(const char* p, const char* end) {
    const char open = *p;
    const char close = static_cast<char>(open + 2);  // '[' -> ']', '{' -> '}'
    const char other_open = static_cast<char>(open ^ 0x20), other_close = static_cast<char>(close ^ 0x20);
    int depth = 0;
    unsigned carried_string = 0;  // all ones while a string runs on from the previous block
    for (int block = 0; block < 16; ++block, p += 16) {
        if (end - p < 16) return nullptr;
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const unsigned outside = ~(prefix_xor16(bits_of(bytes, '"')) ^ carried_string) & 0xFFFFu;
        const unsigned opens = bits_of(bytes, open) & outside;
        const unsigned closes = bits_of(bytes, close) & outside;
        const unsigned unusual =
            bits_of(bytes, '\\') | ((bits_of(bytes, other_open) | bits_of(bytes, other_close)) & outside);
        for (unsigned marks = opens | closes; marks != 0; marks &= marks - 1) {
            const unsigned mark = marks & (~marks + 1);
            depth += (opens & mark) ? 1 : -1;
            if (depth == 0) return (unusual & (mark - 1)) ? nullptr : p + __builtin_ctz(mark) + 1;
        }
        if (unusual) return nullptr;
        carried_string = (outside >> 15) ? 0 : 0xFFFFu;
    }
    return nullptr;
}
#endif

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
        p = skip_space(p, end);
        if (p == end) throw NeedMore{};
        return *p;
    }

    // At a letter: moves past `literal` and returns true if it is next (NeedMore if it may be).
    bool take_literal(const char* literal) {
        const size_t size = std::strlen(literal);
        if (static_cast<size_t>(end - p) < size) {
            if (std::memcmp(p, literal, static_cast<size_t>(end - p)) == 0) throw NeedMore{};
            return false;
        }
        if (std::memcmp(p, literal, size) != 0) return false;
        p += size;
        return true;
    }

    void expect(char wanted, const char* what) {
        if (peek() != wanted) fail(std::string("expected ") + what);
        ++p;
    }

    // At an opening quote: returns the raw body and moves past the closing quote.
    std::string_view string_body(bool& has_escape) {
        const char* body = p + 1;
        const char* at = body;
        while (true) {
            at = find_quote_or_backslash(at, end);
            if (at == end) throw NeedMore{};
            if (*at == '"') {
                p = at + 1;
                return std::string_view(body, static_cast<size_t>(at - body));
            }
            has_escape = true;
            if (end - at < 2) throw NeedMore{};
            at += 2;
        }
    }

    // At any value: moves past it. Containers are checked for matching brackets.
    void skip_value() {
        const char c = peek();
        if (c == '"') {
            bool escaped = false;
            string_body(escaped);
        } else if (c == '{' || c == '[') {
            skip_container();
        } else {
            skip_scalar();
        }
    }

    // At a number: reads it exactly. Up to 19 digits without an exponent take
    // the fast path; anything else goes through the general one.
    Decimal number() {
        const char* q = p;
        Decimal result;
        if (q < end && *q == '-') {
            result.negative = true;
            ++q;
        }
        uint64_t mantissa = 0;
        const char* digits_start = q;
        q = accumulate_digits(q, end, mantissa);
        const auto int_digits = q - digits_start;
        long frac_digits = 0;
        if (q < end && *q == '.') {
            const char* frac_start = ++q;
            q = accumulate_digits(q, end, mantissa);
            frac_digits = q - frac_start;
        }
        if (q == end) throw NeedMore{};  // the number may go on in the next chunk
        if (*q == 'e' || *q == 'E' || int_digits + frac_digits > 19 || int_digits == 0 ||
            (frac_digits == 0 && q[-1] == '.'))
            return number_general();
        result.mantissa = mantissa;
        result.exponent = -static_cast<int>(frac_digits);
        p = q;
        return result;
    }

private:
    static constexpr int kMaxDepth = 256;

    Decimal number_general();

    void skip_scalar() {
        const char* start = p;
        while (p < end && is_scalar_char(*p)) ++p;
        if (p == end) throw NeedMore{};
        if (p == start) fail("expected a JSON value");
    }

    void skip_container() {
#if defined(__SSE2__)
        if (const char* after = find_small_container_end(p, end)) {
            p = after;
            return;
        }
#endif
        char stack[kMaxDepth];
        int depth = 0;
        while (true) {
            p = find_structural(p, end);
            if (p == end) throw NeedMore{};
            const char c = *p;
            if (c == '"') {
                bool escaped = false;
                string_body(escaped);
            } else if (c == '{' || c == '[') {
                if (depth == kMaxDepth) fail("JSON nested deeper than 256 levels");
                stack[depth++] = c;
                ++p;
            } else {
                if (depth == 0 || stack[depth - 1] != (c == '}' ? '{' : '[')) fail("mismatched bracket");
                ++p;
                if (--depth == 0) return;
            }
        }
    }

    const char* begin_;
    int64_t base_offset_;
};

// scale_decimal, with the common cases (already-integral values) inline.
inline ScaleResult scale_decimal_fast(const Decimal& number, int scale, int64_t& out) {
    const int exponent = number.exponent + scale;
    if (exponent >= 0 && exponent <= 18 && !number.inexact_tail && number.mantissa <= INT64_MAX) {
        static constexpr int64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
                                             1000000000, 10000000000, 100000000000, 1000000000000,
                                             10000000000000, 100000000000000, 1000000000000000,
                                             10000000000000000, 100000000000000000, 1000000000000000000};
        int64_t value;
        if (!__builtin_mul_overflow(static_cast<int64_t>(number.mantissa), kPow10[exponent], &value)) {
            out = number.negative ? -value : value;
            return ScaleResult::kExact;
        }
    }
    return scale_decimal(number, scale, out);
}

std::string excerpt_around(const char* begin, const char* end, const char* at);

}  // namespace itercast::trace
