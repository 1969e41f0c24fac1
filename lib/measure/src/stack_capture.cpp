// SPDX-License-Identifier: MIT
// `exact` mode's stack recording in the allocation hooks (stack_capture.h): interned stacks in
// mmap'd arrays, per-block stack-id stamps, per-thread tallies, peak copies, heap_v2 output.
#include "stack_capture.h"

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>

#include "heapgate/integration.h"
#include "heapgate/profile.h"
#include "heapgate/sys.h"
#include "heapgate/unwinder_control.h"
#include "live_table.h"
#include "raw_writer.h"

namespace heapgate::detail {

std::atomic<bool> g_capturing{false};

namespace {

// jemalloc keeps at most 128 frames of a stack (PROF_BT_MAX); so does this.
constexpr int kMaxFrames = 128;
// limit_stack_depth(): the innermost frames a stack keeps, at most kMaxFrames.
std::atomic<int> g_depth_limit{kMaxFrames};
// The counting's own frames (this file's, alloc_counting.cpp's and the entry
// point's or hook's) come first.
constexpr int kOwnFramesSearched = 8;

// A growable array in mmap'd memory: the hooks must never call malloc.
// The largest mapping a MappedArray keeps across recordings.
constexpr std::size_t kKeptMappingBytes = std::size_t{1} << 20;

template <typename T>
class MappedArray {
 public:
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  // New elements are zero.
  bool resize(std::size_t n) noexcept {
    if (n > capacity_ && !reserve(std::max(n, capacity_ * 2))) return false;
    if (n < size_) std::memset(static_cast<void*>(data_ + n), 0, (size_ - n) * sizeof(T));
    size_ = n;
    return true;
  }
  bool append(const T* values, std::size_t n) noexcept {
    const std::size_t at = size_;
    if (!resize(size_ + n)) return false;
    std::memcpy(static_cast<void*>(data_ + at), values, n * sizeof(T));
    return true;
  }
  void release() noexcept {
    if (data_ != nullptr) ::munmap(data_, capacity_ * sizeof(T));
    data_ = nullptr;
    size_ = capacity_ = 0;
  }
  // Empty again. A small mapping is kept for the next recording: a recording
  // per test that unmapped and mapped its arrays again made 4 munmap() calls
  // a test, each a TLB flush across cores, and fresh pages to fault in (the
  // call-sites run of 1,000 tiny tests spent a third of its time there).
  void clear() noexcept {
    if (capacity_ * sizeof(T) > kKeptMappingBytes) {
      release();
      return;
    }
    if (size_ > 0) std::memset(static_cast<void*>(data_), 0, size_ * sizeof(T));
    size_ = 0;
  }

