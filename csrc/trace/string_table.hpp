#pragma once
// Interns strings (event names, categories, raw shape text) to dense int32 ids.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace itercast::trace {

class StringTable {
public:
    StringTable();
    // Id of `text`, adding it if new. Ids are dense and start at 0.
    int32_t intern(std::string_view text);
    // intern(), checking first whether `text` is the string of id `last`
    // (a field's previous value, or -1), which then needs no hashing; sets `last`.
    int32_t intern_recent(std::string_view text, int32_t& last) {
        if (last >= 0) {
            const std::string_view previous = strings_[static_cast<size_t>(last)];
            if (previous.size() == text.size() && std::memcmp(previous.data(), text.data(), text.size()) == 0)
                return last;
        }
        return last = intern(text);
    }
    // Id of `text`, or -1 if it was never interned.
    int32_t find(std::string_view text) const;
    std::string_view at(int32_t id) const { return strings_[static_cast<size_t>(id)]; }
    size_t size() const { return strings_.size(); }

private:
    void grow();
    size_t slot_for(std::string_view text, uint64_t hash) const;

    // Strings live in stable chunks so string_views stay valid as the table grows.
    std::vector<std::unique_ptr<char[]>> chunks_;
    size_t chunk_used_ = 0;
    size_t chunk_capacity_ = 0;
    std::vector<std::string_view> strings_;
    std::vector<uint64_t> hashes_;
    std::vector<int32_t> slots_;  // open addressing, -1 = empty
};

uint64_t hash_bytes(const char* data, size_t size);

}  // namespace itercast::trace
