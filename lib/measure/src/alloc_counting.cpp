// SPDX-License-Identifier: MIT
// Exact counting over all threads (alloc_counting.h): per-thread slots in mmap'd memory,
// epoch-based counting windows, block stamps for live blocks, note_allocated() and note_freed(),
// and the locks held across fork().
#include "alloc_counting.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string_view>

#include "heapgate/allocator.h"
#include "heapgate/sys.h"
#include "block_stamps.h"
#include "entry_points.h"
#include "frame_walker.h"
#include "jemalloc_hooks.h"
#include "live_table.h"
#include "size_classes.h"
#include "stack_capture.h"

// The counting of one allocation or free is one function (note_allocated(),
// note_freed()): the helpers it is written with are inlined into it, as a
// call per helper cost about a third of its instructions (docs/performance.md,
// issue 30).
#define HEAPGATE_HOT_INLINE __attribute__((always_inline)) inline

namespace heapgate::detail {
namespace {

using SallocxFn = std::size_t (*)(const void*, int);

// Thread-local state read on every allocation: initial-exec keeps it a single
// %fs-relative load (no __tls_get_addr, which could itself allocate).
__attribute__((tls_model("initial-exec"))) thread_local bool t_suppressed = false;
__attribute__((tls_model("initial-exec"))) thread_local bool t_skip_next = false;
__attribute__((tls_model("initial-exec"))) thread_local std::uint64_t t_skipped_bytes = 0;

SallocxFn g_sallocx = nullptr;

// The hot path writes only memory its own thread owns (ThreadSlot) plus the
// block's own stamp, with no locked instruction: a process-wide atomic add per
// allocation costs a locked instruction and, with threads, a cache line
// bouncing between cores. Window membership comes from an epoch that changes
// only when a window opens.
// Counters a reader sums while the owner writes are relaxed atomics the owner
// updates with a plain load and store (bump), which compiles to an ordinary add.
void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// One thread's share of one window. Valid only while `epoch` equals the
// window's epoch: a share left from an earlier window in the same slot is
// reset by its owner on first use, so opening a window never writes into
// other threads' memory.
struct WindowShare {
  std::atomic<std::uint32_t> epoch{0};
  std::atomic<std::int64_t> live_count{0};
  std::atomic<std::int64_t> live_bytes{0};
  std::atomic<std::int64_t> peak_bytes{0};  // this thread's highest live_bytes
};

struct Totals {
  std::uint64_t allocations = 0;
  std::uint64_t deallocations = 0;
  std::uint64_t allocated_bytes = 0;
};

// A thread's counters. Slots live in mmap'd memory (never malloc, which would
// re-enter the hooks), stay on g_slots forever and are reused after their
// thread exits, when their counts fold into g_exited.
struct alignas(64) ThreadSlot {
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> deallocations{0};
  std::atomic<std::uint64_t> allocated_bytes{0};
  // Under g_registry_mutex.
  ThreadSlot* next = nullptr;
  bool in_use = false;
  WindowShare shares[kMaxWindows];
  // Only its thread's counting uses them (g_unregistered's: under the lock).
  BlockStamps::Cache alloc_stamps;
  BlockStamps::Cache free_stamps;
  CaptureThread capture;  // `exact` mode's memory of this thread (stack_capture.h)

  constexpr ThreadSlot() = default;
  constexpr explicit ThreadSlot(bool always_in_use) : in_use(always_in_use) {}

