// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Where the allocation hooks remember which window a live block was allocated
// in: a stamp beside each 8-byte granule of the heap, found from the block's
// address alone (docs/performance.md, "A stamp per block").
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace heapgate::detail {

// A stamp is the epoch of the window the block at that address was allocated
// in, 0 if none. A hash table of live blocks missed the cache on almost every
// insert and erase once 100k+ blocks stayed live, and had to grow and be
// cleared. A stamp sits at a fixed place computed from the address, and
// jemalloc hands out a slab's regions in address order, so a loop that
// allocates or frees neighbours touches neighbouring stamps. No lock: a block
// is stamped by the thread that allocates it and read by the one that frees
// it, which the program itself must order after the allocation.
//
// One stamp per granule of 2^GranuleBits bytes: two live blocks must never
// share a granule. The hooks keep two maps: 16-byte granules for blocks whose
// usable size is a multiple of 16 (jemalloc places those 16-byte aligned),
// 8-byte granules for the rest (its 8-byte class); half the memory of 8-byte
// granules for everything.
//
// Stamps of blocks freed while no hook ran stay behind. They are harmless:
// windows opened later have higher epochs, and a block counts in a window
// only when its stamp is the window's epoch or later.
//
// Memory: two levels, as a page table. The top level has a slot per 256 MiB
// of the 48-bit address space (8 MiB of reserved, mostly untouched memory);
// each leaf holds the stamps of 256 MiB of heap (64 or 128 MiB reserved;
// pages are backed only where blocks were stamped).
template <unsigned GranuleBits>
class BlockStamps {
 public:
  using Stamp = std::atomic<std::uint32_t>;
  static constexpr unsigned kAddressBits = 48;
  static constexpr unsigned kLeafBits = 28;  // heap bytes per leaf: 256 MiB
  static constexpr unsigned kGranuleBits = GranuleBits;

  // Reserves the top level; false (and every lookup nullptr) if it cannot.
  bool init() noexcept {
    void* mem = ::mmap(nullptr, kTopSlots * sizeof(Leaf), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return false;
    top_ = static_cast<std::atomic<Stamp*>*>(mem);
    return true;
  }

  // The stamp of the block at `address`, nullptr if no block there was ever stamped.
  Stamp* find(std::uintptr_t address) const noexcept {
    if (top_ == nullptr || (address >> kAddressBits) != 0) return nullptr;
    Stamp* leaf = top_[address >> kLeafBits].load(std::memory_order_acquire);
    return leaf == nullptr ? nullptr : leaf + ((address & kLeafMask) >> kGranuleBits);
  }

  // The stamp of the block at `address`, mapping its leaf first if needed;
  // nullptr if the address is beyond kAddressBits or memory ran out.
  Stamp* find_or_add(std::uintptr_t address) noexcept {
    if (Stamp* stamp = find(address)) return stamp;
    if (top_ == nullptr || (address >> kAddressBits) != 0) return nullptr;
    Stamp* leaf = add_leaf(top_[address >> kLeafBits]);
    return leaf == nullptr ? nullptr : leaf + ((address & kLeafMask) >> kGranuleBits);
  }

  // Forgets every stamp (for when epochs are about to wrap). Only while no
  // hook stamps: a stamp written concurrently would merely be stale.
  void clear() noexcept {
    if (top_ == nullptr) return;
    for (std::size_t i = 0; i < kTopSlots; ++i) {
      if (Stamp* leaf = top_[i].load(std::memory_order_acquire)) (void)::madvise(leaf, kLeafStampBytes, MADV_DONTNEED);
    }
  }

 private:
  using Leaf = std::atomic<Stamp*>;
  static constexpr std::size_t kTopSlots = std::size_t{1} << (kAddressBits - kLeafBits);
  static constexpr std::uintptr_t kLeafMask = (std::uintptr_t{1} << kLeafBits) - 1;
  static constexpr std::size_t kLeafStampBytes = (std::size_t{1} << (kLeafBits - kGranuleBits)) * sizeof(Stamp);

  __attribute__((noinline, cold)) static Stamp* add_leaf(Leaf& slot) noexcept {
    void* mem = ::mmap(nullptr, kLeafStampBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    // Huge pages where the system allows them on request: a big live heap
    // would otherwise take a page fault per 16 KiB of it.
    (void)::madvise(mem, kLeafStampBytes, MADV_HUGEPAGE);
    Stamp* expected = nullptr;
    auto* leaf = static_cast<Stamp*>(mem);
    if (slot.compare_exchange_strong(expected, leaf, std::memory_order_acq_rel)) return leaf;
    ::munmap(mem, kLeafStampBytes);  // another thread added it first
    return expected;
  }

  std::atomic<Stamp*>* top_ = nullptr;
};

}  // namespace heapgate::detail
