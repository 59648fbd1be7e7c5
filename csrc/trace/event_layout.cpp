#include "trace/event_layout.hpp"

#include <algorithm>
#include <cstring>

#include "trace/event_parser.hpp"

namespace itercast::trace {

namespace {

// Layouts larger than this are not kept: such events are rare and the glue
// compare would stop being cheap.
constexpr size_t kMaxGlueBytes = 2048;
constexpr size_t kMaxSlots = 48;
constexpr size_t kGluePadding = 16;

// Whether the `size` bytes at text equal those at glue; both are readable 16
// bytes past `size` (the caller checks the text, glue_ is padded).
inline bool same_glue(const char* text, const char* glue, uint32_t size) {
#if defined(__SSE2__)
    while (true) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(glue));
        const unsigned equal = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
        if (size <= 16) {
            const unsigned wanted = (1u << size) - 1;  // size 16: 0xFFFF
            return (equal & wanted) == wanted;
        }
        if (equal != 0xFFFFu) return false;
        text += 16;
        glue += 16;
        size -= 16;
    }
#else
    return std::memcmp(text, glue, size) == 0;
#endif
}

}  // namespace

EventLayout::ValueKind EventLayout::kind_of(char first) {
    static constexpr auto kKinds = [] {
        std::array<ValueKind, 256> kinds{};
        for (auto& kind : kinds) kind = ValueKind::kOther;
        kinds['"'] = ValueKind::kString;
        kinds['{'] = ValueKind::kObject;
        kinds['['] = ValueKind::kArray;
        kinds['t'] = kinds['f'] = kinds['n'] = ValueKind::kLiteral;
        kinds['-'] = ValueKind::kNumber;
        for (int digit = '0'; digit <= '9'; ++digit) kinds[digit] = ValueKind::kNumber;
        return kinds;
    }();
    return kKinds[static_cast<unsigned char>(first)];
}

void EventLayout::add_glue(const char* begin, const char* end) { glue_.append(begin, static_cast<size_t>(end - begin)); }

bool EventLayout::learn(const char* begin, const char* end, std::string& key_scratch) {
    glue_.clear();
    slots_.clear();
    const char* glue_start = begin;
    try {
        Cursor c(begin, end, 0);
        if (!walk_object(c, /*top_level=*/true, glue_start, key_scratch) || c.p != end) return false;
    } catch (const NeedMore&) {
        return false;
    } catch (const ParseError&) {
        return false;
    }
    tail_begin_ = static_cast<uint32_t>(glue_.size());
    tail_size_ = static_cast<uint32_t>(end - glue_start);
    add_glue(glue_start, end);
    if (glue_.size() > kMaxGlueBytes || slots_.size() > kMaxSlots) return false;
    glue_.append(kGluePadding, '\0');
    return true;
}

// Walks the object at c.p, adding a slot per value; the members of a
// top-level "args" object become slots too, its braces and keys glue.
bool EventLayout::walk_object(Cursor& c, bool top_level, const char*& glue_start, std::string& key_scratch) {
    c.expect('{', "'{'");
    if (c.peek() == '}') {
        ++c.p;
        return true;
    }
    while (true) {
        const std::string_view key = read_key(c, key_scratch);
        const Field field = top_level ? event_field(key) : arg_field(key);
        const char first = c.peek();
        if (field == Field::kArgs && first == '{') {
            if (!walk_object(c, /*top_level=*/false, glue_start, key_scratch)) return false;
        } else {
            const ValueKind kind = kind_of(first);
            if (kind == ValueKind::kOther) return false;
            slots_.push_back(make_slot(static_cast<uint32_t>(glue_.size()), static_cast<uint32_t>(c.p - glue_start),
                                       field, kind, !top_level));
            add_glue(glue_start, c.p);
            c.skip_value();
            glue_start = c.p;
        }
        const char next = c.peek();
        ++c.p;
        if (next == '}') return true;
        if (next != ',') return false;
    }
}