  Totals totals() const noexcept {
    return Totals{allocations.load(std::memory_order_relaxed), deallocations.load(std::memory_order_relaxed),
                  allocated_bytes.load(std::memory_order_relaxed)};
  }
};

__attribute__((tls_model("initial-exec"))) thread_local ThreadSlot* t_slot = nullptr;
// Set once the thread's slot was folded: frees glibc makes after the key
// destructors ran must not register a slot that no destructor would fold.
__attribute__((tls_model("initial-exec"))) thread_local bool t_exited = false;

// A counting window. `epoch` is written only by open_window; the rest only
// under g_registry_mutex.
struct alignas(64) Window {
  std::atomic<std::uint32_t> epoch{0};
  ThreadSlot* opener = nullptr;
  bool opener_exited = false;
  Totals opener_start;  // the opener's counters at open
  Totals opener_end;    // ... when it exited, if it exited before the close
  Totals start;         // all threads' counters at open
  // Shares of threads that exited while the window was open.
  std::int64_t exited_live_count = 0;
  std::int64_t exited_live_bytes = 0;
  std::int64_t exited_peak_bytes = 0;
};
Window g_windows[kMaxWindows];
std::atomic<std::uint64_t> g_windows_used{0};  // slots taken
// Blocks carry the epoch current when they were allocated; a block belongs to
// window w if its epoch is w's or later. Compared modulo 2^32: the table is
// emptied whenever no window counts, so live epochs never span 2^31.
std::atomic<std::uint32_t> g_epoch{0};
bool in_window(std::uint32_t block_epoch, std::uint32_t window_epoch) noexcept {
  return static_cast<std::int32_t>(block_epoch - window_epoch) >= 0;
}

// What became of the blocks a closed window left live: each window that
// closes with live blocks takes the slot of its epoch, and a later free of a
// block stamped with that epoch, while some window counts, adds to it. The
// GoogleTest plugin asks at the end of the run: blocks a test left that a
// later test freed were held, not leaked, and need no repeated run to tell.
// Frees while no window counts are not seen, nor blocks stamped by a window
// nested in it (their epoch differs): they stay "not freed", the safe side.
// A slot taken over by a later epoch answers nothing for the earlier one.
struct ResidueSlot {
  std::atomic<std::uint32_t> epoch{0};
  std::atomic<std::uint64_t> freed_count{0};
  std::atomic<std::uint64_t> freed_bytes{0};
};
constexpr std::uint32_t kResidueSlots = 16384;  // a suite's tests, each with its epoch
ResidueSlot g_residue[kResidueSlots];

void follow_residue(std::uint32_t epoch) noexcept {
  ResidueSlot& slot = g_residue[epoch % kResidueSlots];
  slot.epoch.store(0, std::memory_order_relaxed);
  slot.freed_count.store(0, std::memory_order_relaxed);
  slot.freed_bytes.store(0, std::memory_order_relaxed);
  slot.epoch.store(epoch, std::memory_order_release);
}

// A locked add, but only for a block freed after its window closed.
void note_residue_freed(std::uint32_t epoch, std::uint64_t usize) noexcept {
  ResidueSlot& slot = g_residue[epoch % kResidueSlots];
  if (slot.epoch.load(std::memory_order_acquire) != epoch) return;
  slot.freed_count.fetch_add(1, std::memory_order_relaxed);
  slot.freed_bytes.fetch_add(usize, std::memory_order_relaxed);
}

// Guards the slot list, g_exited and the windows' bookkeeping. Held only for
// short sections that never allocate, so a hook may take it (a thread's first
// counted allocation registers it).
std::mutex g_registry_mutex;
// Counts of threads without a slot of their own (exiting, or out of memory),
// updated only under g_registry_mutex. Always first on g_slots.
ThreadSlot g_unregistered{true};  // constexpr constructor: constant-initialized, before any hook runs
ThreadSlot* g_slots = &g_unregistered;
Totals g_exited;             // counts of threads that exited
pthread_key_t g_thread_key;  // its destructor folds an exiting thread's slot
void thread_exited(void* arg) noexcept;

ThreadSlot* new_slot_locked() noexcept {
  for (ThreadSlot* s = g_slots; s != nullptr; s = s->next) {
    if (!s->in_use) return s;
  }
  void* mem = ::mmap(nullptr, sizeof(ThreadSlot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto* slot = new (mem) ThreadSlot;
  slot->next = g_slots;
  g_slots = slot;
  return slot;
}

// The key whose destructor folds an exiting thread's slot. Made as early as
// possible (the process' first allocation, see entry_points.cpp), so that its
// index is below PTHREAD_KEY_2NDLEVEL_SIZE: glibc then stores its value in
// the thread's descriptor, and setting it never allocates. An allocation there
// reached jemalloc at moments of a thread's life when jemalloc's own
// per-thread data must not change (threads exiting).
std::atomic<bool> g_thread_key_made{false};
constexpr pthread_key_t kKeysStoredInline = 32;  // glibc's PTHREAD_KEY_2NDLEVEL_SIZE (internal)
pthread_once_t g_thread_key_once = PTHREAD_ONCE_INIT;
void make_thread_key() noexcept {
  g_thread_key_made.store(pthread_key_create(&g_thread_key, thread_exited) == 0, std::memory_order_release);
}

__attribute__((noinline)) ThreadSlot* register_thread() noexcept {
  ThreadSlot* slot;
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    slot = new_slot_locked();
    if (slot == nullptr) return nullptr;  // out of memory: this thread goes uncounted
    slot->in_use = true;
    for (WalkMemory& walk : slot->capture.walks) walk.count = 0;  // walks of the thread that had the slot before
  }
  t_slot = slot;
  // A key from PTHREAD_KEY_2NDLEVEL_SIZE on would make glibc calloc its
  // second-level table here: then the slot is not folded at the thread's
  // exit (it stays counted, and is not reused).
  if (g_thread_key_made.load(std::memory_order_acquire) && g_thread_key < kKeysStoredInline) {
    (void)pthread_setspecific(g_thread_key, slot);
  }
  return slot;
}

// The calling thread's slot; nullptr if it has none and may not get one
// (then the caller counts in g_unregistered, under g_registry_mutex).
HEAPGATE_HOT_INLINE ThreadSlot* current_slot() noexcept {
  ThreadSlot* slot = t_slot;
  if (slot != nullptr || t_exited) return slot;
  return register_thread();
}

// The same for a free: a thread that has only freed so far gets no slot
// (it counts in g_unregistered). A thread's last frees come while it exits,
// and registering it then would set its key in the middle of glibc running
// the keys' destructors.
HEAPGATE_HOT_INLINE ThreadSlot* current_slot_for_free() noexcept { return t_slot; }

// The thread's counts move to g_exited and its shares to the open windows it
// counted in, so sums stay exact after it is gone and its slot can be reused.
void thread_exited(void* arg) noexcept {
  auto* slot = static_cast<ThreadSlot*>(arg);
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  const Totals counted = slot->totals();
  g_exited.allocations += counted.allocations;
  g_exited.deallocations += counted.deallocations;
  g_exited.allocated_bytes += counted.allocated_bytes;
  const std::uint64_t used = g_windows_used.load(std::memory_order_acquire);
  for (std::uint64_t bits = used; bits != 0; bits &= bits - 1) {
    const int i = __builtin_ctzll(bits);
    Window& w = g_windows[i];
    WindowShare& share = slot->shares[i];
    if (share.epoch.load(std::memory_order_acquire) == w.epoch.load(std::memory_order_relaxed)) {
      w.exited_live_count += share.live_count.load(std::memory_order_relaxed);
      w.exited_live_bytes += share.live_bytes.load(std::memory_order_relaxed);
      w.exited_peak_bytes += share.peak_bytes.load(std::memory_order_relaxed);
    }
    if (w.opener == slot && !w.opener_exited) {
      w.opener_exited = true;
      w.opener_end = counted;
    }
  }
  slot->allocations.store(0, std::memory_order_relaxed);
  slot->deallocations.store(0, std::memory_order_relaxed);
  slot->allocated_bytes.store(0, std::memory_order_relaxed);
  for (auto& share : slot->shares) share.epoch.store(0, std::memory_order_relaxed);
  slot->in_use = false;
  t_slot = nullptr;
  t_exited = true;
}

Totals all_threads_locked() noexcept {
  Totals sum = g_exited;
  for (const ThreadSlot* s = g_slots; s != nullptr; s = s->next) {
    if (!s->in_use) continue;
    const Totals t = s->totals();
    sum.allocations += t.allocations;
    sum.deallocations += t.deallocations;
    sum.allocated_bytes += t.allocated_bytes;
  }
  return sum;
}

// Which window each live block was allocated in: a stamp per heap granule
// (block_stamps.h), no lock and no growth. A block whose stamp cannot be had
// (an address beyond the stamps' range, or no memory for its page's run of
// stamps) goes to a locked pointer table instead, so it is still counted
// exactly.
BlockStamps g_stamps;
struct Entry {
  std::uintptr_t key;  // 0 = empty
  std::uint32_t epoch;
  std::uint32_t size;  // usable size, packed by pack_size
};
LiveTable<Entry> g_unstamped;
std::atomic<bool> g_unstamped_used{false};
using Locked = std::lock_guard<LiveTable<Entry>>;

__attribute__((noinline, cold)) void keep_unstamped(std::uintptr_t key, std::uint32_t epoch,
                                                    std::uint64_t usize) noexcept {
  g_unstamped_used.store(true, std::memory_order_relaxed);
  Locked lock(g_unstamped);
  g_unstamped.insert(Entry{key, epoch, pack_size(usize)});
}

// Adds one block (count +1) or removes one (-1) from this thread's share.
HEAPGATE_HOT_INLINE void add_to_share(WindowShare& share, std::uint32_t window_epoch, std::int64_t count,
                                      std::int64_t bytes) noexcept {
  if (share.epoch.load(std::memory_order_relaxed) != window_epoch) {
    share.live_count.store(0, std::memory_order_relaxed);
    share.live_bytes.store(0, std::memory_order_relaxed);
    share.peak_bytes.store(0, std::memory_order_relaxed);
    share.epoch.store(window_epoch, std::memory_order_release);
  }
  share.live_count.store(share.live_count.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
  const std::int64_t live = share.live_bytes.load(std::memory_order_relaxed) + bytes;
  share.live_bytes.store(live, std::memory_order_relaxed);
  if (live > share.peak_bytes.load(std::memory_order_relaxed)) share.peak_bytes.store(live, std::memory_order_relaxed);
}

HEAPGATE_HOT_INLINE void record_alloc_in(ThreadSlot* slot, void* ptr, std::uint64_t usize) noexcept {
  bump(slot->allocations, 1);
  bump(slot->allocated_bytes, usize);
  const std::uint64_t active = g_windows_active.load(std::memory_order_acquire);
  if (active == 0) return;
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  auto key = reinterpret_cast<std::uintptr_t>(ptr);
  if (std::atomic<std::uint32_t>* stamp = g_stamps.locate_cached<true>(slot->alloc_stamps, key, usize)) {
    stamp->store(epoch, std::memory_order_relaxed);
  } else {
    keep_unstamped(key, epoch, usize);
  }
  const auto size = static_cast<std::int64_t>(usize);
  for (std::uint64_t bits = active; bits != 0; bits &= bits - 1) {
    const int i = __builtin_ctzll(bits);
    const std::uint32_t window_epoch = g_windows[i].epoch.load(std::memory_order_relaxed);
    if (in_window(epoch, window_epoch)) add_to_share(slot->shares[i], window_epoch, 1, size);
  }
}

// A block taken out of tracking: allocated while a window counted (then
// its stamp is cleared), with its epoch and usable size.
struct Taken {
  bool tracked = false;
  bool unstamped = false;  // it was in g_unstamped, not stamped
  std::uint32_t epoch = 0;
  std::uint64_t usize = 0;
};

// Forgets the block at `ptr` if it was allocated while a window counted.
// `usize` is its size if the caller knows it (a sized free, an in-place
// realloc), else 0: then its page's entry tells (BlockStamps::find_by_page),
// never jemalloc, whose sallocx may change a thread's jemalloc state while
// the thread is exiting.
// take_block() for a block that may be in g_unstamped; `taken` as found so far.
__attribute__((noinline, cold)) Taken take_unstamped(std::uintptr_t key, Taken taken) noexcept {
  Entry entry;
  {
    Locked lock(g_unstamped);
    if (!g_unstamped.erase(key, &entry)) return taken;
  }
  taken.tracked = true;
  taken.unstamped = true;
  taken.epoch = entry.epoch;
  taken.usize = unpack_size(entry.size);
  return taken;
}

// `slot` is the calling thread's, or nullptr if it has none.
HEAPGATE_HOT_INLINE Taken take_block(ThreadSlot* slot, void* ptr, std::uint64_t usize) noexcept {
  Taken taken;
  auto key = reinterpret_cast<std::uintptr_t>(ptr);
  std::atomic<std::uint32_t>* stamp = nullptr;
  if (usize == 0) {
    stamp = g_stamps.find_by_page(key, &usize);
  } else if (slot != nullptr) {
    stamp = g_stamps.locate_cached<false>(slot->free_stamps, key, usize);
  } else {
    stamp = g_stamps.find(key, usize);
  }
  taken.usize = usize;
  if (stamp != nullptr) {
    taken.epoch = stamp->load(std::memory_order_relaxed);
    if (taken.epoch != 0) {
      stamp->store(0, std::memory_order_relaxed);
      taken.tracked = true;
      return taken;
    }
  }
  if (!g_unstamped_used.load(std::memory_order_relaxed)) return taken;
  return take_unstamped(key, taken);
}

// Tracks a taken block again, as it was (a resize that failed).
void untake_block(void* ptr, const Taken& taken) noexcept {
  if (!taken.tracked) return;
  auto key = reinterpret_cast<std::uintptr_t>(ptr);
  if (!taken.unstamped) {
    if (std::atomic<std::uint32_t>* stamp = g_stamps.find(key, taken.usize)) {
      stamp->store(taken.epoch, std::memory_order_relaxed);
      return;
    }
  }
  g_unstamped_used.store(true, std::memory_order_relaxed);
  Locked lock(g_unstamped);
  g_unstamped.insert(Entry{key, taken.epoch, pack_size(taken.usize)});
}

HEAPGATE_HOT_INLINE void count_free_in(ThreadSlot* slot, const Taken& taken) noexcept {
  bump(slot->deallocations, 1);
  if (!taken.tracked) return;  // allocated outside every window: not ours to count
  const auto size = static_cast<std::int64_t>(taken.usize);
  bool in_open_window = false;
  for (std::uint64_t bits = g_windows_active.load(std::memory_order_acquire); bits != 0; bits &= bits - 1) {
    const int i = __builtin_ctzll(bits);
    const std::uint32_t window_epoch = g_windows[i].epoch.load(std::memory_order_relaxed);
    if (in_window(taken.epoch, window_epoch)) {
      add_to_share(slot->shares[i], window_epoch, -1, -size);
      in_open_window = true;
    }
  }
  if (!in_open_window) note_residue_freed(taken.epoch, taken.usize);
}

__attribute__((noinline, cold)) void record_alloc_unregistered(void* ptr, std::uint64_t usize) noexcept {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  record_alloc_in(&g_unregistered, ptr, usize);
}

HEAPGATE_HOT_INLINE void record_alloc(void* ptr, std::uint64_t usize) noexcept {
  if (ThreadSlot* slot = current_slot()) return record_alloc_in(slot, ptr, usize);
  record_alloc_unregistered(ptr, usize);
}

__attribute__((noinline, cold)) void count_free_unregistered(const Taken& taken) noexcept {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  count_free_in(&g_unregistered, taken);
}

// `slot` as for take_block().
HEAPGATE_HOT_INLINE void count_free(ThreadSlot* slot, const Taken& taken) noexcept {
  if (slot != nullptr) return count_free_in(slot, taken);
  count_free_unregistered(taken);
}

CountingSource decide_source() noexcept {
  const AllocatorStatus& status = allocator_status();
  if (!status.hooks_available) return CountingSource::none;
  g_sallocx = reinterpret_cast<SallocxFn>(sys::find_symbol("sallocx"));
  if (g_sallocx == nullptr) return CountingSource::none;
  (void)g_size_classes.init(reinterpret_cast<SizeClasses::NallocxFn>(sys::find_symbol("nallocx")));
  (void)g_stamps.init();  // without it every block goes to g_unstamped
  make_thread_key_early();
  if (pthread_atfork(lock_counting_for_fork, unlock_counting_after_fork, unlock_counting_after_fork) != 0) {
    return CountingSource::none;
  }
  const char* forced = std::getenv("HEAPGATE_COUNT_WITH");
  const bool hooks_forced = forced != nullptr && std::string_view(forced) == "hooks";
  if (!hooks_forced && entry_points_in_effect()) return CountingSource::entry_points;
  return jemalloc_hooks_supported() ? CountingSource::jemalloc_hooks : CountingSource::none;
}

// Guards the transitions of g_windows_used from and to zero.
std::mutex g_open_close_mutex;
std::uint32_t g_stamps_cleared_at = 0;  // the epoch when g_stamps last forgot every stamp

}  // namespace

std::atomic<std::uint64_t> g_entry_point_windows{0};
std::atomic<std::uint64_t> g_windows_active{0};
std::atomic<bool> g_follow_frees{false};
SizeClasses g_size_classes;

// fork() copies a lock another thread holds as held, and no thread of the
// child will release it: a child that then allocated in a window (a death
// test forking beside a thread that allocates) would wait forever. The locks
// the counting may take are held across fork() and released on both sides,
// in the order it takes them (a thread without a slot counts under
// g_registry_mutex, then may take either of the others).
void lock_counting_for_fork() noexcept {
  g_registry_mutex.lock();
  g_unstamped.lock();
  g_stamps.lock_for_fork();
  lock_stack_capture_for_fork();
}
void unlock_counting_after_fork() noexcept {
  unlock_stack_capture_after_fork();
  g_stamps.unlock_after_fork();
  g_unstamped.unlock();
  g_registry_mutex.unlock();
}

void make_thread_key_early() noexcept { (void)pthread_once(&g_thread_key_once, make_thread_key); }

CountingSource counting_source() noexcept {
  static const CountingSource source = decide_source();
  return source;
}

const char* why_no_counting() noexcept {
  if (counting_source() != CountingSource::none) return "";
  if (!allocator_status().hooks_available) return "jemalloc does not serve this process' malloc, or HEAPGATE_HOOKS=off";
  if (g_sallocx == nullptr) return "jemalloc's sallocx is not visible to heapgate";
  return "neither heapgate's allocation entry points nor jemalloc's hooks can count in this process";
}

std::uint64_t usable_size_of_block(const void* ptr) noexcept { return g_sallocx(ptr, 0); }

__attribute__((noinline)) void note_allocated(void* ptr, std::uint64_t usize, void* stack_start) noexcept {
  if (t_suppressed) return;
  if (stack_start == nullptr) stack_start = __builtin_return_address(0);
  if (usize == 0) usize = g_sallocx(ptr, 0);
  // The block skipped from the counters (a test's fixture object) is still
  // recorded with its stack, as jemalloc's profiler would: the listener takes
  // it out of an exact test's profile counts itself.
  if (g_capturing.load(std::memory_order_relaxed)) {
    capture_alloc(ptr, usize, stack_start, t_slot != nullptr ? &t_slot->capture : nullptr);
  }
  if (t_skip_next) {
    t_skip_next = false;
    t_skipped_bytes = usize;
    return;
  }
  record_alloc(ptr, usize);
}

void note_freed(void* ptr, std::uint64_t usize) noexcept {
  ThreadSlot* slot = current_slot_for_free();
  const Taken taken = take_block(slot, ptr, usize);
  count_free(slot, taken);
  if (g_capturing.load(std::memory_order_relaxed)) {
    capture_dalloc(ptr, taken.usize, slot != nullptr ? &slot->capture : nullptr);
  }
}

void note_freed_between_windows(void* ptr, std::uint64_t usize) noexcept {
  const Taken taken = take_block(current_slot_for_free(), ptr, usize);
  if (taken.tracked) note_residue_freed(taken.epoch, taken.usize);
}

ResizeTicket begin_resize(void* ptr) noexcept {
  const Taken taken = take_block(nullptr, ptr, 0);
  return ResizeTicket{taken.tracked, taken.unstamped, taken.epoch, taken.usize};
}

__attribute__((noinline)) void resize_done(const ResizeTicket& ticket, void* old_ptr, void* new_ptr,
                                           std::uint64_t new_usize, void* stack_start) noexcept {
  ThreadSlot* slot = current_slot_for_free();
  count_free(slot, Taken{ticket.tracked, ticket.unstamped, ticket.epoch, ticket.old_usize});
  if (g_capturing.load(std::memory_order_relaxed)) {
    capture_dalloc(old_ptr, ticket.old_usize, slot != nullptr ? &slot->capture : nullptr);
  }
  if (new_ptr != nullptr)
    note_allocated(new_ptr, new_usize, stack_start != nullptr ? stack_start : __builtin_return_address(0));
}

void resize_failed(const ResizeTicket& ticket, void* ptr) noexcept {
  untake_block(ptr, Taken{ticket.tracked, ticket.unstamped, ticket.epoch, ticket.old_usize});
}

CountedTotals counted_totals() noexcept {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  const Totals sum = all_threads_locked();
  return CountedTotals{sum.allocations, sum.deallocations, sum.allocated_bytes};
}

int open_window() noexcept {
  const CountingSource source = counting_source();
  if (source == CountingSource::none) return kCountingFailed;
  // Before any lock: registering takes g_registry_mutex, which this thread's
  // own counting must never find held by this thread.
  ThreadSlot* opener = current_slot();
  std::lock_guard<std::mutex> open_close_lock(g_open_close_mutex);
  const std::uint64_t used = g_windows_used.load(std::memory_order_relaxed);
  if (~used == 0) return kNoFreeWindow;
  if (used == 0) {
    // Stale stamps compare as older than every new window only while epochs
    // span less than 2^31; forget them long before that, while nothing counts.
    const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
    if (epoch - g_stamps_cleared_at >= (1u << 30)) {
      g_stamps.clear();
      g_stamps_cleared_at = epoch;
    }
    if (source == CountingSource::jemalloc_hooks && !install_jemalloc_hooks()) return kCountingFailed;
  }
  const int index = __builtin_ctzll(~used);
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    g_windows_used.fetch_or(1ull << index, std::memory_order_acq_rel);
    Window& w = g_windows[index];
    std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed) + 1;
    if (epoch == 0) epoch = 1;  // 0 marks a share that belongs to no window
    w.epoch.store(epoch, std::memory_order_relaxed);
    w.opener = opener;
    w.opener_exited = false;
    w.opener_start = opener != nullptr ? opener->totals() : Totals{};
    w.opener_end = Totals{};
    w.start = all_threads_locked();
    w.exited_live_count = w.exited_live_bytes = w.exited_peak_bytes = 0;
    g_epoch.store(epoch, std::memory_order_relaxed);
  }
  // Release: a thread that sees the window active sees its epoch too.
  g_windows_active.fetch_or(1ull << index, std::memory_order_acq_rel);
  if (source == CountingSource::entry_points) g_entry_point_windows.fetch_or(1ull << index, std::memory_order_acq_rel);
  return index;
}

namespace {
WindowResult sum_window_locked(int window) noexcept {
  const Window& w = g_windows[window];
  const std::uint32_t epoch = w.epoch.load(std::memory_order_relaxed);
  std::int64_t live_count = w.exited_live_count;
  std::int64_t live_bytes = w.exited_live_bytes;
  std::int64_t peak_bytes = w.exited_peak_bytes;
  for (const ThreadSlot* s = g_slots; s != nullptr; s = s->next) {
    const WindowShare& share = s->shares[window];
    if (!s->in_use || share.epoch.load(std::memory_order_acquire) != epoch) continue;
    live_count += share.live_count.load(std::memory_order_relaxed);
    live_bytes += share.live_bytes.load(std::memory_order_relaxed);
    peak_bytes += share.peak_bytes.load(std::memory_order_relaxed);
  }
  const Totals now = all_threads_locked();
  Totals opener_now = w.opener_start;
  if (w.opener_exited) {
    opener_now = w.opener_end;
  } else if (w.opener != nullptr) {
    opener_now = w.opener->totals();
  }
  WindowResult r;
  r.live_allocations = static_cast<std::uint64_t>(std::max<std::int64_t>(0, live_count));
  r.live_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, live_bytes));
  // Each share's peak is at least its live bytes, so the sum is at least the
  // window's; the max() covers shares that went negative (frees of blocks
  // another thread allocated) but were clamped in live_bytes above.
  r.peak_bytes = std::max(r.live_bytes, static_cast<std::uint64_t>(std::max<std::int64_t>(0, peak_bytes)));
  const std::uint64_t allocations = now.allocations - w.start.allocations;
  const std::uint64_t bytes = now.allocated_bytes - w.start.allocated_bytes;
  const std::uint64_t opener_allocations = opener_now.allocations - w.opener_start.allocations;
  const std::uint64_t opener_bytes = opener_now.allocated_bytes - w.opener_start.allocated_bytes;
  r.other_thread_allocations = allocations > opener_allocations ? allocations - opener_allocations : 0;
  r.other_thread_bytes = bytes > opener_bytes ? bytes - opener_bytes : 0;
  return r;
}
}  // namespace

