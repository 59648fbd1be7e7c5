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
    switch (first) {
        case '"': return ValueKind::kString;
        case '{': return ValueKind::kObject;
        case '[': return ValueKind::kArray;
        case 't':
        case 'f':
        case 'n': return ValueKind::kLiteral;
        default:
            if (first == '-' || (first >= '0' && first <= '9')) return ValueKind::kNumber;
            return ValueKind::kOther;
    }
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
            slots_.push_back(make_slot(static_cast<uint32_t>(glue_.size()), static_cast<uint32_t>(c.p - glue_start), field, kind));
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

EventLayout::Slot EventLayout::make_slot(uint32_t glue_begin, uint32_t glue_size, Field field, ValueKind kind) {
    Slot slot{glue_begin, glue_size, field, kind, Reader::kField};
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
            case Field::kCat: slot.string = &Event::cat; break;
            case Field::kName: slot.string = &Event::name; break;
            case Field::kPh: slot.reader = Reader::kPhase; break;
            case Field::kNone: slot.reader = Reader::kSkipString; break;
            default: break;
        }
        if (slot.string != nullptr) slot.reader = Reader::kString;
    }
    return slot;
}

// The value at c.p (of the slot's kind) into its column. The inline readers
// take what the fast field readers take, with the same result, and hand
// anything else to read_field.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline bool EventLayout::read_slot(Slot& slot, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    static constexpr int64_t kNanosPerFractionDigits[] = {1000, 100, 10, 1};
    const char* p = c.p;
    switch (slot.reader) {
        case Reader::kTime:
        case Reader::kInt: {
            PlainNumber number;
            if (!read_plain_number(p, c.end, number)) break;
            int64_t value;
            if (slot.reader == Reader::kTime) {
                if (number.fraction_digits > 3 ||
                    __builtin_mul_overflow(static_cast<int64_t>(number.digits),
                                           kNanosPerFractionDigits[number.fraction_digits], &value))
                    break;
            } else {
                if (number.fraction_digits != 0) break;
                value = static_cast<int64_t>(number.digits);
            }
            e.*slot.number = number.negative ? -value : value;
            c.p = p;
            return true;
        }
        case Reader::kSkipNumber: {
            PlainNumber number;
            if (!read_plain_number(p, c.end, number)) break;
            c.p = p;
            return true;
        }
        case Reader::kString:
        case Reader::kSkipString: {
            const char* close = find_quote_or_backslash(p + 1, c.end);
            if (close == c.end || *close != '"') break;
            c.p = close + 1;
            if (slot.reader == Reader::kSkipString) return true;
            const std::string_view text(p + 1, static_cast<size_t>(close - p - 1));
            if (slot.last_id < 0 || !strings.holds(slot.last_id, text)) slot.last_id = strings.intern(text);
            e.*slot.string = slot.last_id;
            return true;
        }
        case Reader::kPhase:
            if (p[2] != '"' || p[1] == '"' || p[1] == '\\') break;
            e.ph = static_cast<uint8_t>(p[1]);
            c.p = p + 3;
            return true;
        case Reader::kField: break;
    }
    read_field(slot.field, c, e, strings, scratch);
    return true;
}

bool EventLayout::parse(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    const char* glue = glue_.data();
    for (Slot& slot : slots_) {
        if (c.end - c.p < static_cast<ptrdiff_t>(slot.glue_size) + 16) return false;
        if (!same_glue(c.p, glue + slot.glue_begin, slot.glue_size)) return false;
        c.p += slot.glue_size;
        if (kind_of(*c.p) != slot.kind) return false;
        read_slot(slot, c, e, strings, scratch);
    }
    if (c.end - c.p < static_cast<ptrdiff_t>(tail_size_) + 16) return false;
    if (!same_glue(c.p, glue + tail_begin_, tail_size_)) return false;
    c.p += tail_size_;
    return true;
}

bool EventLayouts::parse(Cursor& c, Event& e, StringTable& strings, EventScratch& scratch) {
    const size_t count = layouts_.size();
    if (count == 0) return false;
    const char* start = c.p;
    const int64_t offset = e.offset;
    ++clock_;
    // Kinds of events come in cycles (metadata triples, an op then its
    // kernel): the layout that followed the last one last time goes first.
    const size_t predicted = successor_[last_hit_];
    for (size_t tried = 0; tried <= count; ++tried) {
        size_t index;
        if (tried == 0) {
            index = predicted;
        } else if (tried == 1) {
            index = last_hit_;
        } else {
            index = tried - 2;
        }
        if (index >= count || (tried > 0 && index == predicted) || (tried > 1 && index == last_hit_)) continue;
        bool matched = false;
        try {
            matched = layouts_[index].parse(c, e, strings, scratch);
        } catch (const NeedMore&) {
        } catch (const ParseError&) {
        }
        if (matched) {
            successor_[last_hit_] = static_cast<uint8_t>(index);
            last_hit_ = index;
            layouts_[index].last_used = clock_;
            proven_[index] = true;
            return true;
        }
        c.p = start;
        e.reset(offset);
    }
    return false;
}

void EventLayouts::learn(const char* begin, const char* end, std::string& key_scratch) {
    ++misses_since_learn_;
    const auto unproven = std::count(proven_.begin(), proven_.end(), false);
    if (unproven >= kMaxUnproven && misses_since_learn_ < kRetryMisses) return;
    EventLayout layout;
    if (!layout.learn(begin, end, key_scratch)) return;
    misses_since_learn_ = 0;
    layout.last_used = ++clock_;
    if (layouts_.size() < kCapacity) {
        layouts_.push_back(std::move(layout));
        proven_.push_back(false);
        successor_[last_hit_] = static_cast<uint8_t>(layouts_.size() - 1);
        last_hit_ = layouts_.size() - 1;
        return;
    }
    const auto oldest = std::min_element(layouts_.begin(), layouts_.end(), [](const auto& a, const auto& b) {
        return a.last_used < b.last_used;
    });
    const size_t index = static_cast<size_t>(oldest - layouts_.begin());
    layouts_[index] = std::move(layout);
    proven_[index] = false;
    successor_[last_hit_] = static_cast<uint8_t>(index);
    last_hit_ = index;
}

}  // namespace itercast::trace
