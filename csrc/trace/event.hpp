#pragma once
// One trace event as the scanner extracts it. Strings are interned ids.
#include <cstdint>
#include <limits>

namespace itercast::trace {

// Value of an integer field that the event does not carry.
constexpr int64_t kMissing = std::numeric_limits<int64_t>::min();
// Value of a string-id field that the event does not carry.
constexpr int32_t kNoString = -1;

// Bits of Event::flags: which integer-or-string fields held a string
// (then the field holds the interned id of that string).
enum EventFlag : uint8_t {
    kPidIsString = 1,
    kTidIsString = 2,
    kStreamIsString = 4,
};

// X-macro over every per-event column: (C++ type, field name).
// One list drives the struct, the columnar sink and the Python export.
#define ITERCAST_EVENT_COLUMNS(X) \
    X(int64_t, offset)            \
    X(uint8_t, ph)                \
    X(uint8_t, flags)             \
    X(int32_t, cat)               \
    X(int32_t, name)              \
    X(int64_t, ts_ns)             \
    X(int64_t, dur_ns)            \
    X(int64_t, pid)               \
    X(int64_t, tid)               \
    X(int64_t, external_id)       \
    X(int64_t, correlation)       \
    X(int64_t, sequence_number)   \
    X(int64_t, fwd_thread_id)     \
    X(int64_t, stream)            \
    X(int64_t, device)            \
    X(int64_t, bytes)             \
    X(int32_t, input_dims)        \
    X(int32_t, input_types)       \
    X(int32_t, concrete_inputs)   \
    X(int32_t, grid_x)            \
    X(int32_t, grid_y)            \
    X(int32_t, grid_z)            \
    X(int32_t, block_x)           \
    X(int32_t, block_y)           \
    X(int32_t, block_z)

struct Event {
#define ITERCAST_DECLARE_FIELD(type, field) type field;
    ITERCAST_EVENT_COLUMNS(ITERCAST_DECLARE_FIELD)
#undef ITERCAST_DECLARE_FIELD

    void reset(int64_t at) {
        offset = at;
        ph = 0;
        flags = 0;
        cat = name = input_dims = input_types = concrete_inputs = kNoString;
        ts_ns = dur_ns = pid = tid = kMissing;
        external_id = correlation = sequence_number = fwd_thread_id = kMissing;
        stream = device = bytes = kMissing;
        grid_x = grid_y = grid_z = block_x = block_y = block_z = -1;
    }
};

// Receives events in file order as the scanner finishes them.
class EventSink {
public:
    virtual ~EventSink() = default;
    virtual void on_event(const Event& event) = 0;
};

}  // namespace itercast::trace
