#pragma once
// Interns strings (event names, categories, raw shape text) to dense int32 ids.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace itercast::trace {

inline uint64_t load_word(const char* p) {
    uint64_t value;
    std::memcpy(&value, p, 8);
    return value;
}

// 64-bit hash of the n bytes at data, inline and without a call for the tail.
inline uint64_t hash_bytes(const char* data, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xc2b2ae3d27d4eb4fULL);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) h = (h ^ load_word(data + i)) * 0x100000001b3ULL * 31 + (h >> 29);
    uint64_t tail = 0;  // the last n - i bytes, little-endian
    if (n >= 8) {
        if (i < n) tail = load_word(data + n - 8) >> (8 * (8 - (n - i)));
    } else {
        for (size_t k = 0; k < n; ++k) tail |= uint64_t{static_cast<unsigned char>(data[k])} << (8 * k);
    }
    h ^= tail;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

// Whether the n bytes at a and b are equal; inline word compares, since
// interned texts are mostly short and a call to memcmp costs more than the compare.
inline bool same_bytes(const char* a, const char* b, size_t n) {
    const auto word = load_word;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8)
            if (word(a + i) != word(b + i)) return false;
        return word(a + n - 8) == word(b + n - 8);  // the last 8 bytes, overlapping
    }
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

class StringTable {
public:
    StringTable();
    // Id of `text`, adding it if new. Ids are dense and start at 0.
    int32_t intern(std::string_view text) {
        const uint64_t hash = hash_bytes(text.data(), text.size());
        const size_t slot = slot_for(text, hash);
        return slots_[slot].id >= 0 ? slots_[slot].id : add(text, hash, slot);
    }
    // intern(), checking first whether `text` is the string of id `last`
    // (a field's previous value, or -1), which then needs no hashing; sets `last`.
    int32_t intern_recent(std::string_view text, int32_t& last) {
        if (last >= 0 && holds(last, text)) return last;
        return last = intern(text);
    }
    // Whether `id` is the id of `text`.
    bool holds(int32_t id, std::string_view text) const {
        const std::string_view string = strings_[static_cast<size_t>(id)];
        return string.size() == text.size() && same_bytes(string.data(), text.data(), text.size());
    }
    // Id of `text`, or -1 if it was never interned.
    int32_t find(std::string_view text) const { return slots_[slot_for(text, hash_bytes(text.data(), text.size()))].id; }
    std::string_view at(int32_t id) const { return strings_[static_cast<size_t>(id)]; }
    size_t size() const { return strings_.size(); }

private:
    // Open addressing: the id (-1 = empty) with the high half of its string's
    // hash, so that a probe rarely needs to look at the string itself.
    struct Slot {
        uint32_t hash_high;
        int32_t id;
    };

    size_t slot_for(std::string_view text, uint64_t hash) const {
        const size_t mask = slots_.size() - 1;
        const auto high = static_cast<uint32_t>(hash >> 32);
        for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
            const Slot& entry = slots_[slot];
            if (entry.id < 0) return slot;
            if (entry.hash_high == high) {
                const std::string_view stored = strings_[static_cast<size_t>(entry.id)];
                if (stored.size() == text.size() && same_bytes(stored.data(), text.data(), text.size())) return slot;
            }
        }
    }
    int32_t add(std::string_view text, uint64_t hash, size_t slot);
    void grow();

    // Strings live in stable chunks so string_views stay valid as the table grows.
    std::vector<std::unique_ptr<char[]>> chunks_;
    size_t chunk_used_ = 0;
    size_t chunk_capacity_ = 0;
    std::vector<std::string_view> strings_;
    std::vector<uint64_t> hashes_;
    std::vector<Slot> slots_;
};

}  // namespace itercast::trace