EventLayout::Slot EventLayout::make_slot(uint32_t glue_begin, uint32_t glue_size, Field field, ValueKind kind,
                                         bool in_args) {
    Slot slot{glue_begin, glue_size, field, kind, in_args, Reader::kField};
    if (kind == ValueKind::kNumber) {
        switch (field) {
            case Field::kTs: slot.number = &Event::ts_ns; break;
            case Field::kDur: slot.number = &Event::dur_ns; break;
            case Field::kPid: slot.number = &Event::pid; break;
            case Field::kTid: slot.number = &Event::tid; break;
            case Field::kStream: slot.number = &Event::stream; break;
            case Field::kExternalId: slot.number = &Event::external_id; break;
            case Field::kCorrelation: slot.number = &Event::correlation; break;
            case Field::kSequenceNumber: slot.number = &Event::sequence_number; break;
            case Field::kFwdThreadId: slot.number = &Event::fwd_thread_id; break;
            case Field::kDevice: slot.number = &Event::device; break;
            case Field::kBytes: slot.number = &Event::bytes; break;
            case Field::kNone: slot.reader = Reader::kSkipNumber; break;
            default: break;
        }
        if (slot.number != nullptr) slot.reader = field == Field::kTs || field == Field::kDur ? Reader::kTime : Reader::kInt;
    } else if (kind == ValueKind::kString) {
        switch (field) {
            case Field::kPid: slot.number = &Event::pid, slot.string_flag = kPidIsString; break;
            case Field::kTid: slot.number = &Event::tid, slot.string_flag = kTidIsString; break;
            case Field::kStream: slot.number = &Event::stream, slot.string_flag = kStreamIsString; break;
            case Field::kCat: slot.string = &Event::cat; break;
            case Field::kName: slot.string = &Event::name; break;
            case Field::kPh: slot.reader = Reader::kPhase; break;
            case Field::kNone: slot.reader = Reader::kSkipString; break;
            default: break;
        }
        if (slot.string != nullptr) slot.reader = Reader::kString;
        if (slot.number != nullptr) slot.reader = Reader::kIdString;
    } else if (kind == ValueKind::kArray || kind == ValueKind::kObject) {
        switch (field) {
            case Field::kInputDims: slot.string = &Event::input_dims; break;
            case Field::kInputTypes: slot.string = &Event::input_types; break;
            case Field::kConcreteInputs: slot.string = &Event::concrete_inputs; break;
            default: break;
        }
        if (slot.string != nullptr) slot.reader = Reader::kRawText;
    }
    return slot;
}

inline int32_t EventLayout::intern_in_slot(Slot& slot, std::string_view text, StringTable& strings) {
    if (slot.last_id < 0 || !strings.holds(slot.last_id, text)) slot.last_id = strings.intern(text);
    return slot.last_id;
}

// The value at c.p (of the slot's kind) into its column. The inline readers
// take what the fast field readers take, with the same result, and hand
// anything else to read_field.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void EventLayout::read_slot(Slot& slot, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    const char* p = c.p;
    switch (slot.reader) {
        case Reader::kTime:
        case Reader::kInt: {
            int64_t value;
            if (!(slot.reader == Reader::kTime ? read_plain_time_ns(p, c.end, value) : read_plain_int(p, c.end, value)))
                break;
            e.*slot.number = value;
            c.p = p;
            return;
        }
        case Reader::kSkipNumber: {
            PlainNumber number;
            if (!read_plain_number(p, c.end, number)) break;
            c.p = p;
            return;
        }
        case Reader::kString:
        case Reader::kIdString:
        case Reader::kSkipString: {
            std::string_view body;
            if (!read_plain_string(c.p, c.end, body)) break;
            if (slot.reader == Reader::kSkipString) return;
            const int32_t id = intern_in_slot(slot, body, strings);
            if (slot.reader == Reader::kString) {
                e.*slot.string = id;
            } else {
                e.*slot.number = id;
                e.flags |= slot.string_flag;
            }
            return;
        }
        case Reader::kRawText: {
#if defined(__SSE2__)
            const char* after = find_small_container_end(p, c.end);
            if (after == nullptr) break;
            c.p = after;
            e.*slot.string = intern_in_slot(slot, std::string_view(p, static_cast<size_t>(after - p)), strings);
            return;
#else
            break;
#endif
        }
        case Reader::kPhase:
            if (!read_one_char_string(c.p, e.ph)) break;
            return;
        case Reader::kField: break;
    }
    read_field(slot.field, c, e, strings, scratch);
    return;
}

EventLayout::Progress EventLayout::parse_from(uint32_t first, Cursor& c, Event& e, StringTable& strings,
                                              EventScratch& scratch) {
    const char* glue = glue_.data();
    const auto count = static_cast<uint32_t>(slots_.size());
    Progress progress;
    uint32_t i = first;
    try {
        for (; i < count; ++i) {
            Slot& slot = slots_[i];
            if (c.end - c.p < static_cast<ptrdiff_t>(slot.glue_size) + 16 ||
                !same_glue(c.p, glue + slot.glue_begin, slot.glue_size) || kind_of(c.p[slot.glue_size]) != slot.kind) {
                progress.slot = i;
                return progress;
            }
            c.p += slot.glue_size;
            read_slot(slot, c, e, strings, scratch);
        }
    } catch (const NeedMore&) {
        progress.dirty = true;
    } catch (const ParseError&) {
        progress.dirty = true;
    }
    progress.slot = i;
    if (progress.dirty || c.end - c.p < static_cast<ptrdiff_t>(tail_size_) + 16 ||
        !same_glue(c.p, glue + tail_begin_, tail_size_))
        return progress;
    c.p += tail_size_;
    progress.matched = true;
    return progress;
}

