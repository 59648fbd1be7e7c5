#include "trace/string_table.hpp"

#include <algorithm>
#include <cstring>

namespace itercast::trace {

namespace {
constexpr size_t kInitialSlots = 1024;
constexpr size_t kChunkBytes = 1 << 16;

inline uint64_t load64(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}
}  // namespace

uint64_t hash_bytes(const char* data, size_t size) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (size * 0xc2b2ae3d27d4eb4fULL);
    size_t i = 0;
    for (; i + 8 <= size; i += 8) h = (h ^ load64(data + i)) * 0x100000001b3ULL * 31 + (h >> 29);
    uint64_t tail = 0;
    std::memcpy(&tail, data + i, size - i);
    return mix(h ^ tail);
}

StringTable::StringTable() : slots_(kInitialSlots, -1) {}

size_t StringTable::slot_for(std::string_view text, uint64_t hash) const {
    const size_t mask = slots_.size() - 1;
    size_t slot = hash & mask;
    while (true) {
        const int32_t id = slots_[slot];
        if (id < 0) return slot;
        const auto idx = static_cast<size_t>(id);
        if (hashes_[idx] == hash && strings_[idx] == text) return slot;
        slot = (slot + 1) & mask;
    }
}

int32_t StringTable::find(std::string_view text) const {
    return slots_[slot_for(text, hash_bytes(text.data(), text.size()))];
}

int32_t StringTable::intern(std::string_view text) {
    const uint64_t hash = hash_bytes(text.data(), text.size());
    size_t slot = slot_for(text, hash);
    if (slots_[slot] >= 0) return slots_[slot];

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
    slots_[slot] = id;
    if (strings_.size() * 2 > slots_.size()) grow();
    return id;
}

void StringTable::grow() {
    std::vector<int32_t> old(slots_.size() * 2, -1);
    slots_.swap(old);
    const size_t mask = slots_.size() - 1;
    for (size_t id = 0; id < strings_.size(); ++id) {
        size_t slot = hashes_[id] & mask;
        while (slots_[slot] >= 0) slot = (slot + 1) & mask;
        slots_[slot] = static_cast<int32_t>(id);
    }
}

}  // namespace itercast::trace
