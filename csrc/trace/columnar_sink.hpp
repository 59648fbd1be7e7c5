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

    // Columns are grown ahead in steps, so that adding an event is one store
    // per column, not a capacity check per column; trim() before reading them.
    void on_event(const Event& event) override {
        if (size_ == room_) make_room(size_ < kMinRoom ? kMinRoom : size_);
#define ITERCAST_STORE_COLUMN(type, field) field[size_] = event.field;
        ITERCAST_EVENT_COLUMNS(ITERCAST_STORE_COLUMN)
#undef ITERCAST_STORE_COLUMN
        ++size_;
    }

    size_t size() const { return size_; }

    // Makes room for `events` more events, so that columns do not regrow (and
    // copy) while a trace of known size is scanned. The room is not written
    // (ColumnAllocator leaves new values uninitialised), so costs no RSS.
    void reserve(size_t events) {
        if (size_ + events > room_) make_room(size_ + events - room_);
    }

    // Cuts every column to the events received.
    void trim() {
        room_ = size_;
        resize_columns();
    }

private:
    static constexpr size_t kMinRoom = 4096;

    void make_room(size_t events) {
        room_ += events;
        resize_columns();
    }

    void resize_columns() {
#define ITERCAST_RESIZE_COLUMN(type, field) field.resize(room_);
        ITERCAST_EVENT_COLUMNS(ITERCAST_RESIZE_COLUMN)
#undef ITERCAST_RESIZE_COLUMN
    }

    size_t size_ = 0;  // events received
    size_t room_ = 0;  // the columns' length
};

}  // namespace itercast::trace