uint32_t EventLayout::shared_slots(const EventLayout& other) const {
    const size_t count = std::min(slots_.size(), other.slots_.size());
    uint32_t shared = 0;
    for (; shared < count; ++shared) {
        const Slot& a = slots_[shared];
        const Slot& b = other.slots_[shared];
        if (a.glue_size != b.glue_size || a.field != b.field || a.kind != b.kind || a.in_args != b.in_args ||
            glue_.compare(a.glue_begin, a.glue_size, other.glue_, b.glue_begin, b.glue_size) != 0)
            break;
    }
    return shared;
}

bool EventLayout::same_as(const EventLayout& other) const {
    return slots_.size() == other.slots_.size() && shared_slots(other) == slots_.size() &&
           tail_size_ == other.tail_size_ &&
           glue_.compare(tail_begin_, tail_size_, other.glue_, other.tail_begin_, other.tail_size_) == 0;
}

EventLayouts::Match EventLayouts::parse(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    Match match;
    const size_t count = layouts_.size();
    if (count == 0) return match;
    const char* start = c.p;
    // Kinds of events come in cycles (metadata triples, an op then its
    // runtime call): the layout that followed the last one last time goes
    // first, then the most recently used.
    const uint8_t predicted = successor_[order_[0]];
    int last_tried = -1;
    uint32_t read = 0;  // slots of the event read into e (by last_tried), c.p at the next one's glue
    // While most events do not match (each of a new shape), one try: it
    // reads the members events share, which is not wasted; more tries are.
    const size_t max_tries = miss_score_ < kMissScoreForOneTry ? kMaxTries : 1;
    size_t tries = 0;
    for (size_t k = 0; k <= count && tries < max_tries; ++k) {
        const uint8_t index = k == 0 ? predicted : order_[k - 1];
        if (k > 0 && index == predicted) continue;
        // The text matched last_tried's first `read` slots; a layout that
        // differs from it there cannot match the event.
        if (last_tried >= 0 && shared_[last_tried][index] < read) continue;
        ++tries;
        const EventLayout::Progress progress = layouts_[index].parse_from(read, c, e, strings, scratch);
        if (progress.matched) {
            proven_[index] = true;
            promote(index);
            miss_score_ = miss_score_ > kMatchWeight ? miss_score_ - kMatchWeight : 0;
            match.complete = true;
            return match;
        }
        if (progress.dirty) {  // a value the readers reject: the usual path words the error
            c.p = start;
            e.reset(e.offset);
            return match;
        }
        last_tried = index;
        read = progress.slot;
    }
    if (miss_score_ < 2 * kMissScoreForOneTry) ++miss_score_;
    if (read > 0) {
        match.partial = true;
        match.in_args = layouts_[last_tried].in_args_before(read);
    }
    return match;
}

void EventLayouts::promote(uint8_t index) {
    successor_[order_[0]] = index;
    size_t at = 0;
    while (order_[at] != index) ++at;
    for (; at > 0; --at) order_[at] = order_[at - 1];
    order_[0] = index;
}

void EventLayouts::set_layout(uint8_t index, EventLayout&& layout) {
    if (index == layouts_.size()) {
        layouts_.push_back(std::move(layout));
    } else {
        layouts_[index] = std::move(layout);
    }
    proven_[index] = false;
    for (size_t other = 0; other < layouts_.size(); ++other) {
        const auto shared = static_cast<uint8_t>(layouts_[index].shared_slots(layouts_[other]));
        shared_[index][other] = shared_[other][index] = shared;
    }
}

void EventLayouts::learn(const char* begin, const char* end, std::string& key_scratch) {
    ++misses_since_learn_;
    const size_t count = layouts_.size();
    const auto unproven = static_cast<size_t>(std::count(proven_.begin(), proven_.begin() + count, false));
    if (unproven >= kMaxUnproven) {
        if (misses_since_learn_ < retry_misses_) return;
        retry_misses_ = std::min(2 * retry_misses_, kMaxRetryMisses);  // events of ever-new shapes: back off
    } else {
        retry_misses_ = kRetryMisses;
    }
    misses_since_learn_ = 0;
    EventLayout layout;
    if (!layout.learn(begin, end, key_scratch)) return;
    for (size_t i = 0; i < count; ++i) {
        if (layouts_[i].same_as(layout)) {  // known, but given up on before its turn
            promote(static_cast<uint8_t>(i));
            return;
        }
    }
    uint8_t index;
    if (count < kCapacity) {
        index = static_cast<uint8_t>(count);
        order_[count] = index;
    } else {
        index = order_[count - 1];  // the least recently used
    }
    set_layout(index, std::move(layout));
    promote(index);
}

}  // namespace itercast::trace
