#include "trace/scanner.hpp"

#include <cstring>

namespace itercast::trace {

namespace {

constexpr size_t kMaxEventBytes = size_t{256} << 20;

}  // namespace

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
// cache lines: on large traces the scanner waits on memory, and prefetching
// 1-4 KiB ahead paid off (2 KiB chosen; figures in docs/decisions.md).
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
