#include "trace/event_parser.hpp"

#include <cstring>

namespace itercast::trace {

namespace {

// Constant-length compare, which the compiler turns into a few integer loads.
template <size_t N>
bool key_is(std::string_view key, const char (&literal)[N]) {
    return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

}  // namespace

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

namespace {

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


void read_field_general(Field field, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch);

void parse_args(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    if (c.peek() != '{') return c.skip_value();
    for_each_member(c, scratch.key,
                    [&](std::string_view key) { read_field_general(arg_field(key), c, e, strings, scratch); });
}

// The general readers: every byte checked, errors worded.
void read_field_general(Field field, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    switch (field) {
        case Field::kPh: return void(e.ph = read_phase(c, scratch.text));
        case Field::kTs: return void(e.ts_ns = read_time_ns(c, "ts"));
        case Field::kDur: return void(e.dur_ns = read_time_ns(c, "dur"));
        case Field::kCat:
            if (c.peek() == '"') return void(e.cat = intern_string(c, strings, scratch.text, scratch.last_cat));
            break;
        case Field::kName:
            if (c.peek() == '"') return void(e.name = intern_string(c, strings, scratch.text, scratch.last_name));
            break;
        case Field::kPid: return void(e.pid = read_int_or_string(c, strings, scratch, e.flags, kPidIsString));
        case Field::kTid: return void(e.tid = read_int_or_string(c, strings, scratch, e.flags, kTidIsString));
        case Field::kArgs: return parse_args(c, e, strings, scratch);
        case Field::kExternalId: return void(e.external_id = read_int(c));
        case Field::kCorrelation: return void(e.correlation = read_int(c));
        case Field::kSequenceNumber: return void(e.sequence_number = read_int(c));
        case Field::kFwdThreadId: return void(e.fwd_thread_id = read_int(c));
        case Field::kStream: return void(e.stream = read_int_or_string(c, strings, scratch, e.flags, kStreamIsString));
        case Field::kDevice: return void(e.device = read_int(c));
        case Field::kBytes: return void(e.bytes = read_int(c));
        case Field::kInputDims: return void(e.input_dims = intern_raw(c, strings, scratch.last_input_dims));
        case Field::kInputTypes: return void(e.input_types = intern_raw(c, strings, scratch.last_input_types));
        case Field::kConcreteInputs:
            return void(e.concrete_inputs = intern_raw(c, strings, scratch.last_concrete_inputs));
        case Field::kGrid: return read_dim3(c, e.grid_x, e.grid_y, e.grid_z);
        case Field::kBlock: return read_dim3(c, e.block_x, e.block_y, e.block_z);
        case Field::kNone: break;
    }
    c.skip_value();
}

void parse_event_general(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    for_each_member(c, scratch.key,
                    [&](std::string_view key) { read_field_general(event_field(key), c, e, strings, scratch); });
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

// Microseconds with up to 3 decimals -> nanoseconds; false where the general
// reader must decide (rounding, overflow, null, not a number).
inline bool read_time_ns_fast(Cursor& c, int64_t& out) {
    return starts_number(c.peek()) && read_plain_time_ns(c.p, c.end, out);
}

// A plain integer; false for anything read_int must look at (fractions, strings...).
inline bool read_int_fast(Cursor& c, int64_t& out) { return starts_number(c.peek()) && read_plain_int(c.p, c.end, out); }

// A string without escapes: interned; false otherwise.
inline bool intern_string_fast(Cursor& c, StringTable& strings, int32_t& last, int32_t& out) {
    std::string_view body;
    if (c.peek() != '"' || !read_plain_string(c.p, c.end, body)) return false;
    out = strings.intern_recent(body, last);
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
        std::string_view body;
        if (read_plain_string(c.p, c.end, body)) return;
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

// Reads the member whose key starts at p with fast key reads; `on_member(key)` reads the value.
template <class OnMember>
void read_member_fast(Cursor& c, const char* p, std::string& key_scratch, OnMember&& on_member) {
    std::string_view key = read_key_fast(p);
    if (key.data() != nullptr) {
        c.p = key.data() + key.size() + 2;
    } else {
        c.p = p;
        key = read_key(c, key_scratch);  // long or escaped keys, a space before ':'
    }
    on_member(key);
}

// The members after the one just read (c.p past its value), and the object's '}'.
template <class OnMember>
void rest_of_members_fast(Cursor& c, std::string& key_scratch, OnMember&& on_member) {
    while (next_member(c)) {
        const char* p = skip_space(c.p, c.end);
        if (c.end - p < kFastSlack) throw NeedMore{};
        read_member_fast(c, p, key_scratch, on_member);
    }
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
    read_member_fast(c, p, key_scratch, on_member);
    rest_of_members_fast(c, key_scratch, on_member);
}

void read_args_fast(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    if (c.peek() != '{') return c.skip_value();
    for_each_member_fast(c, scratch.key,
                         [&](std::string_view key) { read_field(arg_field(key), c, e, strings, scratch); });
}

inline void read_phase_fast(Cursor& c, Event& e, EventScratch& scratch) {
    c.p = skip_space(c.p, c.end);
    if (c.end - c.p >= 3 && read_one_char_string(c.p, e.ph)) return;
    e.ph = read_phase(c, scratch.text);
}

// The fast path over the event at c.p; false (c.p unmoved) where the general one must parse it.
bool parse_event_fast(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    const char* start = c.p;
    try {
        for_each_member_fast(c, scratch.key,
                             [&](std::string_view key) { read_field(event_field(key), c, e, strings, scratch); });
        return true;
    } catch (const NeedMore&) {
    } catch (const ParseError&) {
    }
    c.p = start;
    return false;
}

// The fast path over the rest of an event whose first members a layout read
// (c.p past the last value read, inside args or not); false where the general
// path must parse the event.
bool finish_event_fast(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch, bool in_args) {
    try {
        if (in_args)
            rest_of_members_fast(c, scratch.key,
                                 [&](std::string_view key) { read_field(arg_field(key), c, e, strings, scratch); });
        rest_of_members_fast(c, scratch.key,
                             [&](std::string_view key) { read_field(event_field(key), c, e, strings, scratch); });
        return true;
    } catch (const NeedMore&) {
    } catch (const ParseError&) {
    }
    return false;
}

}  // namespace

Field event_field(std::string_view key) {
    switch (key.size()) {
        case 2:
            if (key[0] == 'p' && key[1] == 'h') return Field::kPh;
            if (key[0] == 't' && key[1] == 's') return Field::kTs;
            break;
        case 3:
            if (key_is(key, "cat")) return Field::kCat;
            if (key_is(key, "dur")) return Field::kDur;
            if (key_is(key, "pid")) return Field::kPid;
            if (key_is(key, "tid")) return Field::kTid;
            break;
        case 4:
            if (key_is(key, "name")) return Field::kName;
            if (key_is(key, "args")) return Field::kArgs;
            break;
        default: break;
    }
    return Field::kNone;
}

Field arg_field(std::string_view key) {
    switch (key.size()) {
        case 3:
            if (key_is(key, "cid")) return Field::kCorrelation;
            break;
        case 4:
            if (key_is(key, "grid")) return Field::kGrid;
            break;
        case 5:
            if (key_is(key, "bytes")) return Field::kBytes;
            if (key_is(key, "block")) return Field::kBlock;
            break;
        case 6:
            if (key_is(key, "stream")) return Field::kStream;
            if (key_is(key, "device")) return Field::kDevice;
            break;
        case 10:
            if (key_is(key, "Input Dims") || key_is(key, "Input dims")) return Field::kInputDims;
            if (key_is(key, "Input type")) return Field::kInputTypes;
            break;
        case 11:
            if (key_is(key, "External id") || key_is(key, "external id")) return Field::kExternalId;
            if (key_is(key, "correlation")) return Field::kCorrelation;
            break;
        case 13:
            if (key_is(key, "Fwd thread id")) return Field::kFwdThreadId;
            break;
        case 15:
            if (key_is(key, "Sequence number")) return Field::kSequenceNumber;
            if (key_is(key, "Concrete Inputs")) return Field::kConcreteInputs;
            break;
        default: break;
    }
    return Field::kNone;
}

void read_field(Field field, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    switch (field) {
        case Field::kPh: return read_phase_fast(c, e, scratch);
        case Field::kTs: return read_time_field(c, e.ts_ns, "ts");
        case Field::kDur: return read_time_field(c, e.dur_ns, "dur");
        case Field::kCat: return read_string_field(c, strings, scratch, scratch.last_cat, e.cat);
        case Field::kName: return read_string_field(c, strings, scratch, scratch.last_name, e.name);
        case Field::kPid: return read_int_or_string_field(c, strings, scratch, e.flags, kPidIsString, e.pid);
        case Field::kTid: return read_int_or_string_field(c, strings, scratch, e.flags, kTidIsString, e.tid);
        case Field::kArgs: return read_args_fast(c, e, strings, scratch);
        case Field::kExternalId: return read_int_field(c, e.external_id);
        case Field::kCorrelation: return read_int_field(c, e.correlation);
        case Field::kSequenceNumber: return read_int_field(c, e.sequence_number);
        case Field::kFwdThreadId: return read_int_field(c, e.fwd_thread_id);
        case Field::kStream: return read_int_or_string_field(c, strings, scratch, e.flags, kStreamIsString, e.stream);
        case Field::kDevice: return read_int_field(c, e.device);
        case Field::kBytes: return read_int_field(c, e.bytes);
        case Field::kInputDims:
        case Field::kInputTypes:
        case Field::kConcreteInputs:
        case Field::kGrid:
        case Field::kBlock: return read_field_general(field, c, e, strings, scratch);
        case Field::kNone: break;
    }
    skip_value_fast(c);
}

void parse_event(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    const char* start = c.p;
    const EventLayouts::Match match = scratch.layouts.parse(c, e, strings, scratch);
    if (match.complete) return;
    // An event of a new kind: most often it shares its first members with a
    // layout (read already), and the rest is read member by member.
    const bool read = match.partial ? finish_event_fast(c, e, strings, scratch, match.in_args)
                                    : parse_event_fast(c, e, strings, scratch);
    if (read) {
        scratch.layouts.learn(start, c.p, scratch.key);
        return;
    }
    c.p = start;
    e.reset(e.offset);  // the faster paths may have filled some fields
    parse_event_general(c, e, strings, scratch);
}

}  // namespace itercast::trace
