// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "stack_capture.h"

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "heapgate/integration.h"
#include "heapgate/profile.h"
#include "heapgate/sys.h"
#include "heapgate/unwinder.h"
#include "live_table.h"
#include "raw_writer.h"

namespace heapgate::detail {

std::atomic<bool> g_capturing{false};

namespace {

// jemalloc keeps at most 128 frames of a stack (PROF_BT_MAX); so does this.
constexpr int kMaxFrames = 128;
// The counting's own frames (this file's, alloc_counting.cpp's and the entry
// point's or hook's) come first.
constexpr int kOwnFramesSearched = 8;

// A growable array in mmap'd memory: the hooks must never call malloc.
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
// The recording's generation (1-255 once one began) << kGenerationShift:
// changed under g_pointers' lock, read by the hooks without it.
std::atomic<std::uint32_t> g_id_tag{0};
std::atomic<bool> g_pointers_used{false};  // g_pointers may hold a block of this recording
MappedArray<void*> g_frames;
MappedArray<CapturedStack> g_stacks;
MappedArray<std::uint32_t> g_index;  // open addressing over g_stacks: id + 1, 0 = empty
// The recording's totals and the copy of its live counts at the peak
// (track_peak_stacks), all under g_pointers' lock.
struct PeakCounts {
  std::int64_t live_allocations;
  std::int64_t live_bytes;
};
bool g_track_peak = false;
std::int64_t g_live_allocations = 0;
std::int64_t g_live_bytes = 0;
std::uint64_t g_allocations = 0;
std::uint64_t g_allocated_bytes = 0;
std::int64_t g_peak_bytes = 0;
std::int64_t g_peak_copy_bytes = 0;
std::int64_t g_peak_copy_allocations = 0;
MappedArray<PeakCounts> g_peak;  // by stack id; stacks interned after the copy held nothing then
// This thread holds g_pointers' lock: a signal handler on it must not wait for it.
__attribute__((tls_model("initial-exec"))) thread_local bool t_holds_lock = false;

// Set before g_capturing turns on; always the same function once set.
std::atomic<BacktraceFn> g_backtrace{nullptr};
// heapgate's own walk (frame_walker.h) comes first; libunwind takes the
// stacks it cannot step through.
std::atomic<bool> g_walk{false};

using Locked = std::lock_guard<LiveTable<PointerEntry>>;

bool same_stack(const CapturedStack& r, std::uint64_t hash, void* const* frames, int depth) noexcept {
  return r.hash == hash && r.depth == static_cast<std::uint32_t>(depth) &&
         std::memcmp(&g_frames[r.first_frame], frames, static_cast<std::size_t>(depth) * sizeof(void*)) == 0;
}

// Under g_lock. Rebuilds the index at twice the stacks' count.
bool grow_index() noexcept {
  const std::size_t capacity = g_index.size() == 0 ? 1024 : g_index.size() * 2;
  g_index.release();
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
  std::uint32_t generation = g_id_tag.load(std::memory_order_relaxed) >> kGenerationShift;
  if (generation == 0xFF) {
    g_stack_ids.clear();
    generation = 0;
  }
  g_id_tag.store((generation + 1) << kGenerationShift, std::memory_order_relaxed);
}

void clear_locked() noexcept {
  next_generation_locked();
  g_pointers.clear();
  g_pointers_used.store(false, std::memory_order_relaxed);
  g_frames.release();
  g_stacks.release();
  g_index.release();
  g_peak.release();
  g_live_allocations = g_live_bytes = g_peak_bytes = g_peak_copy_bytes = g_peak_copy_allocations = 0;
  g_allocations = g_allocated_bytes = 0;
}

// Under the lock, after every allocation. A new copy only past 1/256 above
// the last: a growing heap copies the table O(log(peak)) times, not per block.
void note_live_locked() noexcept {
  if (g_live_bytes > g_peak_bytes) g_peak_bytes = g_live_bytes;
  if (!g_track_peak || g_live_bytes <= g_peak_copy_bytes + g_peak_copy_bytes / 256) return;
  if (!g_peak.resize(g_stacks.size())) return;  // out of memory: the older copy stays
  for (std::size_t id = 0; id < g_stacks.size(); ++id) {
    g_peak[id] = PeakCounts{g_stacks[id].live_allocations, g_stacks[id].live_bytes};
  }
  g_peak_copy_bytes = g_live_bytes;
  g_peak_copy_allocations = g_live_allocations;
}

std::uint64_t non_negative(std::int64_t v) noexcept { return v > 0 ? static_cast<std::uint64_t>(v) : 0; }

CaptureTotals totals_locked() noexcept {
  return CaptureTotals{non_negative(g_live_allocations),
                       non_negative(g_live_bytes),
                       g_allocations,
                       g_allocated_bytes,
                       non_negative(g_peak_bytes),
                       non_negative(g_peak_copy_bytes),
                       non_negative(g_peak_copy_allocations)};
}

// A stack's two columns in `view`.
Counts view_counts(CaptureView view, std::size_t id) noexcept {
  const CapturedStack& r = g_stacks[id];
  switch (view) {
    case CaptureView::live:
      return Counts{non_negative(r.live_allocations), non_negative(r.live_bytes), r.allocations, r.allocated_bytes};
    case CaptureView::allocations:
      return Counts{r.allocations, r.allocated_bytes, r.allocations, r.allocated_bytes};
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

// Under the lock: the profile write_profile() would write for these counts.
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

void clear_stack_capture() noexcept {
  Locked lock(g_pointers);
  clear_locked();
}

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
    got = g_walk.load(std::memory_order_relaxed) ? walk_stack(frames, kMaxFrames + kOwnFramesSearched, walk, &hashes)
                                                 : -1;
    if (got < 0) got = g_backtrace.load(std::memory_order_relaxed)(frames, kMaxFrames + kOwnFramesSearched);
  }
  int first = 0;
  for (int i = 0; i < got && i < kOwnFramesSearched; ++i) {
    if (frames[i] == caller) {
      first = i;
      break;
    }
  }
  const int depth = std::min(got - first, kMaxFrames);
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
      stamp->store(g_id_tag.load(std::memory_order_relaxed) | (id + 1), std::memory_order_relaxed);
    } else {
      if (stamp != nullptr) stamp->store(0, std::memory_order_relaxed);  // not an earlier block's id
      g_pointers.insert(PointerEntry{key, id, pack_size(usize)});
      g_pointers_used.store(true, std::memory_order_relaxed);
    }
    ++g_allocations;
    g_allocated_bytes += usize;
    ++g_live_allocations;
    g_live_bytes += static_cast<std::int64_t>(usize);
    note_live_locked();
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
  --g_live_allocations;
  g_live_bytes -= size;
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
    const std::uint32_t tag = g_id_tag.load(std::memory_order_relaxed);
    if (value != 0 && (value & ~kIdMask) == tag) {
      stamp->store(0, std::memory_order_relaxed);
      Locked lock(g_pointers);
      t_holds_lock = true;
      // Unless the recording was cleared since the tag was read.
      if (g_id_tag.load(std::memory_order_relaxed) == tag) forget_block_locked((value & kIdMask) - 1, stamped_size);
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
  if (totals != nullptr) *totals = totals_locked();
  const bool ok = write_view_locked(fd, view);
  if (take) g_pointers.unlock();
  return ok;
}

Profile captured_profile(std::string maps_text) {
  Profile profile;
  profile.sample_period = 1;
  profile.maps_text = std::move(maps_text);
  {
    Locked lock(g_pointers);
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
