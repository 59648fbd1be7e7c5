#include "trace/value_splitter.hpp"

#include "trace/json_cursor.hpp"

namespace itercast::trace {

void ValueSplitter::reset() {
    kind_ = Kind::kNone;
    stack_.clear();
    in_string_ = false;
    escape_ = false;
}

ValueSplitter::Status ValueSplitter::scan_string_byte(char c) {
    if (escape_) {
        escape_ = false;
    } else if (c == '\\') {
        escape_ = true;
    } else if (c == '"') {
        in_string_ = false;
        if (kind_ == Kind::kString) return Status::kDone;
    }
    return Status::kNeedMore;
}

ValueSplitter::Status ValueSplitter::scan(const char* data, size_t size, size_t& consumed) {
    size_t i = 0;
    if (kind_ == Kind::kNone && size > 0) {
        const char c = data[0];
        if (c == '"') {
            kind_ = Kind::kString;
            in_string_ = true;
            i = 1;
        } else if (c == '{' || c == '[') {
            kind_ = Kind::kContainer;
        } else if (is_scalar_char(c)) {
            kind_ = Kind::kScalar;
        } else {
            consumed = 0;
            return Status::kMalformed;
        }
    }
    for (; i < size; ++i) {
        const char c = data[i];
        if (in_string_) {
            if (scan_string_byte(c) == Status::kDone) {
                consumed = i + 1;
                return Status::kDone;
            }
            continue;
        }
        if (kind_ == Kind::kScalar) {
            if (!is_scalar_char(c)) {
                consumed = i;
                return Status::kDone;
            }
            continue;
        }
        switch (c) {
            case '"': in_string_ = true; break;
            case '{':
            case '[': stack_.push_back(c); break;
            case '}':
            case ']':
                if (stack_.empty() || stack_.back() != (c == '}' ? '{' : '[')) {
                    consumed = i;
                    return Status::kMalformed;
                }
                stack_.pop_back();
                if (stack_.empty()) {
                    consumed = i + 1;
                    return Status::kDone;
                }
                break;
            default: break;
        }
    }
    consumed = size;
    return Status::kNeedMore;
}

}  // namespace itercast::trace
