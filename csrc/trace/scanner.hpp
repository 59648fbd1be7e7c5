#pragma once
// Push-based, resumable scanner of Kineto / Chrome-trace JSON. Feed it chunks
// of any size (down to one byte); it emits each trace event to a sink as soon
// as the event's closing brace has arrived. Memory holds only the event in
// progress, interned strings and small top-level metadata.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/event.hpp"
#include "trace/event_parser.hpp"
#include "trace/string_table.hpp"
#include "trace/value_splitter.hpp"

namespace itercast::trace {

class Scanner {
public:
    // Top-level values other than traceEvents larger than this are skipped.
    static constexpr size_t kMetadataLimit = 1 << 20;

    explicit Scanner(EventSink& sink, StringTable& strings) : sink_(sink), strings_(strings) {}

    // Throws ParseError on malformed input; the scanner is then unusable.
    void feed(const char* data, size_t size);
    // Declares the end of the stream; throws ParseError(truncated) if the
    // document is incomplete.
    void finish();

    int64_t bytes_fed() const { return bytes_fed_; }
    uint64_t events() const { return events_; }
    bool complete() const { return state_ == State::kDone; }
    bool saw_trace_events() const { return saw_trace_events_; }
    // Top-level keys other than traceEvents with their raw JSON text, in file order.
    const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

private:
    enum class State {
        kBegin,
        kTopKeyOrEnd,    // after '{': a key or '}'
        kTopKeyRequired, // after ',': a key
        kTopKey,
        kTopColon,
        kTopValueStart,
        kTopValue,
        kTopAfterValue,
        kEventsFirst,   // after '[': an event or ']'
        kEventsNext,    // after ',': an event
        kEventsAfter,   // after an event: ',' or ']'
        kEventInCarry,  // an event straddles chunks; its bytes go to carry_
        kDone,
    };

    const char* step(const char* p, const char* end);
    const char* scan_events(const char* p, const char* end);
    const char* end_events_array(const char* after);
    void prefetch_ahead(const char* p, const char* end);
    const char* start_carry(const char* p, const char* end);
    const char* continue_carry(const char* p, const char* end);
    void start_top_value();
    const char* continue_top_value(const char* p, const char* end);
    void finish_top_value(const char* at, const char* end);
    void emit();
    int64_t offset_of(const char* p) const;
    [[noreturn]] void fail_at(const char* p, const char* end, const std::string& message) const;

    EventSink& sink_;
    StringTable& strings_;
    Event event_{};
    State state_ = State::kBegin;
    bool top_is_array_ = false;
    bool saw_trace_events_ = false;
    bool capturing_key_ = false;
    bool skipping_value_ = false;
    int64_t bytes_fed_ = 0;
    const char* chunk_begin_ = nullptr;  // the chunk being fed, for offsets
    const char* prefetched_ = nullptr;
    uint64_t events_ = 0;
    ValueSplitter splitter_;
    std::string carry_;
    int64_t carry_offset_ = 0;
    std::string top_key_;
    std::vector<std::pair<std::string, std::string>> metadata_;
    EventScratch scratch_;
};

}  // namespace itercast::trace
