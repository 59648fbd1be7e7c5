#pragma once
// Reads one trace event object (a complete '{...}' in one buffer) into an Event,
// by the first of three paths that accepts it: a learned layout of its kind
// (event_layout.hpp), a fast member-by-member reader, and the general reader
// that checks every byte and words the errors. All three give the same event.
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/event.hpp"
#include "trace/event_field.hpp"
#include "trace/event_layout.hpp"
#include "trace/json_cursor.hpp"
#include "trace/string_table.hpp"

namespace itercast::trace {

// Buffers and per-field caches that parse_event reuses from one event to the next.
struct EventScratch {
    std::string text;  // an unescaped string value
    std::string key;   // an unescaped key
    // Each field's previous interned id (StringTable::intern_recent).
    int32_t last_cat = -1, last_name = -1, last_input_types = -1, last_input_dims = -1, last_id_string = -1;
    int32_t last_concrete_inputs = -1;
    EventLayouts layouts;
};

// At a key string: its unescaped text, and c.p past the ':' after it.
std::string_view read_key(Cursor& c, std::string& scratch);

// Reads the value at c.p (after any space) into its column and moves past it.
// Throws NeedMore if the buffer ends first, ParseError on a malformed value.
void read_field(Field field, Cursor& c, Event& e, StringTable& strings, EventScratch& scratch);

// Parses one complete event object starting at c.p ('{'). Throws NeedMore if
// the buffer ends first, ParseError if it is malformed.
void parse_event(Cursor& c, Event& event, StringTable& strings, EventScratch& scratch);

}  // namespace itercast::trace
