// SPDX-License-Identifier: MIT
// The pointer tables of the allocation hooks: what they must know about each
// live block, looked up again when it is freed.
#pragma once

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace heapgate::detail {

// Usable sizes are multiples of 8, and above 16 KiB multiples of 4 KiB
// (jemalloc's size classes), so 32 bits hold them exactly: in 8-byte units
// below 16 GiB, else in pages (flagged by the top bit) up to 8 TiB.
inline constexpr std::uint32_t kPageUnits = 1u << 31;
inline std::uint32_t pack_size(std::uint64_t usize) noexcept {
  if ((usize >> 3) < kPageUnits) return static_cast<std::uint32_t>(usize >> 3);
  return kPageUnits | static_cast<std::uint32_t>(std::min<std::uint64_t>(usize >> 12, kPageUnits - 1));
}
inline std::uint64_t unpack_size(std::uint32_t packed) noexcept {
  return (packed & kPageUnits) != 0 ? std::uint64_t{packed & ~kPageUnits} << 12 : std::uint64_t{packed} << 3;
}

// Open addressing keyed by the block's address (Entry::key, 0 = empty) with
// linear probing and backward-shift deletion, behind a spin lock. Memory comes
// from mmap, so the table never re-enters malloc.
template <typename Entry>
class LiveTable {
 public:
  // Spins briefly, then yields: with more threads than cores (8 threads in
  // one `exact` window on 2 cores), a holder that lost its core kept the
  // others spinning for their whole time slice.
  void lock() noexcept {
    unsigned spins = 0;
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < kSpinsBeforeYield) {
          __builtin_ia32_pause();
        } else {
          ::sched_yield();
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }

  // Unmap a table once it has been copied into a larger one (see grow()):
  // for a table that lives as long as the process (`heapgate record`), where
  // the memory matters more than a few TLB flushes.
  void release_old_tables(bool on) noexcept { release_old_ = on; }

  // Both under lock().
  void insert(Entry entry) noexcept {
    if ((count_ + 1) * 2 > capacity_ && !grow()) return;  // out of memory: the entry is not tracked
    std::size_t i = index(entry.key);
    while (slots_[i].key != 0 && slots_[i].key != entry.key) i = (i + 1) & (capacity_ - 1);
    if (slots_[i].key == 0) ++count_;
    slots_[i] = entry;
  }

  bool erase(std::uintptr_t key, Entry* out) noexcept {
    if (count_ == 0) return false;
    std::size_t mask = capacity_ - 1;
    std::size_t i = index(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return false;
      i = (i + 1) & mask;
    }
    *out = slots_[i];
    // Backward-shift deletion keeps probe chains intact without tombstones.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask; slots_[j].key != 0; j = (j + 1) & mask) {
      std::size_t home = index(slots_[j].key);
      bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].key = 0;
    --count_;
    return true;
  }

  void clear() noexcept {
    if (count_ == 0) return;
    std::memset(static_cast<void*>(slots_), 0, capacity_ * sizeof(Entry));
    count_ = 0;
  }

 private:
  // Keeps locality: the blocks of one 4 KiB page (jemalloc hands out a slab's
  // regions in address order) share one run of 256 slots, so a loop that
  // allocates or frees in address order touches a few cache lines, not one
  // random line per block (a 200k-block std::map test: 0.20 s -> 0.16 s).
  static std::size_t hash(std::uintptr_t key) noexcept {
    auto page = static_cast<std::size_t>((key >> 12) * 0x9E3779B97F4A7C15ull >> 20);
    return (page << 8) + ((key >> 4) & 0xff);
  }
  std::size_t index(std::uintptr_t key) const noexcept { return hash(key) & (capacity_ - 1); }

  __attribute__((noinline, cold)) bool grow() noexcept {
    std::size_t new_capacity = capacity_ == 0 ? 1024 : capacity_ * 2;
    // MAP_POPULATE: one system call maps the pages. Faulting them in one by
    // one on first touch cost more than the inserts themselves on the
    // virtualized machine of docs/performance.md.
    void* mem = ::mmap(nullptr, new_capacity * sizeof(Entry), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) return false;
    Entry* old = slots_;
    std::size_t old_capacity = capacity_;
    slots_ = static_cast<Entry*>(mem);
    capacity_ = new_capacity;
    count_ = 0;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].key != 0) insert(old[i]);
    }
    // The old table stays mapped (and resident, about as much as the new one
    // again): unmapping it flushes the TLB of every CPU the process ran on,
    // and on the virtualized machine of docs/performance.md those flushes
    // were most of a 200k-block test's `counters` overhead.
    if (release_old_ && old != nullptr) ::munmap(old, old_capacity * sizeof(Entry));
    return true;
  }

  static constexpr unsigned kSpinsBeforeYield = 128;
  std::atomic<bool> locked_{false};
  bool release_old_ = false;
  Entry* slots_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t count_ = 0;
};

}  // namespace heapgate::detail
