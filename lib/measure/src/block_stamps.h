// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Where the allocation hooks remember which window a live block was allocated
// in: a stamp beside each granule of the heap, found from the block's
// address alone (docs/performance.md, "A stamp per block").
#pragma once

#include <sys/mman.h>

#include <algorithm>
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
// One stamp per granule of the heap, and two live blocks must never share a
// granule. Granules grow with the block: a block is stamped in the map whose
// granule is its usable size rounded down to a power of two 2^k (k from 3,
// jemalloc's 8-byte class, to 12, a page, for every larger block). Live blocks
// do not overlap, so two of them in the same map start at least 2^k bytes
// apart, in different granules. A map of 8-byte granules for everything cost
// 4 bytes of stamps per 8 of heap; most of that memory was fresh pages the
// kernel had to zero, which on the machine of docs/performance.md cost more
// than the stamping itself.
//
// Stamps of blocks freed while no hook ran stay behind. They are harmless:
// windows opened later have higher epochs, and a block counts in a window
// only when its stamp is the window's epoch or later.
//
// Memory: two levels, as a page table. The top level has a slot per region of
// 256 MiB of the 48-bit address space (8 MiB reserved, mostly untouched);
// a region holds one leaf per granule size, of 128 MiB (8-byte granules) down
// to 256 KiB (pages) reserved. Only pages where blocks were stamped are backed.
class BlockStamps {
 public:
  using Stamp = std::atomic<std::uint32_t>;
  static constexpr unsigned kAddressBits = 48;
  static constexpr unsigned kRegionBits = 28;  // heap bytes per region: 256 MiB
  static constexpr unsigned kMinGranuleBits = 3;
  static constexpr unsigned kMaxGranuleBits = 12;

  // Reserves the top level; false (and every lookup nullptr) if it cannot.
  bool init() noexcept {
    top_ = static_cast<std::atomic<Region*>*>(reserve(kTopSlots * sizeof(std::atomic<Region*>), false));
    return top_ != nullptr;
  }

  // The stamp of the block of usable size `usize` at `address`, nullptr if
  // no block of its granule size there was ever stamped.
  Stamp* find(std::uintptr_t address, std::uint64_t usize) const noexcept { return locate<false>(address, usize); }

  // The same, mapping the region and the leaf first if needed; nullptr if
  // the address is beyond kAddressBits or memory ran out.
  Stamp* find_or_add(std::uintptr_t address, std::uint64_t usize) const noexcept {
    return locate<true>(address, usize);
  }

  // Forgets every stamp (for when epochs are about to wrap). Only while no
  // hook stamps: a stamp written concurrently would merely be stale.
  void clear() noexcept {
    if (top_ == nullptr) return;
    for (std::size_t i = 0; i < kTopSlots; ++i) {
      Region* region = top_[i].load(std::memory_order_acquire);
      if (region == nullptr) continue;
      for (unsigned bits = kMinGranuleBits; bits <= kMaxGranuleBits; ++bits) {
        if (Stamp* leaf = region->leaves[bits - kMinGranuleBits].load(std::memory_order_acquire)) {
          (void)::madvise(leaf, leaf_bytes(bits), MADV_DONTNEED);
        }
      }
    }
  }

 private:
  struct Region {
    std::atomic<Stamp*> leaves[kMaxGranuleBits - kMinGranuleBits + 1];
  };
  // The stamps of blocks up to 255 bytes are dense (at least one per 128
  // bytes of their heap): their leaves ask for huge pages, where the system
  // grants them on request, one fault per 2 MiB of stamps instead of 512.
  // On the machine of docs/performance.md that took bench/anchor_suite's
  // counters from 1.36x to 1.27x of off. Sparser leaves stay on small pages,
  // so a small suite does not back 2 MiB per granule size it touches.
  static constexpr unsigned kHugePageGranuleBits = 7;
  static constexpr std::size_t kTopSlots = std::size_t{1} << (kAddressBits - kRegionBits);
  static constexpr std::uintptr_t kRegionMask = (std::uintptr_t{1} << kRegionBits) - 1;

  // Widened first: shifting a 32-bit uintptr_t by 48 would be undefined.
  static bool in_range(std::uintptr_t address) noexcept {
    return (static_cast<std::uint64_t>(address) >> kAddressBits) == 0;
  }
  static unsigned granule_bits(std::uint64_t usize) noexcept {
    const auto bits = static_cast<unsigned>(63 - __builtin_clzll(usize | 1));
    return std::clamp(bits, kMinGranuleBits, kMaxGranuleBits);
  }
  static constexpr std::size_t leaf_bytes(unsigned bits) noexcept {
    return (std::size_t{1} << (kRegionBits - bits)) * sizeof(Stamp);
  }

  template <bool kAdd>
  Stamp* locate(std::uintptr_t address, std::uint64_t usize) const noexcept {
    if (top_ == nullptr || !in_range(address)) return nullptr;
    std::atomic<Region*>& region_slot = top_[address >> kRegionBits];
    Region* region = region_slot.load(std::memory_order_acquire);
    if (region == nullptr) {
      if (!kAdd) return nullptr;
      region = add(region_slot, sizeof(Region), false);
      if (region == nullptr) return nullptr;
    }
    const unsigned bits = granule_bits(usize);
    std::atomic<Stamp*>& leaf_slot = region->leaves[bits - kMinGranuleBits];
    Stamp* leaf = leaf_slot.load(std::memory_order_acquire);
    if (leaf == nullptr) {
      if (!kAdd) return nullptr;
      leaf = add(leaf_slot, leaf_bytes(bits), bits <= kHugePageGranuleBits);
      if (leaf == nullptr) return nullptr;
    }
    return leaf + ((address & kRegionMask) >> bits);
  }

  // Zeroed memory from the kernel, backed only where touched; nullptr if none.
  static void* reserve(std::size_t bytes, bool huge_pages) noexcept {
    void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    if (huge_pages) (void)::madvise(mem, bytes, MADV_HUGEPAGE);
    return mem;
  }

  // Memory for a region or a leaf, published in `slot` unless another
  // thread got there first; nullptr if there is no memory.
  template <typename T>
  __attribute__((noinline, cold)) static T* add(std::atomic<T*>& slot, std::size_t bytes, bool huge_pages) noexcept {
    void* mem = reserve(bytes, huge_pages);
    if (mem == nullptr) return nullptr;
    T* expected = nullptr;
    if (slot.compare_exchange_strong(expected, static_cast<T*>(mem), std::memory_order_acq_rel)) {
      return static_cast<T*>(mem);
    }
    ::munmap(mem, bytes);  // another thread added it first
    return expected;
  }

  std::atomic<Region*>* top_ = nullptr;
};

}  // namespace heapgate::detail
