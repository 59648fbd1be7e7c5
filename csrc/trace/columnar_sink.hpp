#pragma once
// Collects events column by column (one vector per field).
#include <vector>

#include "trace/event.hpp"

namespace itercast::trace {

class ColumnarSink : public EventSink {
public:
#define ITERCAST_DECLARE_COLUMN(type, field) std::vector<type> field;
    ITERCAST_EVENT_COLUMNS(ITERCAST_DECLARE_COLUMN)
#undef ITERCAST_DECLARE_COLUMN

    void on_event(const Event& event) override {
#define ITERCAST_PUSH_COLUMN(type, field) field.push_back(event.field);
        ITERCAST_EVENT_COLUMNS(ITERCAST_PUSH_COLUMN)
#undef ITERCAST_PUSH_COLUMN
    }

    size_t size() const { return offset.size(); }
};

}  // namespace itercast::trace
