#pragma once
// Learned layouts of trace events. A profiler writes every event of one kind
// with the same keys, in the same order, with the same spacing; only the
// values change. A layout is such an event's text with the values cut out:
// the fixed text between values ("glue") and the column each value goes to.
//
// Matching an event against a layout compares its glue bytes and reads each
// value with the ordinary field readers, so key lookups, whitespace and
// separators cost one compare. A matched event has byte for byte the keys,
// spacing and separators of an event that parsed, and the same kind of value
// in each place, so it parses to what the member-by-member path would give;
// anything else fails the match and the event is parsed that way instead.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/event.hpp"
#include "trace/event_field.hpp"
#include "trace/json_cursor.hpp"
#include "trace/string_table.hpp"

namespace itercast::trace {

struct EventScratch;

class EventLayout {
public:
    // The layout of the event text [begin, end) (one complete object that
    // parsed); false where it has none worth keeping (too large, unusual).
    bool learn(const char* begin, const char* end, std::string& key_scratch);

    // How far parse_from got.
    struct Progress {
        bool matched = false;  // the whole event, c.p past it
        // Otherwise: slots [0, slot) were read into the event and c.p is at
        // slot `slot`'s glue, unless `dirty` (a value's reader failed midway:
        // the event and c.p must be reset).
        uint32_t slot = 0;
        bool dirty = false;
    };

    // Matches the event against this layout from slot `first` on, with c.p
    // at that slot's glue and the slots before it read.
    Progress parse_from(uint32_t first, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch);

    // Whether the value before slot `slot` (the last, for slots().size()) is inside args.
    bool in_args_before(uint32_t slot) const { return slots_[slot - 1].in_args; }

    // Leading slots with the same glue and the same kind of value for the same
    // column: what one layout read of an event holds for the other too.
    uint32_t shared_slots(const EventLayout& other) const;
    // The same glue, with values of the same kinds in the same places.
    bool same_as(const EventLayout& other) const;

private:
    // Which kind of JSON value a slot held: the first byte's class.
    enum class ValueKind : uint8_t { kString, kNumber, kObject, kArray, kLiteral, kOther };
    static ValueKind kind_of(char first);

    // How a slot's value is read: the common cases inline, the rest by read_field.
    enum class Reader : uint8_t { kTime, kInt, kString, kIdString, kRawText, kPhase, kSkipString, kSkipNumber, kField };

    struct Slot {
        uint32_t glue_begin;  // into glue_
        uint32_t glue_size;   // the text before the value
        Field field;
        ValueKind kind;
        bool in_args;
        Reader reader;
        int64_t Event::*number = nullptr;   // kTime, kInt, kIdString (pid, tid, stream given as strings)
        int32_t Event::*string = nullptr;   // kString, kRawText
        uint8_t string_flag = 0;            // kIdString: the EventFlag saying the field holds a string id
        int32_t last_id = kNoString;        // kString, kIdString, kRawText: the id of the value this slot held last
    };
    // The id of `text`, which the slot's previous value often was.
    static int32_t intern_in_slot(Slot& slot, std::string_view text, StringTable& strings);

    static Slot make_slot(uint32_t glue_begin, uint32_t glue_size, Field field, ValueKind kind, bool in_args);
    void read_slot(Slot& slot, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch);
    void add_glue(const char* begin, const char* end);
    bool walk_object(Cursor& c, bool top_level, const char*& glue_start, std::string& key_scratch);

    std::string glue_;  // every slot's glue, then the tail's, then 16 bytes of padding
    std::vector<Slot> slots_;
    uint32_t tail_begin_ = 0, tail_size_ = 0;
};

// A few layouts, and which to try first for the next event. Layouts of
// one profiler share leading members (ph, cat, name, pid, tid, ts, dur) and
// part ways later (in args). A try that fails hands what it read to the
// next layout that shares those slots, and a layout that does not share
// them cannot match the event, so a second or third try costs little more
// than a compare.
class EventLayouts {
public:
    static constexpr size_t kCapacity = 16;
    // Layouts tried per event at most: when the event is of a new kind that
    // parts from many layouts at the same member, each try costs a compare.
    static constexpr size_t kMaxTries = 6;
    // A miss adds 1 to the score, a match takes kMatchWeight off: over the
    // threshold, more than one event in kMatchWeight + 1 is missing.
    static constexpr uint32_t kMatchWeight = 4;
    static constexpr uint32_t kMissScoreForOneTry = 32;

    struct Match {
        bool complete = false;  // the whole event, c.p past it
        // Otherwise, if `partial`: the event's first members were read into
        // it and c.p is past the last value read, in args or not; else c.p
        // is at the event and it is reset.
        bool partial = false;
        bool in_args = false;
    };

    // Reads as much of the event at c.p as a layout matches.
    Match parse(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch);

    // After parse() did not match the event [begin, end) and it parsed the
    // usual way: learns its layout, unless recently learnt layouts went
    // unused; then only after kRetryMisses misses, twice as many each time
    // that goes on, so that events of ever-new shapes cost little.
    void learn(const char* begin, const char* end, std::string& key_scratch);

private:
    static constexpr uint32_t kRetryMisses = 64;
    static constexpr uint32_t kMaxRetryMisses = 1 << 16;
    static constexpr size_t kMaxUnproven = 2;

    // Puts the layout first in line, as the successor of the one that was.
    void promote(uint8_t index);
    void set_layout(uint8_t index, EventLayout&& layout);

    std::vector<EventLayout> layouts_;
    std::array<uint8_t, kCapacity> order_{};      // indices into layouts_, most recently used first
    std::array<uint8_t, kCapacity> successor_{};  // the layout that matched after each one last time
    std::array<bool, kCapacity> proven_{};        // matched an event since it was learnt
    std::array<std::array<uint8_t, kCapacity>, kCapacity> shared_{};  // shared_slots of each pair
    uint32_t misses_since_learn_ = 0;
    uint32_t retry_misses_ = kRetryMisses;
    uint32_t miss_score_ = 0;
};

}  // namespace itercast::trace
