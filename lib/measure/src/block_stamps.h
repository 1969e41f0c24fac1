// SPDX-License-Identifier: MIT
// Where the allocation hooks remember which window a live block was allocated
// in: a stamp beside each granule of the heap, found from the block's
// address alone (docs/performance.md, "A stamp per block" and "Stamps by the
// page").
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace heapgate::detail {

// A stamp is the epoch of the window the block at that address was allocated
// in, 0 if none. A hash table of live blocks missed the cache on almost every
// insert and erase once 100k+ blocks stayed live, and had to grow and be
// cleared. A stamp sits at a place computed from the address, and jemalloc
// hands out a slab's regions in address order, so a loop that allocates or
// frees neighbours touches neighbouring stamps. No lock: a block is stamped by
// the thread that allocates it and read by the one that frees it, which the
// program itself must order after the allocation.
//
// Stamps by the page. Every 4 KiB page of the heap where a block starts has a
// run of stamps, one per granule of the page. The granule is the block's
// usable size rounded down to a power of two 2^k (k from 3, jemalloc's 8-byte
// class, to 12, a page, for every larger block). Blocks that start in one
// page are all of one size class (jemalloc's slabs and large extents are whole
// pages), so live blocks of a page start at least 2^k bytes apart, in
// different granules. A page's entry holds its run's address, k and the
// blocks' usable size; a block whose size differs from its page's is not
// stamped. The page had another size class before, all of whose blocks are
// gone.
//
// Memory was the cost that mattered: most stamp pages are fresh, and on the
// machine of docs/performance.md the kernel zeroing them cost more than the
// stamping. One map per granule size spanned the whole heap, because slabs of
// different classes interleave; runs per page cover only the pages of their
// own class: 256 bytes for a page of 80-byte blocks, 512 for 48-byte ones.
//
// Stamps of blocks freed while no hook ran stay behind, also in a run a page
// gave up and another page took. They are harmless: a hook
// runs whenever a window is open, so a stale stamp is from a window that
// closed before every open window opened, and windows opened later have
// higher epochs. A block counts in a window only when its stamp is the
// window's epoch or later.
//
// Memory layout: the top level has a slot per region of 256 MiB of the 48-bit
// address space (8 MiB reserved, mostly untouched); a region holds the entries
// of its 65,536 pages (512 KiB reserved). Runs come from arenas of huge pages,
// and the run of a page that changed size class is reused by another page.
class BlockStamps {
 public:
  using Stamp = std::atomic<std::uint32_t>;
  static constexpr unsigned kAddressBits = 48;
  static constexpr unsigned kRegionBits = 28;  // heap bytes per region: 256 MiB
  static constexpr unsigned kPageBits = 12;
  static constexpr unsigned kMinGranuleBits = 3;
  static constexpr unsigned kMaxGranuleBits = kPageBits;

  // A thread's memory of the page it stamped or looked up last for each size,
  // so that the next block of that page and size skips the walk from the top
  // level and the size's encoding (about half of a lookup's instructions).
  // By size, not by page: jemalloc hands a thread the blocks of a size from
  // one slab until it is full, so consecutive blocks of a size share a page
  // whatever other sizes come between. A line holds the page's entry as it
  // was seen; it is used only while the entry still holds that value, so a
  // page that changed class since, or lost its run in clear(), is looked up
  // again. Owned by one thread (or used under a lock), like the counters it
  // sits beside; allocations and frees keep one each, as they walk different
  // pages.
  struct Cache {
    struct Line {
      std::uintptr_t page = ~std::uintptr_t{0};
      std::uint64_t usize = 0;
      const std::atomic<std::uintptr_t>* entry = nullptr;
      std::uintptr_t value = 0;
    };
    // Sizes to 1 KiB fall on lines of their own (16-byte steps to 128, then
    // 32 to 256, 64 to 512, 128 to 1024: (usize / 16) % 64 differ).
    static constexpr unsigned kLines = 64;
    Line lines[kLines];
  };

  // Reserves the top level; false (and every lookup nullptr) if it cannot.
  bool init() noexcept {
    top_ = static_cast<std::atomic<Region*>*>(reserve(kTopSlots * sizeof(std::atomic<Region*>), false));
    return top_ != nullptr;
  }

  // The stamp of the block of usable size `usize` at `address`, nullptr if no
  // block of its size in its page was stamped since the page last changed
  // size class.
  Stamp* find(std::uintptr_t address, std::uint64_t usize) noexcept { return locate<false>(address, usize, nullptr); }

  // The same, giving the page a run of stamps for that size first if needed;
  // nullptr if the address is beyond kAddressBits, the size cannot be kept
  // in a page's entry (above kMaxPagesInEntry pages), or memory ran out.
  Stamp* find_or_add(std::uintptr_t address, std::uint64_t usize) noexcept {
    return locate<true>(address, usize, nullptr);
  }

  // find() and find_or_add() through a thread's cache.
  template <bool kAdd>
  __attribute__((always_inline)) Stamp* locate_cached(Cache& cache, std::uintptr_t address,
                                                      std::uint64_t usize) noexcept {
    const std::uintptr_t page = address >> kPageBits;
    Cache::Line& line = cache.lines[(usize >> 4) % Cache::kLines];
    if (line.page == page && line.usize == usize) {
      const std::uintptr_t run = line.entry->load(std::memory_order_acquire);
      if (run == line.value) return stamp_in(run, address);
    }
    Cache::Line seen{page, usize, nullptr, 0};
    Stamp* stamp = locate<kAdd>(address, usize, &seen);
    if (stamp != nullptr) line = seen;
    return stamp;
  }

  // The stamp at `address` by its page's entry alone, and the usable size of
  // the blocks the page was stamped for (`*usize`); nullptr if nothing was
  // stamped in the page. For a free that is not told the block's size: the
  // page's blocks all have one size (one slab, or one large extent), so a
  // stamp of an open window found here is this block's, with this size. A
  // block of another size (the page changed class without a stamp) finds a
  // stamp that is 0 or older than every open window (see above). Asking
  // jemalloc instead (sallocx) would move a thread's jemalloc state from
  // "minimal" to "nominal", which a thread in the middle of exiting must not
  // undergo (docs/platform-facts.md §10).
  Stamp* find_by_page(std::uintptr_t address, std::uint64_t* usize) noexcept {
    if (top_ == nullptr || !in_range(address)) return nullptr;
    Region* region = top_[address >> kRegionBits].load(std::memory_order_acquire);
    if (region == nullptr) return nullptr;
    const std::uintptr_t run = region->pages[(address & kRegionMask) >> kPageBits].load(std::memory_order_acquire);
    if (run == 0) return nullptr;
    *usize = size_of_code(run >> kSizeShift);
    return stamp_in(run, address);
  }

  // Forgets every stamp (for when epochs are about to wrap): every page loses
  // its run, and the runs are abandoned. Only while no hook stamps; a hook
  // running concurrently merely leaves a stale stamp in an abandoned run.
  void clear() noexcept {
    if (top_ == nullptr) return;
    for (std::size_t i = 0; i < kTopSlots; ++i) {
      if (Region* region = top_[i].load(std::memory_order_acquire)) {
        (void)::madvise(region, sizeof(Region), MADV_DONTNEED);
      }
    }
    runs_.forget_spares();
  }

  // Hold and release the lock that handing out runs takes, around fork():
  // see alloc_counting.cpp.
  void lock_for_fork() noexcept { runs_.lock(); }
  void unlock_after_fork() noexcept { runs_.unlock(); }

 private:
  // A page's entry: the address of its run (16-byte aligned, below 2^47)
  // with k - 2 in the low four bits and the usable size of its blocks in the
  // top 16 (size_code()); 0 if the page has none.
  using PageEntry = std::atomic<std::uintptr_t>;
  static constexpr std::uintptr_t kTagMask = 15;
  static constexpr unsigned kSizeShift = 48;
  static constexpr std::uintptr_t kRunMask = ((std::uintptr_t{1} << kSizeShift) - 1) & ~kTagMask;
  // Sizes below 256 KiB in 8-byte units, larger ones in pages with the top
  // bit set, up to kMaxPagesInEntry pages (128 MiB); 0: not representable.
  static constexpr std::uint64_t kMaxPagesInEntry = 0x7FFF;
  static std::uint64_t size_code(std::uint64_t usize) noexcept {
    if (usize % 8 == 0 && (usize >> 3) < 0x8000) return usize >> 3;
    if (usize % 4096 == 0 && (usize >> 12) <= kMaxPagesInEntry) return 0x8000 | (usize >> 12);
    return 0;
  }
  static std::uint64_t size_of_code(std::uint64_t code) noexcept {
    return (code & 0x8000) != 0 ? (code & 0x7FFF) << 12 : code << 3;
  }
  static constexpr std::size_t kPagesPerRegion = std::size_t{1} << (kRegionBits - kPageBits);
  struct Region {
    PageEntry pages[kPagesPerRegion];
  };
  static constexpr std::size_t kTopSlots = std::size_t{1} << (kAddressBits - kRegionBits);
  static constexpr std::uintptr_t kRegionMask = (std::uintptr_t{1} << kRegionBits) - 1;
  static constexpr std::uintptr_t kPageMask = (std::uintptr_t{1} << kPageBits) - 1;

  // Widened first: shifting a 32-bit uintptr_t by 48 would be undefined.
  static bool in_range(std::uintptr_t address) noexcept {
    return (static_cast<std::uint64_t>(address) >> kAddressBits) == 0;
  }
  static unsigned granule_bits(std::uint64_t usize) noexcept {
    const auto bits = static_cast<unsigned>(63 - __builtin_clzll(usize | 1));
    return std::clamp(bits, kMinGranuleBits, kMaxGranuleBits);
  }
  static constexpr std::uintptr_t tag(unsigned bits) noexcept { return bits - kMinGranuleBits + 1; }
  static constexpr unsigned tag_bits(std::uintptr_t entry) noexcept {
    return static_cast<unsigned>(entry & kTagMask) + kMinGranuleBits - 1;
  }
  // A run's size: one stamp per granule of a page, at least 16 bytes so that
  // runs stay aligned for the tag.
  static constexpr std::size_t run_bytes(unsigned bits) noexcept {
    return std::max<std::size_t>(16, (std::size_t{1} << (kPageBits - bits)) * sizeof(Stamp));
  }

  // The stamp of `address` in the run of a page's entry `run`.
  static Stamp* stamp_in(std::uintptr_t run, std::uintptr_t address) noexcept {
    return reinterpret_cast<Stamp*>(run & kRunMask) + ((address & kPageMask) >> tag_bits(run));
  }

  // `seen` (if given) receives the page's entry and the value the stamp was
  // found by.
  template <bool kAdd>
  Stamp* locate(std::uintptr_t address, std::uint64_t usize, Cache::Line* seen) noexcept {
    if (top_ == nullptr || !in_range(address)) return nullptr;
    std::atomic<Region*>& region_slot = top_[address >> kRegionBits];
    Region* region = region_slot.load(std::memory_order_acquire);
    if (region == nullptr) {
      if (!kAdd) return nullptr;
      region = add_region(region_slot);
      if (region == nullptr) return nullptr;
    }
    const std::uint64_t code = size_code(usize);
    if (code == 0) return nullptr;
    const unsigned bits = granule_bits(usize);
    const std::uintptr_t kind = (std::uintptr_t{code} << kSizeShift) | tag(bits);
    PageEntry& entry = region->pages[(address & kRegionMask) >> kPageBits];
    std::uintptr_t run = entry.load(std::memory_order_acquire);
    if ((run & ~kRunMask) != kind) {
      if (!kAdd) return nullptr;
      run = give_run(entry, run, bits, kind);
      if (run == 0) return nullptr;
    }
    if (seen != nullptr) {
      seen->entry = &entry;
      seen->value = run;
    }
    return reinterpret_cast<Stamp*>(run & kRunMask) + ((address & kPageMask) >> bits);
  }

  // Zeroed memory from the kernel, backed only where touched; nullptr if none.
  static void* reserve(std::size_t bytes, bool huge_pages) noexcept {
    void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    if (huge_pages) (void)::madvise(mem, bytes, MADV_HUGEPAGE);
    return mem;
  }

  // A region's page entries, published in `slot` unless another thread got
  // there first; nullptr if there is no memory.
  __attribute__((noinline, cold)) static Region* add_region(std::atomic<Region*>& slot) noexcept {
    void* mem = reserve(sizeof(Region), false);
    if (mem == nullptr) return nullptr;
    Region* expected = nullptr;
    if (slot.compare_exchange_strong(expected, static_cast<Region*>(mem), std::memory_order_acq_rel)) {
      return static_cast<Region*>(mem);
    }
    ::munmap(mem, sizeof(Region));  // another thread added it first
    return expected;
  }

  // Runs of stamps, handed out from arenas and taken back when a page
  // changes size class. Used once per page and class, so a lock is cheap
  // here; the stamps themselves are written without one.
  class Runs {
   public:
    // A run of `bytes` (a power of two from 16), zero or holding only stale
    // stamps; nullptr if there is no memory.
    void* take(std::size_t bytes) noexcept {
      std::lock_guard<std::mutex> lock(mutex_);
      void*& spare = spares_[size_index(bytes)];
      if (spare != nullptr) {
        void* run = spare;
        std::memcpy(&spare, run, sizeof spare);
        std::memset(run, 0, sizeof spare);  // the link is not a stamp
        return run;
      }
      if (static_cast<std::size_t>(end_ - next_) < bytes) {
        auto* arena = static_cast<char*>(reserve(kArenaBytes, true));
        if (arena == nullptr) return nullptr;
        next_ = arena;
        end_ = arena + kArenaBytes;
      }
      void* run = next_;
      next_ += bytes;
      return run;
    }
    // Takes back a run no page refers to any more.
    void give(void* run, std::size_t bytes) noexcept {
      std::lock_guard<std::mutex> lock(mutex_);
      void*& spare = spares_[size_index(bytes)];
      std::memcpy(run, &spare, sizeof spare);
      spare = run;
    }
    void forget_spares() noexcept {
      std::lock_guard<std::mutex> lock(mutex_);
      std::fill(std::begin(spares_), std::end(spares_), nullptr);
    }
    void lock() noexcept { mutex_.lock(); }
    void unlock() noexcept { mutex_.unlock(); }

   private:
    // Reserved, not backed: pages are backed as runs are handed out.
    static constexpr std::size_t kArenaBytes = std::size_t{64} << 20;
    static unsigned size_index(std::size_t bytes) noexcept {
      return static_cast<unsigned>(__builtin_ctzll(bytes)) - 4;  // 16 -> 0 ... 2048 -> 7
    }
    std::mutex mutex_;
    void* spares_[8] = {};
    char* next_ = nullptr;
    char* end_ = nullptr;
  };

  // Gives the page of `entry` (now `seen`) a run for granules of 2^bits and
  // blocks of the size in `kind` (its tag and size code), and returns the new
  // entry; 0 if there is no memory. Only the counting of a block allocated
  // in the page calls this, and the page's previous class has no live block
  // left, so no thread still uses the old run: it becomes a spare.
  __attribute__((noinline, cold)) std::uintptr_t give_run(PageEntry& entry, std::uintptr_t seen, unsigned bits,
                                                          std::uintptr_t kind) noexcept {
    const std::size_t bytes = run_bytes(bits);
    while ((seen & ~kRunMask) != kind) {
      void* run = runs_.take(bytes);
      if (run == nullptr) return 0;
      const std::uintptr_t wanted = reinterpret_cast<std::uintptr_t>(run) | kind;
      if (entry.compare_exchange_strong(seen, wanted, std::memory_order_acq_rel)) {
        if (seen != 0) runs_.give(reinterpret_cast<void*>(seen & kRunMask), run_bytes(tag_bits(seen)));
        return wanted;
      }
      runs_.give(run, bytes);  // another thread gave the page a run first
    }
    return seen;
  }

  std::atomic<Region*>* top_ = nullptr;
  Runs runs_;
};

}  // namespace heapgate::detail