WindowResult peek_window(int window) noexcept {
  if (window < 0 || window >= kMaxWindows) return {};
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  return sum_window_locked(window);
}

bool try_peek_window(int window, int wait_ms, WindowResult* result, CountedTotals* totals) noexcept {
  if (window < 0 || window >= kMaxWindows) return false;
  for (int waited_us = 0; !g_registry_mutex.try_lock(); waited_us += 100) {
    if (waited_us >= wait_ms * 1000) return false;
    const timespec pause{0, 100 * 1000};
    ::nanosleep(&pause, nullptr);
  }
  *result = sum_window_locked(window);
  const Totals sum = all_threads_locked();
  *totals = CountedTotals{sum.allocations, sum.deallocations, sum.allocated_bytes};
  g_registry_mutex.unlock();
  return true;
}

WindowResult close_window(int window) noexcept {
  if (window < 0 || window >= kMaxWindows) return {};
  // Registers the closing thread, if new, before any lock (see open_window).
  (void)current_slot();
  const std::uint64_t bit = 1ull << window;
  g_entry_point_windows.fetch_and(~bit, std::memory_order_acq_rel);
  const std::uint64_t before = g_windows_active.fetch_and(~bit, std::memory_order_acq_rel);
  WindowResult r = peek_window(window);
  if ((before & ~bit) == 0 && g_unstamped_used.load(std::memory_order_relaxed)) {
    // No window is counting: forget the tracked pointers so the table stays
    // small between scopes. A pointer inserted concurrently with this clear
    // is harmless: its epoch predates every future window. Stamps need no
    // clearing for the same reason.
    Locked lock(g_unstamped);
    g_unstamped.clear();
  }
  std::lock_guard<std::mutex> lock(g_open_close_mutex);
  if (r.live_allocations > 0) follow_residue(g_windows[window].epoch.load(std::memory_order_relaxed));
  // With the registry: an exiting thread folds its shares only into windows still in use.
  std::lock_guard<std::mutex> registry_lock(g_registry_mutex);
  g_windows_used.fetch_and(~bit, std::memory_order_acq_rel);
  return r;
}

std::uint32_t window_epoch(int window) noexcept {
  if (window < 0 || window >= kMaxWindows) return 0;
  return g_windows[window].epoch.load(std::memory_order_relaxed);
}

std::optional<ReleasedBlocks> released_since_close(std::uint32_t epoch) noexcept {
  if (epoch == 0) return std::nullopt;
  const ResidueSlot& slot = g_residue[epoch % kResidueSlots];
  if (slot.epoch.load(std::memory_order_acquire) != epoch) return std::nullopt;
  return ReleasedBlocks{slot.freed_count.load(std::memory_order_relaxed),
                        slot.freed_bytes.load(std::memory_order_relaxed)};
}

void skip_next_allocation() noexcept {
  t_skip_next = true;
  t_skipped_bytes = 0;
}

std::uint64_t take_skipped_bytes() noexcept {
  std::uint64_t bytes = t_skipped_bytes;
  t_skip_next = false;
  t_skipped_bytes = 0;
  return bytes;
}

HookSuppressor::HookSuppressor() noexcept : previous_(t_suppressed) { t_suppressed = true; }
HookSuppressor::~HookSuppressor() { t_suppressed = previous_; }

}  // namespace heapgate::detail
