#include "trace/string_table.hpp"

#include <algorithm>
#include <cstring>

namespace itercast::trace {

namespace {
constexpr size_t kInitialSlots = 1024;
constexpr size_t kChunkBytes = 1 << 16;
}  // namespace

StringTable::StringTable() : slots_(kInitialSlots, Slot{0, -1}) {}

int32_t StringTable::add(std::string_view text, uint64_t hash, size_t slot) {
    // The empty string needs no storage (and there may be no chunk yet to point into).
    const char* stored = "";
    if (!text.empty()) {
        if (chunk_used_ + text.size() > chunk_capacity_) {
            chunk_capacity_ = std::max(kChunkBytes, text.size());
            chunks_.emplace_back(new char[chunk_capacity_]);
            chunk_used_ = 0;
        }
        char* copy = chunks_.back().get() + chunk_used_;
        std::memcpy(copy, text.data(), text.size());
        chunk_used_ += text.size();
        stored = copy;
    }

    const auto id = static_cast<int32_t>(strings_.size());
    strings_.emplace_back(stored, text.size());
    hashes_.push_back(hash);
    slots_[slot] = Slot{static_cast<uint32_t>(hash >> 32), id};
    if (strings_.size() * 2 > slots_.size()) grow();
    return id;
}

void StringTable::grow() {
    std::vector<Slot> bigger(slots_.size() * 2, Slot{0, -1});
    slots_.swap(bigger);
    const size_t mask = slots_.size() - 1;
    for (size_t id = 0; id < strings_.size(); ++id) {
        size_t slot = hashes_[id] & mask;
        while (slots_[slot].id >= 0) slot = (slot + 1) & mask;
        slots_[slot] = Slot{static_cast<uint32_t>(hashes_[id] >> 32), static_cast<int32_t>(id)};
    }
}

}  // namespace itercast::trace
