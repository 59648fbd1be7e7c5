#include "trace/json_cursor.hpp"

#include <vector>

namespace itercast::trace {

namespace {

constexpr int kMaxDigits = 38;  // significant digits an unsigned __int128 holds exactly
constexpr size_t kExcerptRadius = 24;

unsigned __int128 pow10_u128(int n) {
    unsigned __int128 value = 1;
    while (n-- > 0) value *= 10;
    return value;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool read_hex4(const char* p, const char* end, uint32_t& out) {
    if (end - p < 4) return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
        const int digit = hex_value(p[i]);
        if (digit < 0) return false;
        out = out * 16 + static_cast<uint32_t>(digit);
    }
    return true;
}

// Encodes a code point as UTF-8; lone surrogates are encoded as 3 bytes
// (WTF-8) so that Python's 'surrogatepass' gives the same str as json.loads.
void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

}  // namespace

ScaleResult scale_decimal(const Decimal& number, int scale, int64_t& out) {
    const int exponent = number.exponent + scale;
    unsigned __int128 magnitude = number.mantissa;
    bool rounded = number.inexact_tail;
    if (magnitude == 0) {
        out = 0;
        return rounded ? ScaleResult::kRounded : ScaleResult::kExact;
    }
    if (exponent >= 0) {
        if (number.inexact_tail || exponent > kMaxDigits) return ScaleResult::kOverflow;
        const unsigned __int128 factor = pow10_u128(exponent);
        if (magnitude > (~static_cast<unsigned __int128>(0)) / factor) return ScaleResult::kOverflow;
        magnitude *= factor;
    } else if (-exponent > kMaxDigits) {
        magnitude = 0;  // below 0.01: rounds to zero
        rounded = true;
    } else {
        const unsigned __int128 divisor = pow10_u128(-exponent);
        const unsigned __int128 remainder = magnitude % divisor;
        magnitude /= divisor;
        if (remainder != 0) rounded = true;
        const unsigned __int128 twice = remainder * 2;
        const bool above_half = twice > divisor || (twice == divisor && number.inexact_tail);
        const bool exact_half = twice == divisor && !number.inexact_tail;
        if (above_half || (exact_half && (magnitude & 1))) ++magnitude;
    }
    const unsigned __int128 limit = static_cast<unsigned __int128>(INT64_MAX) + (number.negative ? 1 : 0);
    if (magnitude > limit) return ScaleResult::kOverflow;
    out = number.negative ? static_cast<int64_t>(-static_cast<__int128>(magnitude))
                          : static_cast<int64_t>(magnitude);
    return rounded ? ScaleResult::kRounded : ScaleResult::kExact;
}

bool unescape_json_string(std::string_view raw, std::string& out) {
    const char* p = raw.data();
    const char* end = p + raw.size();
    while (p < end) {
        const char* slash = static_cast<const char*>(std::memchr(p, '\\', static_cast<size_t>(end - p)));
        if (!slash) {
            out.append(p, end);
            return true;
        }
        out.append(p, slash);
        if (slash + 1 >= end) return false;
        const char kind = slash[1];
        p = slash + 2;
        switch (kind) {
            case '"': out.push_back('"'); break;
            case '\\': out.push_back('\\'); break;
            case '/': out.push_back('/'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'u': {
                uint32_t cp;
                if (!read_hex4(p, end, cp)) return false;
                p += 4;
                uint32_t low;
                const bool high_surrogate = cp >= 0xD800 && cp < 0xDC00;
                if (high_surrogate && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                    read_hex4(p + 2, end, low) && low >= 0xDC00 && low < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    p += 6;
                }
                append_utf8(cp, out);
                break;
            }
            default: return false;
        }
    }
    return true;
}

std::string excerpt_around(const char* begin, const char* end, const char* at) {
    if (at > end) at = end;
    const char* from = (at - begin > static_cast<ptrdiff_t>(kExcerptRadius)) ? at - kExcerptRadius : begin;
    const char* to = (end - at > static_cast<ptrdiff_t>(kExcerptRadius)) ? at + kExcerptRadius : end;
    return std::string(from, to);
}

void Cursor::fail_at(const char* at, const std::string& message) const {
    throw ParseError(message, offset_of(at), excerpt_around(begin_, end, at));
}

Decimal Cursor::number_general() {
    Decimal result;
    const char* start = p;
    if (p < end && *p == '-') {
        result.negative = true;
        ++p;
    }
    int digits = 0;
    int significant = 0;
    auto take_digit = [&](char c, bool fractional) {
        ++digits;
        if (significant == 0 && c == '0') {
            if (fractional) --result.exponent;
            return;
        }
        if (significant < kMaxDigits) {
            result.mantissa = result.mantissa * 10 + static_cast<unsigned>(c - '0');
            ++significant;
            if (fractional) --result.exponent;
        } else {
            if (c != '0') result.inexact_tail = true;
            if (!fractional) ++result.exponent;
        }
    };
    while (p < end && *p >= '0' && *p <= '9') take_digit(*p++, false);
    if (p < end && *p == '.') {
        ++p;
        const int before = digits;
        while (p < end && *p >= '0' && *p <= '9') take_digit(*p++, true);
        if (p < end && digits == before) fail("expected a digit after '.'");
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        ++p;
        bool negative_exp = false;
        if (p < end && (*p == '+' || *p == '-')) negative_exp = *p++ == '-';
        int exp = 0;
        const char* exp_start = p;
        while (p < end && *p >= '0' && *p <= '9') {
            if (exp < 100000) exp = exp * 10 + (*p - '0');
            ++p;
        }
        if (p < end && p == exp_start) fail("expected a digit in the exponent");
        result.exponent += negative_exp ? -exp : exp;
    }
    if (p == end) throw NeedMore{};  // the number may go on in the next chunk
    if (digits == 0) fail_at(start, "expected a number");
    return result;
}

}  // namespace itercast::trace
