#pragma once
// Collects events column by column (one vector per field).
#include <vector>

#include "trace/column_allocator.hpp"
#include "trace/event.hpp"

namespace itercast::trace {

class ColumnarSink : public EventSink {
public:
    template <class T>
    using Column = std::vector<T, ColumnAllocator<T>>;

#define ITERCAST_DECLARE_COLUMN(type, field) Column<type> field;
    ITERCAST_EVENT_COLUMNS(ITERCAST_DECLARE_COLUMN)
#undef ITERCAST_DECLARE_COLUMN

    void on_event(const Event& event) override {
#define ITERCAST_PUSH_COLUMN(type, field) field.push_back(event.field);
        ITERCAST_EVENT_COLUMNS(ITERCAST_PUSH_COLUMN)
#undef ITERCAST_PUSH_COLUMN
    }

    size_t size() const { return offset.size(); }

    // Makes room for `events` more events, so that columns do not regrow (and
    // copy) while a trace of known size is scanned.
    void reserve(size_t events) {
#define ITERCAST_RESERVE_COLUMN(type, field) field.reserve(field.size() + events);
        ITERCAST_EVENT_COLUMNS(ITERCAST_RESERVE_COLUMN)
#undef ITERCAST_RESERVE_COLUMN
    }
};

}  // namespace itercast::trace
