#include "trace/scanner.hpp"

#include <cstring>

namespace itercast::trace {

namespace {

constexpr size_t kMaxEventBytes = size_t{256} << 20;

// Constant-length compare, which the compiler turns into a few integer loads.
template <size_t N>
bool key_is(std::string_view key, const char (&literal)[N]) {
    return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

std::string_view read_key(Cursor& c, std::string& scratch) {
    if (c.peek() != '"') c.fail("expected a key string");
#if defined(__SSE2__)
    // Fast path, nearly every key: under 16 bytes, no escape, ':' right after it.
    if (c.end - c.p >= 18) {
        const char* body = c.p + 1;
        if (const unsigned mask = quote_or_backslash_mask(body)) {
            const unsigned length = static_cast<unsigned>(__builtin_ctz(mask));
            if (body[length] == '"' && body[length + 1] == ':') {
                c.p = body + length + 2;
                return std::string_view(body, length);
            }
        }
    }
#endif
    const char* at = c.p;
    bool escaped = false;
    std::string_view body = c.string_body(escaped);
    if (c.p < c.end && *c.p == ':') {
        ++c.p;  // the usual "key": with no space before the colon
    } else {
        c.expect(':', "':' after a key");
    }
    if (!escaped) return body;
    scratch.clear();
    if (!unescape_json_string(body, scratch)) c.fail_at(at, "invalid escape in key");
    return scratch;
}

// `last`: the field's previous id, which its next value often repeats (cat, names in a loop).
int32_t intern_string(Cursor& c, StringTable& strings, std::string& scratch, int32_t& last) {
    const char* at = c.p;
    bool escaped = false;
    std::string_view body = c.string_body(escaped);
    if (!escaped) return strings.intern_recent(body, last);
    scratch.clear();
    if (!unescape_json_string(body, scratch)) c.fail_at(at, "invalid escape in string");
    return strings.intern_recent(scratch, last);
}

// Interns the value's raw JSON text (shapes, type lists): parsed later, once per distinct text.
int32_t intern_raw(Cursor& c, StringTable& strings, int32_t& last) {
    c.peek();
    const char* start = c.p;
    c.skip_value();
    return strings.intern_recent(std::string_view(start, static_cast<size_t>(c.p - start)), last);
}

bool starts_number(char first) { return first == '-' || static_cast<unsigned>(first - '0') < 10; }

// Microsecond text -> integer nanoseconds, without a floating-point round trip.
int64_t read_time_ns(Cursor& c, const char* field) {
    const char first = c.peek();
    if (!starts_number(first)) {
        if (first == 'n' && c.take_literal("null")) return kMissing;
        c.fail(std::string(field) + " is not a number");
    }
    const char* at = c.p;
    const Decimal value = c.number();
    int64_t ns;
    if (scale_decimal_fast(value, 3, ns) == ScaleResult::kOverflow) c.fail_at(at, std::string(field) + " out of range");
    return ns;
}

// An integer field; any other JSON value (string, fraction, bool) leaves it missing.
int64_t read_int(Cursor& c) {
    if (!starts_number(c.peek())) {
        c.skip_value();
        return kMissing;
    }
    const Decimal value = c.number();
    int64_t out;
    return scale_decimal_fast(value, 0, out) == ScaleResult::kExact ? out : kMissing;
}

// pid, tid and stream are integers or strings in the wild.
int64_t read_int_or_string(Cursor& c, StringTable& strings, EventScratch& scratch, uint8_t& flags,
                           uint8_t string_flag) {
    if (c.peek() == '"') {
        flags |= string_flag;
        return intern_string(c, strings, scratch.text, scratch.last_id_string);
    }
    return read_int(c);
}

// [x, y, z] of non-negative integers, else left as -1.
void read_dim3(Cursor& c, int32_t& x, int32_t& y, int32_t& z) {
    c.peek();
    const char* start = c.p;
    c.skip_value();
    int64_t dims[3];
    int count = 0;
    const char* p = start;
    if (*p != '[') return;
    ++p;
    while (p < c.p) {
        while (is_json_space(*p)) ++p;
        if (*p == ']') break;
        if (count == 3 || *p < '0' || *p > '9') return;
        int64_t value = 0;
        while (*p >= '0' && *p <= '9' && value < (int64_t{1} << 31)) value = value * 10 + (*p++ - '0');
        if (value >= (int64_t{1} << 31)) return;
        dims[count++] = value;
        while (is_json_space(*p)) ++p;
        if (*p == ',') ++p;
    }
    if (count != 3) return;
    x = static_cast<int32_t>(dims[0]);
    y = static_cast<int32_t>(dims[1]);
    z = static_cast<int32_t>(dims[2]);
}

void parse_arg(std::string_view key, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    switch (key.size()) {
        case 3:
            if (key_is(key, "cid")) return void(e.correlation = read_int(c));
            break;
        case 4:
            if (key_is(key, "grid")) return read_dim3(c, e.grid_x, e.grid_y, e.grid_z);
            break;
        case 5:
            if (key_is(key, "block")) return read_dim3(c, e.block_x, e.block_y, e.block_z);
            if (key_is(key, "bytes")) return void(e.bytes = read_int(c));
            break;
        case 6:
            if (key_is(key, "stream"))
                return void(e.stream = read_int_or_string(c, strings, scratch, e.flags, kStreamIsString));
            if (key_is(key, "device")) return void(e.device = read_int(c));
            break;
        case 10:
            if (key_is(key, "Input Dims") || key_is(key, "Input dims"))
                return void(e.input_dims = intern_raw(c, strings, scratch.last_input_dims));
            if (key_is(key, "Input type"))
                return void(e.input_types = intern_raw(c, strings, scratch.last_input_types));
            break;
        case 11:
            if (key_is(key, "External id") || key_is(key, "external id")) return void(e.external_id = read_int(c));
            if (key_is(key, "correlation")) return void(e.correlation = read_int(c));
            break;
        case 13:
            if (key_is(key, "Fwd thread id")) return void(e.fwd_thread_id = read_int(c));
            break;
        case 15:
            if (key_is(key, "Sequence number")) return void(e.sequence_number = read_int(c));
            if (key_is(key, "Concrete Inputs"))
                return void(e.concrete_inputs = intern_raw(c, strings, scratch.last_concrete_inputs));
            break;
        default: break;
    }
    c.skip_value();
}

// Visits each "key": value of the object at c.p; `on_member` must consume the value.
template <class OnMember>
void for_each_member(Cursor& c, std::string& key_scratch, OnMember&& on_member) {
    c.expect('{', "'{'");
    if (c.peek() == '}') {
        ++c.p;
        return;
    }
    while (true) {
        const std::string_view key = read_key(c, key_scratch);
        on_member(key);
        const char next = c.peek();
        ++c.p;
        if (next == '}') return;
        if (next != ',') c.fail_at(c.p - 1, "expected ',' or '}' in an object");
    }
}

void parse_args(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    if (c.peek() != '{') return c.skip_value();
    for_each_member(c, scratch.key, [&](std::string_view key) { parse_arg(key, c, e, strings, scratch); });
}

uint8_t read_phase(Cursor& c, std::string& scratch) {
    if (c.peek() != '"') {
        c.skip_value();
        return 0;
    }
    const char* at = c.p;
    bool escaped = false;
    std::string_view body = c.string_body(escaped);
    if (escaped) {
        scratch.clear();
        if (!unescape_json_string(body, scratch)) c.fail_at(at, "invalid escape in ph");
        body = scratch;
    }
    return body.empty() ? 0 : static_cast<uint8_t>(body[0]);
}


void parse_event_general(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    for_each_member(c, scratch.key, [&](std::string_view key) {
        switch (key.size()) {
            case 2:
                if (key[0] == 'p' && key[1] == 'h') return void(e.ph = read_phase(c, scratch.text));
                if (key[0] == 't' && key[1] == 's') return void(e.ts_ns = read_time_ns(c, "ts"));
                break;
            case 3:
                if (key_is(key, "cat")) {
                    if (c.peek() == '"') return void(e.cat = intern_string(c, strings, scratch.text, scratch.last_cat));
                    break;
                }
                if (key_is(key, "dur")) return void(e.dur_ns = read_time_ns(c, "dur"));
                if (key_is(key, "pid")) return void(e.pid = read_int_or_string(c, strings, scratch, e.flags, kPidIsString));
                if (key_is(key, "tid")) return void(e.tid = read_int_or_string(c, strings, scratch, e.flags, kTidIsString));
                break;
            case 4:
                if (key_is(key, "name")) {
                    if (c.peek() == '"')
                        return void(e.name = intern_string(c, strings, scratch.text, scratch.last_name));
                    break;
                }
                if (key_is(key, "args")) return parse_args(c, e, strings, scratch);
                break;
            default: break;
        }
        c.skip_value();
    });
}

// ---------------------------------------------------------------------------
// Fast path for the usual shape of an event: plain keys under 16 bytes, plain
// numbers, strings without escapes. It reads with few checks and returns
// false at anything else (escapes in keys, exponents, long numbers, malformed
// or cut-off input), and the caller then parses the event again with the
// general readers above, which check every byte and word the errors. So on
// any input the two paths give the same event or the general path's error.

// Every member starts at least this far before the buffer's end, so a key
// and the first bytes of its value are readable without further checks.
constexpr ptrdiff_t kFastSlack = 64;

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

// Microseconds with up to 3 decimals -> nanoseconds; false where the general
// reader must decide (rounding, overflow, null, not a number).
inline bool read_time_ns_fast(Cursor& c, int64_t& out) {
    static constexpr int64_t kScale[] = {1000, 100, 10, 1};
    if (!starts_number(c.peek())) return false;
    const char* p = c.p;
    PlainNumber number;
    if (!read_plain_number(p, c.end, number) || number.fraction_digits > 3) return false;
    int64_t value;
    if (__builtin_mul_overflow(static_cast<int64_t>(number.digits), kScale[number.fraction_digits], &value))
        return false;
    out = number.negative ? -value : value;
    c.p = p;
    return true;
}

// A plain integer; false for anything read_int must look at (fractions, strings...).
inline bool read_int_fast(Cursor& c, int64_t& out) {
    if (!starts_number(c.peek())) return false;
    const char* p = c.p;
    PlainNumber number;
    if (!read_plain_number(p, c.end, number) || number.fraction_digits != 0) return false;
    const auto value = static_cast<int64_t>(number.digits);
    out = number.negative ? -value : value;
    c.p = p;
    return true;
}

// A string without escapes: interned; false otherwise.
inline bool intern_string_fast(Cursor& c, StringTable& strings, int32_t& last, int32_t& out) {
    if (c.peek() != '"') return false;
    const char* p = c.p;
    const char* close = find_quote_or_backslash(p + 1, c.end);
    if (close == c.end || *close != '"') return false;
    out = strings.intern_recent(std::string_view(p + 1, static_cast<size_t>(close - p - 1)), last);
    c.p = close + 1;
    return true;
}

inline void read_int_field(Cursor& c, int64_t& field) {
    if (!read_int_fast(c, field)) field = read_int(c);
}

inline void read_time_field(Cursor& c, int64_t& field, const char* name) {
    if (!read_time_ns_fast(c, field)) field = read_time_ns(c, name);
}

// cat and name: a string, else the value is skipped and the field left as it was.
inline void read_string_field(Cursor& c, StringTable& strings, EventScratch& scratch, int32_t& last, int32_t& field) {
    if (intern_string_fast(c, strings, last, field)) return;
    if (c.peek() == '"') {
        field = intern_string(c, strings, scratch.text, last);
    } else {
        c.skip_value();
    }
}

inline void read_int_or_string_field(Cursor& c, StringTable& strings, EventScratch& scratch, uint8_t& flags,
                                     uint8_t string_flag, int64_t& field) {
    if (!read_int_fast(c, field)) field = read_int_or_string(c, strings, scratch, flags, string_flag);
}

// Moves past a value that no column takes: plain strings and numbers here, the rest by skip_value.
inline void skip_value_fast(Cursor& c) {
    const char* p = c.p = skip_space(c.p, c.end);
    if (p == c.end) throw NeedMore{};
    if (*p == '"') {
        const char* close = find_quote_or_backslash(p + 1, c.end);
        if (close != c.end && *close == '"') {
            c.p = close + 1;
            return;
        }
    } else if (starts_number(*p)) {
        PlainNumber number;
        if (read_plain_number(p, c.end, number)) {
            c.p = p;
            return;
        }
    }
    c.skip_value();
}

// A key of under 16 bytes with no escape, with ':' right after: its text, and
// c.p past the ':'. Empty data() where the general reader must look.
inline std::string_view read_key_fast(const char* p) {
    if (*p != '"') return {};
    const char* body = p + 1;
    const unsigned mask = quote_or_backslash_mask(body);
    if (mask == 0) return {};
    const unsigned length = static_cast<unsigned>(__builtin_ctz(mask));
    if (body[length] != '"' || body[length + 1] != ':') return {};
    return std::string_view(body, length);
}

// After a member's value: past ',' (true, another member follows) or '}'
// (false, the object ends); throws NeedMore at anything else, for the caller to fall back.
inline bool next_member(Cursor& c) {
    const char* p = skip_space(c.p, c.end);
    if (p == c.end) throw NeedMore{};
    c.p = p + 1;
    if (*p == ',') return true;
    if (*p == '}') return false;
    throw NeedMore{};
}

// Visits the members of the object at c.p ('{' there) with fast key reads;
// `on_member(key)` reads the value. Throws NeedMore where the caller must fall back.
template <class OnMember>
void for_each_member_fast(Cursor& c, std::string& key_scratch, OnMember&& on_member) {
    const char* p = skip_space(c.p + 1, c.end);
    if (c.end - p < kFastSlack) throw NeedMore{};
    if (*p == '}') {
        c.p = p + 1;
        return;
    }
    while (true) {
        std::string_view key = read_key_fast(p);
        if (key.data() != nullptr) {
            c.p = key.data() + key.size() + 2;
        } else {
            c.p = p;
            key = read_key(c, key_scratch);  // long or escaped keys, a space before ':'
        }
        on_member(key);
        if (!next_member(c)) return;
        p = skip_space(c.p, c.end);
        if (c.end - p < kFastSlack) throw NeedMore{};
    }
}

void parse_arg_fast(std::string_view key, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    switch (key.size()) {
        case 3:
            if (key_is(key, "cid")) return read_int_field(c, e.correlation);
            break;
        case 4:
            if (key_is(key, "grid")) return parse_arg(key, c, e, strings, scratch);
            break;
        case 5:
            if (key_is(key, "bytes")) return read_int_field(c, e.bytes);
            if (key_is(key, "block")) return parse_arg(key, c, e, strings, scratch);
            break;
        case 6:
            if (key_is(key, "stream"))
                return read_int_or_string_field(c, strings, scratch, e.flags, kStreamIsString, e.stream);
            if (key_is(key, "device")) return read_int_field(c, e.device);
            break;
        case 10:
            if (key_is(key, "Input Dims") || key_is(key, "Input dims") || key_is(key, "Input type"))
                return parse_arg(key, c, e, strings, scratch);  // raw text
            break;
        case 11:
            if (key_is(key, "External id") || key_is(key, "external id")) return read_int_field(c, e.external_id);
            if (key_is(key, "correlation")) return read_int_field(c, e.correlation);
            break;
        case 13:
            if (key_is(key, "Fwd thread id")) return read_int_field(c, e.fwd_thread_id);
            break;
        case 15:
            if (key_is(key, "Sequence number")) return read_int_field(c, e.sequence_number);
            if (key_is(key, "Concrete Inputs")) return parse_arg(key, c, e, strings, scratch);
            break;
        default: break;
    }
    const char first = c.peek();
    if (first == '"' || starts_number(first)) return skip_value_fast(c);
    c.skip_value();  // containers and literals
}

void parse_event_member_fast(std::string_view key, Cursor& c, Event& e, StringTable& strings,
                             EventScratch& scratch) {
    switch (key.size()) {
        case 2:
            if (key[0] == 'p' && key[1] == 'h') {
                const char* p = skip_space(c.p, c.end);
                if (c.end - p >= 3 && p[0] == '"' && p[2] == '"' && p[1] != '\\' && p[1] != '"') {
                    e.ph = static_cast<uint8_t>(p[1]);
                    c.p = p + 3;
                    return;
                }
                c.p = p;
                return void(e.ph = read_phase(c, scratch.text));
            }
            if (key[0] == 't' && key[1] == 's') return read_time_field(c, e.ts_ns, "ts");
            break;
        case 3:
            if (key_is(key, "cat")) {
                return read_string_field(c, strings, scratch, scratch.last_cat, e.cat);
            }
            if (key_is(key, "dur")) return read_time_field(c, e.dur_ns, "dur");
            if (key_is(key, "pid")) return read_int_or_string_field(c, strings, scratch, e.flags, kPidIsString, e.pid);
            if (key_is(key, "tid")) return read_int_or_string_field(c, strings, scratch, e.flags, kTidIsString, e.tid);
            break;
        case 4:
            if (key_is(key, "name")) {
                return read_string_field(c, strings, scratch, scratch.last_name, e.name);
            }
            if (key_is(key, "args")) {
                if (c.peek() != '{') return c.skip_value();
                return for_each_member_fast(c, scratch.key, [&](std::string_view arg) { parse_arg_fast(arg, c, e, strings, scratch); });
            }
            break;
        default: break;
    }
    skip_value_fast(c);
}

// The fast path over the event at c.p; false (c.p unmoved) where the general one must parse it.
bool parse_event_fast(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    const char* start = c.p;
    try {
        for_each_member_fast(c, scratch.key, [&](std::string_view key) {
            parse_event_member_fast(key, c, e, strings, scratch);
        });
        return true;
    } catch (const NeedMore&) {
    } catch (const ParseError&) {
    }
    c.p = start;
    return false;
}

}  // namespace

void parse_event(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    if (parse_event_fast(c, e, strings, scratch)) return;
    e.reset(e.offset);  // the fast path may have filled some fields
    parse_event_general(c, e, strings, scratch);
}

int64_t Scanner::offset_of(const char* p) const { return bytes_fed_ + (p - chunk_begin_); }

void Scanner::fail_at(const char* p, const char* end, const std::string& message) const {
    throw ParseError(message, offset_of(p), excerpt_around(chunk_begin_, end, p));
}

void Scanner::feed(const char* data, size_t size) {
    chunk_begin_ = data;
    prefetched_ = data;
    const char* p = data;
    const char* end = data + size;
    while (p < end) p = step(p, end);
    bytes_fed_ += static_cast<int64_t>(size);
}

const char* Scanner::step(const char* p, const char* end) {
    switch (state_) {
        case State::kEventsFirst:
        case State::kEventsNext:
        case State::kEventsAfter: return scan_events(p, end);
        case State::kEventInCarry: return continue_carry(p, end);
        case State::kTopKey:
        case State::kTopValue: return continue_top_value(p, end);
        default: break;
    }
    while (p < end && is_json_space(*p)) ++p;
    if (p == end) return end;
    const char c = *p;
    switch (state_) {
        case State::kBegin:
            if (c == '[') {
                top_is_array_ = true;
                saw_trace_events_ = true;
                state_ = State::kEventsFirst;
            } else if (c == '{') {
                state_ = State::kTopKeyOrEnd;
            } else {
                fail_at(p, end, "a trace must start with '{' or '['");
            }
            return p + 1;
        case State::kTopKeyOrEnd:
        case State::kTopKeyRequired:
            if (c == '}' && state_ == State::kTopKeyOrEnd) {
                state_ = State::kDone;
                return p + 1;
            }
            if (c != '"') fail_at(p, end, "expected a key string");
            capturing_key_ = true;
            start_top_value();
            state_ = State::kTopKey;
            return p;
        case State::kTopColon:
            if (c != ':') fail_at(p, end, "expected ':' after a key");
            state_ = State::kTopValueStart;
            return p + 1;
        case State::kTopValueStart:
            if (top_key_ == "traceEvents") {
                if (c != '[') fail_at(p, end, "traceEvents is not an array");
                saw_trace_events_ = true;
                state_ = State::kEventsFirst;
                return p + 1;
            }
            start_top_value();
            state_ = State::kTopValue;
            return p;
        case State::kTopAfterValue:
            if (c == ',') {
                state_ = State::kTopKeyRequired;
            } else if (c == '}') {
                state_ = State::kDone;
            } else {
                fail_at(p, end, "expected ',' or '}' after a top-level value");
            }
            return p + 1;
        case State::kDone: fail_at(p, end, "unexpected data after the end of the JSON document");
        default: fail_at(p, end, "internal scanner state error");
    }
}

const char* Scanner::scan_events(const char* p, const char* end) {
    while (true) {
        while (p < end && is_json_space(*p)) ++p;
        if (p == end) return end;
        const char c = *p;
        if (state_ == State::kEventsAfter) {
            if (c == ',') {
                state_ = State::kEventsNext;
                ++p;
                continue;
            }
            if (c == ']') return end_events_array(p + 1);
            fail_at(p, end, "expected ',' or ']' after a trace event");
        }
        if (c == ']' && state_ == State::kEventsFirst) return end_events_array(p + 1);
        if (c != '{') fail_at(p, end, "expected a trace event object");

        prefetch_ahead(p, end);
        Cursor cursor(p, end, offset_of(p));
        event_.reset(cursor.offset());
        try {
            parse_event(cursor, event_, strings_, scratch_);
        } catch (const NeedMore&) {
            return start_carry(p, end);
        }
        emit();
        p = cursor.p;
        state_ = State::kEventsAfter;
    }
}

// How far ahead of the event being parsed the scanner asks for the input's
// cache lines. On the 2-core VM a plain SSE2 pass over an 87 MB trace streams
// at 2.5 GB/s from memory against 12 GB/s from L2, so the scanner waits on
// memory; prefetching 1-4 KiB ahead gave 5-8% (2 KiB chosen).
constexpr ptrdiff_t kPrefetchBytes = 2048;

// Prefetches the input up to kPrefetchBytes past p, each cache line once.
void Scanner::prefetch_ahead(const char* p, const char* end) {
    const char* until = end - p > kPrefetchBytes ? p + kPrefetchBytes : end;
    if (prefetched_ < p) prefetched_ = p;
    for (; prefetched_ < until; prefetched_ += 64) __builtin_prefetch(prefetched_);
}

const char* Scanner::end_events_array(const char* after) {
    state_ = top_is_array_ ? State::kDone : State::kTopAfterValue;
    return after;
}

const char* Scanner::start_carry(const char* p, const char* end) {
    carry_.assign(p, end);
    carry_offset_ = offset_of(p);
    splitter_.reset();
    size_t consumed = 0;
    if (splitter_.scan(carry_.data(), carry_.size(), consumed) != ValueSplitter::Status::kNeedMore)
        fail_at(p + consumed, end, "malformed trace event");
    state_ = State::kEventInCarry;
    return end;
}

const char* Scanner::continue_carry(const char* p, const char* end) {
    size_t consumed = 0;
    const auto status = splitter_.scan(p, static_cast<size_t>(end - p), consumed);
    carry_.append(p, consumed);
    if (status == ValueSplitter::Status::kMalformed) fail_at(p + consumed, end, "malformed trace event");
    if (carry_.size() > kMaxEventBytes) fail_at(p, end, "a trace event is larger than 256 MiB");
    if (status == ValueSplitter::Status::kNeedMore) return end;

    const char* begin = carry_.data();
    Cursor cursor(begin, begin + carry_.size(), carry_offset_);
    event_.reset(carry_offset_);
    try {
        parse_event(cursor, event_, strings_, scratch_);
    } catch (const NeedMore&) {
        throw ParseError("malformed trace event", carry_offset_, excerpt_around(begin, cursor.end, begin));
    }
    emit();
    state_ = State::kEventsAfter;
    return p + consumed;
}

void Scanner::emit() {
    sink_.on_event(event_);
    ++events_;
}

void Scanner::start_top_value() {
    splitter_.reset();
    carry_.clear();
    skipping_value_ = false;
}

const char* Scanner::continue_top_value(const char* p, const char* end) {
    size_t consumed = 0;
    const auto status = splitter_.scan(p, static_cast<size_t>(end - p), consumed);
    if (status == ValueSplitter::Status::kMalformed) fail_at(p + consumed, end, "malformed top-level value");
    if (!skipping_value_) {
        carry_.append(p, consumed);
        if (carry_.size() > kMetadataLimit && !capturing_key_) {
            skipping_value_ = true;
            carry_.clear();
        }
    }
    if (status == ValueSplitter::Status::kDone) finish_top_value(p + consumed, end);
    return p + consumed;
}

void Scanner::finish_top_value(const char* at, const char* end) {
    if (capturing_key_) {
        capturing_key_ = false;
        top_key_.clear();
        const std::string_view body(carry_.data() + 1, carry_.size() - 2);
        if (!unescape_json_string(body, top_key_)) fail_at(at, end, "invalid escape in a top-level key");
        state_ = State::kTopColon;
        return;
    }
    if (!skipping_value_) metadata_.emplace_back(top_key_, carry_);
    state_ = State::kTopAfterValue;
}

void Scanner::finish() {
    if (state_ == State::kDone) return;
    if (state_ == State::kBegin)
        throw ParseError("the trace is empty", bytes_fed_, "", /*truncated=*/true);
    const std::string tail = state_ == State::kEventInCarry ? carry_.substr(0, 48) : std::string();
    throw ParseError("the trace is truncated: the JSON document ends after " + std::to_string(events_) +
                         " events without closing",
                     bytes_fed_, tail, /*truncated=*/true);
}

}  // namespace itercast::trace
