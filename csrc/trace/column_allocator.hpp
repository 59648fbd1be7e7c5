#pragma once
// An allocator for large event columns that keeps their memory for the next
// ones. A fresh mapping's pages are faulted in and zeroed by the kernel as the
// scanner first writes them, a large share of scanning a big trace.
// Allocations of 2 MiB or more are therefore mapped on their own and, when
// freed, kept for reuse up to kCachedBytes in all. Smaller ones use operator new.
//
// Transparent huge pages (madvise MADV_HUGEPAGE) cut the faults too, but the
// kernel may compact memory first, which stalled the scan right after a large
// free. Figures for both: docs/decisions.md.
#include <cstddef>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__unix__)
#include <sys/mman.h>
#endif
#if defined(__unix__) && defined(MAP_ANONYMOUS)
#define ITERCAST_MAPPED_COLUMNS 1
#else
#define ITERCAST_MAPPED_COLUMNS 0
#endif

namespace itercast::trace {

namespace column_memory {

constexpr size_t kLargeBytes = size_t{2} << 20;
constexpr size_t kCachedBytes = size_t{256} << 20;

inline bool is_large(size_t bytes) { return ITERCAST_MAPPED_COLUMNS && bytes >= kLargeBytes; }

// Lengths are rounded to kLargeBytes, so that columns of similar size reuse each other's mappings.
inline size_t mapped_length(size_t bytes) { return (bytes + kLargeBytes - 1) / kLargeBytes * kLargeBytes; }

// Only called for large allocations, which exist only where mappings do.
inline void* map(size_t length) {
#if ITERCAST_MAPPED_COLUMNS
    void* pointer = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return pointer == MAP_FAILED ? nullptr : pointer;
#else
    (void)length;
    return nullptr;
#endif
}

inline void unmap(void* pointer, size_t length) {
#if ITERCAST_MAPPED_COLUMNS
    munmap(pointer, length);
#else
    (void)pointer;
    (void)length;
#endif
}

// The process's large column mappings: those in use, with their lengths (a
// reused mapping may be longer than asked for), and those freed and kept for
// reuse, oldest first.
class Mappings {
public:
    // Never destroyed: numpy may free columns while the interpreter shuts down.
    static Mappings& instance() {
        static auto* mappings = new Mappings();
        return *mappings;
    }

    void* acquire(size_t bytes) {
        const size_t length = mapped_length(bytes);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (void* reused = take_cached(length)) return reused;
        }
        void* fresh = map(length);
        if (fresh == nullptr) return nullptr;
        std::lock_guard<std::mutex> lock(mutex_);
        live_.emplace(fresh, length);
        return fresh;
    }

    void release(void* pointer) {
        std::vector<std::pair<void*, size_t>> evicted;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto found = live_.find(pointer);
            if (found == live_.end()) return;
            cached_.push_back(*found);
            cached_bytes_ += found->second;
            live_.erase(found);
            while (cached_bytes_ > kCachedBytes) {
                evicted.push_back(cached_.front());
                cached_bytes_ -= cached_.front().second;
                cached_.erase(cached_.begin());
            }
        }
        for (const auto& [old, length] : evicted) unmap(old, length);
    }

private:
    // The smallest cached mapping that holds `length` bytes without being more than twice as long.
    void* take_cached(size_t length) {
        auto best = cached_.end();
        for (auto it = cached_.begin(); it != cached_.end(); ++it)
            if (it->second >= length && it->second <= 2 * length && (best == cached_.end() || it->second < best->second))
                best = it;
        if (best == cached_.end()) return nullptr;
        const auto mapping = *best;
        cached_.erase(best);
        cached_bytes_ -= mapping.second;
        live_.insert(mapping);
        return mapping.first;
    }

    std::mutex mutex_;
    std::unordered_map<void*, size_t> live_;
    std::vector<std::pair<void*, size_t>> cached_;
    size_t cached_bytes_ = 0;
};

}  // namespace column_memory

template <class T>
struct ColumnAllocator {
    using value_type = T;

    ColumnAllocator() = default;
    template <class U>
    ColumnAllocator(const ColumnAllocator<U>&) {}

    T* allocate(size_t count) {
        const size_t bytes = count * sizeof(T);
        if (!column_memory::is_large(bytes)) return static_cast<T*>(::operator new(bytes));
        void* pointer = column_memory::Mappings::instance().acquire(bytes);
        if (pointer == nullptr) throw std::bad_alloc();
        return static_cast<T*>(pointer);
    }

    void deallocate(T* pointer, size_t count) {
        if (column_memory::is_large(count * sizeof(T))) {
            column_memory::Mappings::instance().release(pointer);
        } else {
            ::operator delete(pointer);
        }
    }

    // Default-initialises: resize() leaves new numbers unwritten (and their pages untouched).
    template <class U>
    void construct(U* pointer) noexcept {
        ::new (static_cast<void*>(pointer)) U;
    }
    template <class U, class... Args>
    void construct(U* pointer, Args&&... args) {
        ::new (static_cast<void*>(pointer)) U(std::forward<Args>(args)...);
    }

    template <class U>
    bool operator==(const ColumnAllocator<U>&) const { return true; }
    template <class U>
    bool operator!=(const ColumnAllocator<U>&) const { return false; }
};

}  // namespace itercast::trace