 private:
  bool reserve(std::size_t n) noexcept {
    n = std::max<std::size_t>(n, 4096 / sizeof(T));
    void* mem = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return false;
    if (data_ != nullptr) {
      std::memcpy(mem, static_cast<const void*>(data_), size_ * sizeof(T));
      ::munmap(data_, capacity_ * sizeof(T));
    }
    data_ = static_cast<T*>(mem);
    capacity_ = n;
    return true;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

struct CapturedStack {
  std::uint64_t hash;
  std::uint32_t first_frame;  // into g_frames
  std::uint32_t depth;
  std::uint64_t allocations;
  std::uint64_t allocated_bytes;
  std::int64_t live_allocations;
  std::int64_t live_bytes;
};

struct PointerEntry {
  std::uintptr_t key;  // 0 = empty
  std::uint32_t stack;
  std::uint32_t size;  // pack_size
};

// One lock for the stacks and the counts, the pointer table's: the unwinding
// and the stack ids happen outside it.
LiveTable<PointerEntry> g_pointers;
// Which stack each live block was recorded with: an id stamp beside each
// granule of the heap (block_stamps.h), as the counting stamps its window.
// A hash table of pointers missed the cache on most inserts and erases once
// many blocks stayed live, grew by copying, and held ~64 bytes a live block
// (a map of 500,000 entries: 66 MB more than `counters`, a tenth of the time
// in page faults). A stamp is kGenerationShift bits of stack id + 1 under the
// recording's generation, so stamps left from an earlier recording (a block
// freed while none ran) never match. Blocks that cannot be stamped, and ids
// too large for a stamp, go to g_pointers.
BlockStamps g_stack_ids;
std::atomic<bool> g_stack_ids_ready{false};  // set once, before the first recording
constexpr unsigned kGenerationShift = 24;
constexpr std::uint32_t kIdMask = (1u << kGenerationShift) - 1;
constexpr std::uint32_t kMostStampedId = kIdMask - 1;
// The recording's generation, in the two forms the hooks need, read in one
// load: the low 32 bits are the stamps' tag (a generation of 1-255 once a
// recording began, << kGenerationShift, wrapping); the high 32 bits count
// every recording begun or cleared and do not wrap, so a thread's tally left
// from 255 recordings ago is never taken for this one's. Changed under
// g_pointers' lock, read by the hooks without it.
std::atomic<std::uint64_t> g_generation{0};
std::uint32_t tag_of(std::uint64_t generation) noexcept { return static_cast<std::uint32_t>(generation); }
std::uint32_t epoch_of(std::uint64_t generation) noexcept { return static_cast<std::uint32_t>(generation >> 32); }
std::atomic<bool> g_pointers_used{false};  // g_pointers may hold a block of this recording
MappedArray<void*> g_frames;
MappedArray<CapturedStack> g_stacks;
MappedArray<std::uint32_t> g_index;  // open addressing over g_stacks: id + 1, 0 = empty
// The copy of the stacks' live counts at the peak (track_peak_stacks).
struct PeakCounts {
  std::int64_t live_allocations;
  std::int64_t live_bytes;
};
bool g_track_peak = false;
// With g_track_peak: the live bytes of all stacks, changed by every count
// (one atomic add, so each value it passes through was the heap's at some
// instant and its highest is exact), and that highest.
std::atomic<std::int64_t> g_live_bytes_now{0};
std::atomic<std::int64_t> g_peak_bytes{0};
// The copy's live bytes (read without the lock to decide on a new copy) and
// blocks; under the lock.
std::atomic<std::int64_t> g_peak_copy_bytes{0};
std::int64_t g_peak_copy_allocations = 0;
// With g_track_peak, a program whose blocks all come from one thread counts
// them under the lock, uncontended, and follows the live bytes with plain
// additions: a locked add per block (what the tallies need for an exact
// peak) cost `heapgate record` 8% on one thread. Once a second thread
// counts, every thread counts in its tally for the rest of the recording.
// Turned on under the lock, so a count made under it before ends the old way.
std::atomic<bool> g_peak_many_threads{false};
std::atomic<const CaptureThread*> g_peak_first_thread{nullptr};
MappedArray<PeakCounts> g_peak;  // by stack id; stacks interned after the copy held nothing then
// A stack's counts in this recording: those counted under the lock plus
// every thread's tally.
struct StackSums {
  std::int64_t allocations;
  std::int64_t allocated_bytes;
  std::int64_t live_allocations;
  std::int64_t live_bytes;
};
MappedArray<StackSums> g_sums;  // by stack id, as sum_stacks_locked() left them
// This thread holds g_pointers' lock: a signal handler on it must not wait for it.
__attribute__((tls_model("initial-exec"))) thread_local bool t_holds_lock = false;

// Set before g_capturing turns on; always the same function once set.
std::atomic<BacktraceFn> g_backtrace{nullptr};
// heapgate's own walk (frame_walker.h) comes first; libunwind takes the
// stacks it cannot step through.
std::atomic<bool> g_walk{false};

using Locked = std::lock_guard<LiveTable<PointerEntry>>;

// One stack's counts in one thread's tally. Its thread adds with a plain
// load and store (no locked instruction); a profile's writer reads them
// meanwhile, and sums over threads, so a thread's live counts may be
// negative (it freed blocks another thread recorded).
struct TallyCounts {
  std::atomic<std::int64_t> allocations;
  std::atomic<std::int64_t> allocated_bytes;
  std::atomic<std::int64_t> live_allocations;
  std::atomic<std::int64_t> live_bytes;
};
void add(std::atomic<std::int64_t>& count, std::int64_t n) noexcept {
  count.store(count.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

constexpr std::uint32_t kTallyChunkStacks = 512;  // 16 KiB a chunk
constexpr std::uint32_t kTallyChunks = 8192;      // stacks beyond 4M are counted under the lock
constexpr std::uint32_t kCachedStacks = 16;

}  // namespace

// Every recorded block used to take g_pointers' lock twice (the stack's id
// and counts when made, the counts when freed): eight threads in one window
// on two cores spent most of their time waiting for it (docs/performance.md,
// "per-thread stack counts"). Now a thread counts into its own tally and finds
// the ids of the stacks it met last in its own cache; the lock is taken only
// to intern a stack the thread has not met lately. The tallies of all threads
// are summed when a profile is written.
struct ThreadTally {
  // The recording its counts are for (epoch_of(g_generation)): the owner
  // zeroes an older recording's counts before it counts again, and the
  // writer of a profile skips tallies of another recording.
  std::atomic<std::uint32_t> epoch{0};
  // Its thread is counting in it: a signal handler's block on that thread
  // goes the locked way instead.
  bool busy = false;
  std::atomic<std::uint32_t> chunks_touched{0};    // chunks [0, this) may hold counts of `epoch`
  ThreadTally* next = nullptr;                     // on g_tallies; set before it is published
  std::atomic<TallyCounts*> chunks[kTallyChunks];  // by stack id / kTallyChunkStacks, mmap'd on first use
  // The stacks met last, by hash: a hit needs the same frames, so two
  // stacks whose hashes collide are never taken for each other.
  struct CachedStack {
    std::uint32_t epoch;  // 0: empty (recordings begin at epoch 1)
    std::uint32_t id;
    std::uint64_t hash;
    std::uint32_t depth;
    void* frames[kMaxFrames];
  };
  CachedStack cache[kCachedStacks];
};

namespace {

// Every thread's tally, never freed: a tally stays with its thread's slot in
// alloc_counting.cpp, and the slot goes to the next thread when its thread exits.
std::atomic<ThreadTally*> g_tallies{nullptr};

// A new tally for `thread`, on the list; nullptr when out of memory.
__attribute__((noinline, cold)) ThreadTally* new_tally(CaptureThread* thread) noexcept {
  void* mem = ::mmap(nullptr, sizeof(ThreadTally), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto* tally = new (mem) ThreadTally;
  tally->next = g_tallies.load(std::memory_order_relaxed);
  while (!g_tallies.compare_exchange_weak(tally->next, tally, std::memory_order_release, std::memory_order_relaxed)) {
  }
  thread->tally = tally;
  return tally;
}

// With g_track_peak while one thread has counted: whether `thread` is
// another, which turns the tallies on for good.
__attribute__((noinline)) bool second_thread_counts(const CaptureThread* thread) noexcept {
  const CaptureThread* first = g_peak_first_thread.load(std::memory_order_relaxed);
  if (first == thread) return false;
  if (first == nullptr && g_peak_first_thread.compare_exchange_strong(first, thread)) return false;
  const Locked lock(g_pointers);
  g_peak_many_threads.store(true, std::memory_order_release);
  return true;
}

// The calling thread's tally, made on first use; nullptr when the block
// must be counted under the lock: no thread slot, `heapgate record` while
// one thread counts, out of memory, or the tally is in use below this call
// (a signal handler).
__attribute__((always_inline)) inline ThreadTally* tally_of(CaptureThread* thread) noexcept {
  if (thread == nullptr) return nullptr;
  if (g_track_peak && !g_peak_many_threads.load(std::memory_order_acquire) && !second_thread_counts(thread)) {
    return nullptr;
  }
  ThreadTally* tally = thread->tally;
  if (tally == nullptr && (tally = new_tally(thread)) == nullptr) return nullptr;
  return tally->busy ? nullptr : tally;
}

// The counts of stack `id` in `tally` for the recording `epoch`, an older
// recording's counts zeroed first; nullptr when out of memory or the id is
// beyond a tally's range. Only the tally's thread calls this.
TallyCounts* tally_counts(ThreadTally& tally, std::uint32_t epoch, std::uint32_t id) noexcept {
  if (tally.epoch.load(std::memory_order_relaxed) != epoch) {
    const std::uint32_t touched = tally.chunks_touched.load(std::memory_order_relaxed);
    for (std::uint32_t c = 0; c < touched; ++c) {
      if (TallyCounts* chunk = tally.chunks[c].load(std::memory_order_relaxed)) {
        std::memset(static_cast<void*>(chunk), 0, kTallyChunkStacks * sizeof(TallyCounts));
      }
    }
    tally.chunks_touched.store(0, std::memory_order_relaxed);
    tally.epoch.store(epoch, std::memory_order_release);
  }
  const std::uint32_t c = id / kTallyChunkStacks;
  if (c >= kTallyChunks) return nullptr;
  TallyCounts* chunk = tally.chunks[c].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    void* mem = ::mmap(nullptr, kTallyChunkStacks * sizeof(TallyCounts), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    chunk = static_cast<TallyCounts*>(mem);
    tally.chunks[c].store(chunk, std::memory_order_release);
  }
  if (c >= tally.chunks_touched.load(std::memory_order_relaxed)) {
    tally.chunks_touched.store(c + 1, std::memory_order_release);
  }
  return &chunk[id % kTallyChunkStacks];
}

// Sets the tally's busy flag for the scope, so that a signal handler's
// allocation on the same thread counts the locked way.
class TallyInUse {
 public:
  explicit TallyInUse(ThreadTally& tally) noexcept : tally_(tally) {
    tally_.busy = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~TallyInUse() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    tally_.busy = false;
  }
  TallyInUse(const TallyInUse&) = delete;
  TallyInUse& operator=(const TallyInUse&) = delete;

 private:
  ThreadTally& tally_;
};

// Word by word, not memcmp, outside the lock: the walk has just stored
// `frames` a word at a time, and memcmp's wide loads of them wait for those
// stores to retire (a quarter of `exact`'s time on the mixed workload).
bool same_frames(void* const* a, void* const* b, int depth) noexcept {
  for (int i = 0; i < depth; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// Under the lock, whose taking waited for the walk's stores: memcmp's wide
// loads find them in the cache, and on deep stacks it is the quicker.
bool same_stack(const CapturedStack& r, std::uint64_t hash, void* const* frames, int depth) noexcept {
  return r.hash == hash && r.depth == static_cast<std::uint32_t>(depth) &&
         std::memcmp(&g_frames[r.first_frame], frames, static_cast<std::size_t>(depth) * sizeof(void*)) == 0;
}

// Under g_lock. Rebuilds the index at twice the stacks' count.
bool grow_index() noexcept {
  const std::size_t capacity = g_index.size() == 0 ? 1024 : g_index.size() * 2;
  g_index.clear();
  if (!g_index.resize(capacity)) return false;
  for (std::uint32_t id = 0; id < g_stacks.size(); ++id) {
    std::size_t i = g_stacks[id].hash & (capacity - 1);
    while (g_index[i] != 0) i = (i + 1) & (capacity - 1);
    g_index[i] = id + 1;
  }
  return true;
}

// Under g_lock: the stack's id, recorded on first sight; false when out of
// memory. `hash` is stack_hash(frames, depth).
bool intern(void* const* frames, int depth, std::uint64_t hash, std::uint32_t* id) noexcept {
  if ((g_stacks.size() + 1) * 2 > g_index.size() && !grow_index()) return false;
  const std::size_t mask = g_index.size() - 1;
  std::size_t i = hash & mask;
  for (; g_index[i] != 0; i = (i + 1) & mask) {
    if (same_stack(g_stacks[g_index[i] - 1], hash, frames, depth)) {
      *id = g_index[i] - 1;
      return true;
    }
  }
  const CapturedStack record{
      hash, static_cast<std::uint32_t>(g_frames.size()), static_cast<std::uint32_t>(depth), 0, 0, 0, 0};
  if (!g_frames.append(frames, static_cast<std::size_t>(depth)) || !g_stacks.append(&record, 1)) return false;
  *id = static_cast<std::uint32_t>(g_stacks.size() - 1);
  g_index[i] = *id + 1;
  return true;
}

// Under the lock, with no hook recording. A new generation makes every id
// stamp written before it stale; once they wrap, the stamps are forgotten.
void next_generation_locked() noexcept {
  const std::uint64_t now = g_generation.load(std::memory_order_relaxed);
  std::uint32_t generation = tag_of(now) >> kGenerationShift;
  if (generation == 0xFF) {
    g_stack_ids.clear();
    generation = 0;
  }
  const std::uint64_t epoch = epoch_of(now) + 1;
  g_generation.store((epoch << 32) | ((generation + 1) << kGenerationShift), std::memory_order_release);
}

void clear_locked() noexcept {
  next_generation_locked();
  g_pointers.clear();
  g_pointers_used.store(false, std::memory_order_relaxed);
  g_frames.clear();
  g_stacks.clear();
  g_index.clear();
  g_peak.clear();
  g_sums.clear();
  g_live_bytes_now.store(0, std::memory_order_relaxed);
  g_peak_bytes.store(0, std::memory_order_relaxed);
  g_peak_copy_bytes.store(0, std::memory_order_relaxed);
  g_peak_copy_allocations = 0;
  g_peak_many_threads.store(false, std::memory_order_relaxed);
  g_peak_first_thread.store(nullptr, std::memory_order_relaxed);
}

std::uint64_t non_negative(std::int64_t v) noexcept { return v > 0 ? static_cast<std::uint64_t>(v) : 0; }

// Under the lock: every stack's sums into g_sums, tally by tally and chunk
// by chunk (each tally's memory read in order, once); false when out of
// memory. The tallies are read as they are: a thread still counting may
// change them meanwhile.
bool sum_stacks_locked() noexcept {
  if (!g_sums.resize(g_stacks.size())) return false;
  for (std::size_t id = 0; id < g_stacks.size(); ++id) {
    const CapturedStack& r = g_stacks[id];
    g_sums[id] = StackSums{static_cast<std::int64_t>(r.allocations), static_cast<std::int64_t>(r.allocated_bytes),
                           r.live_allocations, r.live_bytes};
  }
  const std::uint32_t epoch = epoch_of(g_generation.load(std::memory_order_relaxed));
  for (const ThreadTally* t = g_tallies.load(std::memory_order_acquire); t != nullptr; t = t->next) {
    if (t->epoch.load(std::memory_order_acquire) != epoch) continue;
    const std::uint32_t touched = t->chunks_touched.load(std::memory_order_acquire);
    for (std::uint32_t c = 0; c < touched; ++c) {
      const TallyCounts* counts = t->chunks[c].load(std::memory_order_acquire);
      if (counts == nullptr) continue;
      const std::size_t first = std::size_t{c} * kTallyChunkStacks;
      const std::size_t end = std::min<std::size_t>(first + kTallyChunkStacks, g_stacks.size());
      for (std::size_t id = first; id < end; ++id) {
        const TallyCounts& k = counts[id - first];
        StackSums& sum = g_sums[id];
        sum.allocations += k.allocations.load(std::memory_order_relaxed);
        sum.allocated_bytes += k.allocated_bytes.load(std::memory_order_relaxed);
        sum.live_allocations += k.live_allocations.load(std::memory_order_relaxed);
        sum.live_bytes += k.live_bytes.load(std::memory_order_relaxed);
      }
    }
  }
  return true;
}

// Under the lock: the copy of every stack's live counts now, and its totals.
void copy_peak_locked() noexcept {
  // Out of memory: the older copy stays.
  if (!sum_stacks_locked() || !g_peak.resize(g_stacks.size())) return;
  std::int64_t bytes = 0;
  std::int64_t allocations = 0;
  for (std::size_t id = 0; id < g_stacks.size(); ++id) {
    g_peak[id] = PeakCounts{g_sums[id].live_allocations, g_sums[id].live_bytes};
    bytes += g_sums[id].live_bytes;
    allocations += g_sums[id].live_allocations;
  }
  g_peak_copy_allocations = allocations;
  g_peak_copy_bytes.store(bytes, std::memory_order_relaxed);
}

// With g_track_peak, after every count: `delta` live bytes more (or fewer).
// A new copy only past 1/256 above the last: a growing heap copies the
// stacks O(log(peak)) times, not per block. `locked`: the caller holds the
// lock. With one thread the copy is the heap at one instant, the peak's
// within 1/256. With several, the heap may change while the lock is awaited
// and while the copy is read: the copy is made if the heap is still above
// the last one, of the counts as they are read (process.json's
// peak_stacks_bytes beside the exact peak_bytes says how close it came).
__attribute__((always_inline)) inline void note_live(std::int64_t delta, bool locked) noexcept {
  std::int64_t now = 0;
  if (locked && !g_peak_many_threads.load(std::memory_order_relaxed)) {
    // Every count is made under the lock (see g_peak_many_threads).
    now = g_live_bytes_now.load(std::memory_order_relaxed) + delta;
    g_live_bytes_now.store(now, std::memory_order_relaxed);
    if (now > g_peak_bytes.load(std::memory_order_relaxed)) g_peak_bytes.store(now, std::memory_order_relaxed);
  } else {
    now = g_live_bytes_now.fetch_add(delta, std::memory_order_relaxed) + delta;
    std::int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
    while (delta > 0 && now > peak && !g_peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  if (delta <= 0) return;
  const std::int64_t copied = g_peak_copy_bytes.load(std::memory_order_relaxed);
  if (now <= copied + copied / 256) return;
  if (!locked) {
    g_pointers.lock();
    t_holds_lock = true;
  }
  // Another thread may have copied a higher heap while this one waited.
  if (g_live_bytes_now.load(std::memory_order_relaxed) > g_peak_copy_bytes.load(std::memory_order_relaxed)) {
    copy_peak_locked();
  }
  if (!locked) {
    t_holds_lock = false;
    g_pointers.unlock();
  }
}

// Under the lock, after sum_stacks_locked().
CaptureTotals totals_locked() noexcept {
  CaptureTotals totals;
  for (std::size_t id = 0; id < g_stacks.size(); ++id) {
    const StackSums& s = g_sums[id];
    totals.live_allocations += non_negative(s.live_allocations);
    totals.live_bytes += non_negative(s.live_bytes);
    totals.allocations += non_negative(s.allocations);
    totals.allocated_bytes += non_negative(s.allocated_bytes);
  }
  // Without g_track_peak the peak is not followed: only what is live now.
  totals.peak_bytes = std::max(totals.live_bytes, non_negative(g_peak_bytes.load(std::memory_order_relaxed)));
  totals.peak_copy_bytes = non_negative(g_peak_copy_bytes.load(std::memory_order_relaxed));
  totals.peak_copy_allocations = non_negative(g_peak_copy_allocations);
  return totals;
}

// A stack's two columns in `view`; after sum_stacks_locked().
Counts view_counts(CaptureView view, std::size_t id) noexcept {
  switch (view) {
    case CaptureView::live: {
      const StackSums& r = g_sums[id];
      return Counts{non_negative(r.live_allocations), non_negative(r.live_bytes), non_negative(r.allocations),
                    non_negative(r.allocated_bytes)};
    }
    case CaptureView::allocations: {
      const StackSums& r = g_sums[id];
      return Counts{non_negative(r.allocations), non_negative(r.allocated_bytes), non_negative(r.allocations),
                    non_negative(r.allocated_bytes)};
    }
    case CaptureView::peak:
      break;
  }
  if (id >= g_peak.size()) return Counts{};
  const PeakCounts& p = g_peak[id];
  return Counts{non_negative(p.live_allocations), non_negative(p.live_bytes), non_negative(p.live_allocations),
                non_negative(p.live_bytes)};
}

void put_counts(RawWriter& out, const Counts& c) noexcept {
  out.put("  t*: ");
  out.number(c.live_objects);
  out.put(": ");
  out.number(c.live_bytes);
  out.put(" [");
  out.number(c.accum_objects);
  out.put(": ");
  out.number(c.accum_bytes);
  out.put("]\n");
}

// Under the lock, after sum_stacks_locked(): the profile write_profile()
// would write for these counts.
bool write_view_locked(int fd, CaptureView view) noexcept {
  RawWriter out(fd);
  Counts total;
  for (std::size_t id = 0; id < g_stacks.size(); ++id) {
    const Counts c = view_counts(view, id);
    total.live_objects += c.live_objects;
    total.live_bytes += c.live_bytes;
    total.accum_objects += c.accum_objects;
    total.accum_bytes += c.accum_bytes;
  }
  out.put("heap_v2/1\n");
  put_counts(out, total);
  for (std::size_t id = 0; id < g_stacks.size(); ++id) {
    const Counts c = view_counts(view, id);
    // The peak's copy leaves out stacks that held nothing then.
    if (view == CaptureView::peak && c.live_objects == 0) continue;
    const CapturedStack& r = g_stacks[id];
    out.put('@');
    for (std::uint32_t f = 0; f < r.depth; ++f) {
      const auto frame = reinterpret_cast<std::uintptr_t>(g_frames[r.first_frame + f]);
      out.put(frame == 0 ? " " : " 0x");
      out.number(frame, 16);
    }
    out.put('\n');
    put_counts(out, c);
  }
  out.put("\nMAPPED_LIBRARIES:\n");
  out.copy_file("/proc/self/maps");
  return out.flush();
}

bool lock_within(int wait_ms) noexcept {
  for (int waited_us = 0;; waited_us += 100) {
    if (g_pointers.try_lock()) return true;
    if (waited_us >= wait_ms * 1000) return false;
    const timespec pause{0, 100 * 1000};
    ::nanosleep(&pause, nullptr);
  }
}

}  // namespace

bool stacks_from_jemalloc_requested() noexcept {
  const char* env = std::getenv("HEAPGATE_EXACT_STACKS");
  return env != nullptr && std::string_view(env) == "jemalloc";
}

bool begin_stack_capture() noexcept {
  const BacktraceFn backtrace = libunwind_backtrace();
  if (backtrace == nullptr) return false;
  // Without the stamps every block goes to g_pointers.
  if (!g_stack_ids_ready.load(std::memory_order_relaxed) && g_stack_ids.init()) {
    g_stack_ids_ready.store(true, std::memory_order_relaxed);
  }
  g_backtrace.store(backtrace, std::memory_order_relaxed);
  g_walk.store(frame_walker_ready(), std::memory_order_relaxed);
  {
    Locked lock(g_pointers);
    clear_locked();
  }
  g_capturing.store(true, std::memory_order_release);
  return true;
}

void end_stack_capture() noexcept { g_capturing.store(false, std::memory_order_release); }

void limit_stack_depth(int frames) noexcept {
  g_depth_limit.store(std::clamp(frames, 1, kMaxFrames), std::memory_order_relaxed);
}

void clear_stack_capture() noexcept {
  Locked lock(g_pointers);
  clear_locked();
}

namespace {

// A stamped block of `usize` bytes with the stack frames[0, depth) counted
// in its thread's tally; false when it must be counted under the lock
// instead (out of memory, or an id too large for a stamp or a tally).
bool count_in_tally(ThreadTally& tally, void* const* frames, int depth, std::uint64_t hash, std::uint64_t usize,
                    std::atomic<std::uint32_t>* stamp) noexcept {
  if (stamp == nullptr) return false;
  std::uint64_t generation = g_generation.load(std::memory_order_acquire);
  ThreadTally::CachedStack& cached = tally.cache[(hash >> 32) % kCachedStacks];
  std::uint32_t id = 0;
  if (cached.epoch == epoch_of(generation) && cached.hash == hash &&
      cached.depth == static_cast<std::uint32_t>(depth) && same_frames(cached.frames, frames, depth)) {
    id = cached.id;
  } else {
    {
      Locked lock(g_pointers);
      t_holds_lock = true;
      // The id belongs to the recording the lock sees.
      generation = g_generation.load(std::memory_order_relaxed);
      const bool interned = intern(frames, depth, hash, &id);
      t_holds_lock = false;
      if (!interned) return false;
    }
    cached.epoch = epoch_of(generation);
    cached.id = id;
    cached.hash = hash;
    cached.depth = static_cast<std::uint32_t>(depth);
    std::memcpy(cached.frames, frames, static_cast<std::size_t>(depth) * sizeof(void*));
  }
  if (id > kMostStampedId) return false;
  TallyCounts* counts = tally_counts(tally, epoch_of(generation), id);
  if (counts == nullptr) return false;
  const auto size = static_cast<std::int64_t>(usize);
  add(counts->allocations, 1);
  add(counts->allocated_bytes, size);
  add(counts->live_allocations, 1);
  add(counts->live_bytes, size);
  // A recording begun since `generation` was read never matches this tag:
  // the block and its counts belong to the one that ended.
  stamp->store(tag_of(generation) | (id + 1), std::memory_order_relaxed);
  return true;
}

}  // namespace

void capture_alloc(void* ptr, std::uint64_t usize, void* caller, CaptureThread* thread) noexcept {
  void* frames[kMaxFrames + kOwnFramesSearched];
  WalkMemory* walk = nullptr;
  if (thread != nullptr) {
    // Frames are 16-byte aligned: call paths of different depths differ here.
    const auto depth = reinterpret_cast<std::uintptr_t>(&frames);
    walk = &thread->walks[(depth >> 4) % CaptureThread::kWalkMemories];
  }
  static_assert(kOwnFramesSearched <= kWalkHashes);
  WalkHashes hashes;
  int got = 0;
  {
    // libunwind allocates a little on a thread's first unwind (its per-thread
    // cache); jemalloc calls the hooks for it again: heapgate's cost, not the test's.
    HookSuppressor suppress;
    const int limit = g_depth_limit.load(std::memory_order_relaxed) + kOwnFramesSearched;
    got = g_walk.load(std::memory_order_relaxed) ? walk_stack(frames, limit, walk, &hashes) : -1;
    if (got < 0) got = g_backtrace.load(std::memory_order_relaxed)(frames, limit);
  }
  int first = 0;
  for (int i = 0; i < got && i < kOwnFramesSearched; ++i) {
    if (frames[i] == caller) {
      first = i;
      break;
    }
  }
  const int depth = std::min(got - first, g_depth_limit.load(std::memory_order_relaxed));
  if (depth <= 0) return;
  // The walk hashed the whole stack from each of its first frames; a stack
  // cut at kMaxFrames is hashed as cut.
  const std::uint64_t hash =
      hashes.whole && depth == got - first ? hashes.of[first] : stack_hash(frames + first, depth);
  // Found before the lock: giving a page its run of stamps may take the
  // stamps' own lock, which is never taken inside this one.
  const auto key = reinterpret_cast<std::uintptr_t>(ptr);
  std::atomic<std::uint32_t>* stamp = nullptr;
  if (g_stack_ids_ready.load(std::memory_order_relaxed)) {
    stamp = thread != nullptr ? g_stack_ids.locate_cached<true>(thread->id_alloc, key, usize)
                              : g_stack_ids.find_or_add(key, usize);
  }
  if (ThreadTally* tally = tally_of(thread)) {
    bool counted = false;
    {
      const TallyInUse in_use(*tally);
      counted = count_in_tally(*tally, frames + first, depth, hash, usize, stamp);
    }
    if (counted) {
      if (g_track_peak) note_live(static_cast<std::int64_t>(usize), false);
      return;
    }
  }
  Locked lock(g_pointers);
  t_holds_lock = true;
  std::uint32_t id = 0;
  if (intern(frames + first, depth, hash, &id)) {
    CapturedStack& record = g_stacks[id];
    ++record.allocations;
    record.allocated_bytes += usize;
    ++record.live_allocations;
    record.live_bytes += static_cast<std::int64_t>(usize);
    if (stamp != nullptr && id <= kMostStampedId) {
      stamp->store(tag_of(g_generation.load(std::memory_order_relaxed)) | (id + 1), std::memory_order_relaxed);
    } else {
      if (stamp != nullptr) stamp->store(0, std::memory_order_relaxed);  // not an earlier block's id
      g_pointers.insert(PointerEntry{key, id, pack_size(usize)});
      g_pointers_used.store(true, std::memory_order_relaxed);
    }
    if (g_track_peak) note_live(static_cast<std::int64_t>(usize), true);
  }  // else out of memory: the block goes unrecorded
  t_holds_lock = false;
}

void lock_stack_capture_for_fork() noexcept {
  g_stack_ids.lock_for_fork();
  g_pointers.lock();
}
void unlock_stack_capture_after_fork() noexcept {
  g_pointers.unlock();
  g_stack_ids.unlock_after_fork();
}

namespace {

// Under the lock: a recorded block of stack `id` and `usize` bytes is gone.
void forget_block_locked(std::uint32_t id, std::uint64_t usize) noexcept {
  CapturedStack& record = g_stacks[id];
  const auto size = static_cast<std::int64_t>(usize);
  --record.live_allocations;
  record.live_bytes -= size;
  if (g_track_peak) note_live(-size, true);
}

}  // namespace

void capture_dalloc(void* ptr, std::uint64_t usize, CaptureThread* thread) noexcept {
  const auto key = reinterpret_cast<std::uintptr_t>(ptr);
  if (g_stack_ids_ready.load(std::memory_order_relaxed)) {
    // The size the page's stamps are for is the block's, as recorded: found
    // by the size given, or else by the page alone.
    std::uint64_t stamped_size = usize;
    std::atomic<std::uint32_t>* stamp = nullptr;
    if (usize != 0) {
      stamp = thread != nullptr ? g_stack_ids.locate_cached<false>(thread->id_free, key, usize)
                                : g_stack_ids.find(key, usize);
    }
    if (stamp == nullptr) stamp = g_stack_ids.find_by_page(key, &stamped_size);
    const std::uint32_t value = stamp != nullptr ? stamp->load(std::memory_order_relaxed) : 0;
    const std::uint64_t generation = g_generation.load(std::memory_order_acquire);
    if (value != 0 && (value & ~kIdMask) == tag_of(generation)) {
      stamp->store(0, std::memory_order_relaxed);
      const std::uint32_t id = (value & kIdMask) - 1;
      if (ThreadTally* tally = tally_of(thread)) {
        bool counted = false;
        {
          const TallyInUse in_use(*tally);
          if (TallyCounts* counts = tally_counts(*tally, epoch_of(generation), id)) {
            add(counts->live_allocations, -1);
            add(counts->live_bytes, -static_cast<std::int64_t>(stamped_size));
            counted = true;
          }
        }
        if (counted) {
          if (g_track_peak) note_live(-static_cast<std::int64_t>(stamped_size), false);
          return;
        }
      }
      Locked lock(g_pointers);
      t_holds_lock = true;
      // Unless the recording was cleared since the tag was read.
      if (g_generation.load(std::memory_order_relaxed) == generation) forget_block_locked(id, stamped_size);
      t_holds_lock = false;
      return;
    }
  }
  if (!g_pointers_used.load(std::memory_order_relaxed)) return;
  Locked lock(g_pointers);
  t_holds_lock = true;
  PointerEntry entry;
  if (g_pointers.erase(key, &entry)) forget_block_locked(entry.stack, unpack_size(entry.size));
  t_holds_lock = false;
}

void track_peak_stacks(bool on) noexcept {
  g_track_peak = on;
  g_pointers.release_old_tables(on);
}

bool write_capture_view(int fd, CaptureView view, int lock_wait_ms, CaptureTotals* totals) noexcept {
  // A signal that interrupted this thread inside the lock: the tables are
  // this thread's to read, and waiting would never end.
  const bool take = !t_holds_lock;
  if (take && !lock_within(lock_wait_ms)) return false;
  const bool summed = sum_stacks_locked();
  if (summed && totals != nullptr) *totals = totals_locked();
  const bool ok = summed && write_view_locked(fd, view);
  if (take) g_pointers.unlock();
  return ok;
}

Profile captured_profile(std::string maps_text) {
  Profile profile;
  profile.sample_period = 1;
  profile.maps_text = std::move(maps_text);
  {
    Locked lock(g_pointers);
    if (!sum_stacks_locked()) throw std::bad_alloc();
    profile.stacks.reserve(g_stacks.size());
    for (std::size_t id = 0; id < g_stacks.size(); ++id) {
      const CapturedStack& r = g_stacks[id];
      heapgate::StackRecord& out = profile.stacks.emplace_back();
      for (std::uint32_t f = 0; f < r.depth; ++f) {
        out.frames.push_back(reinterpret_cast<std::uintptr_t>(g_frames[r.first_frame + f]));
      }
      out.counts = view_counts(CaptureView::live, id);
      profile.totals.live_objects += out.counts.live_objects;
      profile.totals.live_bytes += out.counts.live_bytes;
      profile.totals.accum_objects += out.counts.accum_objects;
      profile.totals.accum_bytes += out.counts.accum_bytes;
    }
  }
  return profile;
}

Result<void> write_captured_profile(const std::string& path) {
  auto maps = sys::read_file("/proc/self/maps");
  if (!maps) return fail(std::move(maps.error()));
  return sys::write_file_atomic(path, write_profile(captured_profile(std::move(*maps))),
                                sys::Durability::process_crash);
}

}  // namespace heapgate::detail
