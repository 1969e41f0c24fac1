// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "stack_capture.h"

#include <sys/mman.h>

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

// One lock for all of it, the pointer table's: `exact` is for explaining one
// test, not for speed across threads, and the unwinding (the expensive part)
// happens outside it.
LiveTable<PointerEntry> g_pointers;
MappedArray<void*> g_frames;
MappedArray<CapturedStack> g_stacks;
MappedArray<std::uint32_t> g_index;  // open addressing over g_stacks: id + 1, 0 = empty
// Set before g_capturing turns on; always the same function once set.
std::atomic<BacktraceFn> g_backtrace{nullptr};

using Locked = std::lock_guard<LiveTable<PointerEntry>>;

std::uint64_t hash_frames(void* const* frames, int depth) noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(depth);
  for (int i = 0; i < depth; ++i) {
    h ^= reinterpret_cast<std::uintptr_t>(frames[i]);
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  return h;
}

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

// Under g_lock: the stack's id, recorded on first sight; false when out of memory.
bool intern(void* const* frames, int depth, std::uint32_t* id) noexcept {
  const std::uint64_t hash = hash_frames(frames, depth);
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

void clear_locked() noexcept {
  g_pointers.clear();
  g_frames.release();
  g_stacks.release();
  g_index.release();
}

}  // namespace

bool stacks_from_jemalloc_requested() noexcept {
  const char* env = std::getenv("HEAPGATE_EXACT_STACKS");
  return env != nullptr && std::string_view(env) == "jemalloc";
}

bool begin_stack_capture() noexcept {
  const BacktraceFn backtrace = libunwind_backtrace();
  if (backtrace == nullptr) return false;
  g_backtrace.store(backtrace, std::memory_order_relaxed);
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

void capture_alloc(void* ptr, std::uint64_t usize, void* caller) noexcept {
  void* frames[kMaxFrames + kOwnFramesSearched];
  int got = 0;
  {
    // libunwind allocates a little on a thread's first unwind (its per-thread
    // cache); jemalloc calls the hooks for it again: heapgate's cost, not the test's.
    HookSuppressor suppress;
    got = g_backtrace.load(std::memory_order_relaxed)(frames, kMaxFrames + kOwnFramesSearched);
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
  Locked lock(g_pointers);
  std::uint32_t id = 0;
  if (!intern(frames + first, depth, &id)) return;  // out of memory: the block goes unrecorded
  CapturedStack& record = g_stacks[id];
  ++record.allocations;
  record.allocated_bytes += usize;
  ++record.live_allocations;
  record.live_bytes += static_cast<std::int64_t>(usize);
  g_pointers.insert(PointerEntry{reinterpret_cast<std::uintptr_t>(ptr), id, pack_size(usize)});
}

void lock_stack_capture_for_fork() noexcept { g_pointers.lock(); }
void unlock_stack_capture_after_fork() noexcept { g_pointers.unlock(); }

void capture_dalloc(void* ptr) noexcept {
  Locked lock(g_pointers);
  PointerEntry entry;
  if (!g_pointers.erase(reinterpret_cast<std::uintptr_t>(ptr), &entry)) return;
  CapturedStack& record = g_stacks[entry.stack];
  --record.live_allocations;
  record.live_bytes -= static_cast<std::int64_t>(unpack_size(entry.size));
}

Result<void> write_captured_profile(const std::string& path) {
  auto maps = sys::read_file("/proc/self/maps");
  if (!maps) return fail(std::move(maps.error()));
  Profile profile;
  profile.sample_period = 1;
  profile.maps_text = std::move(*maps);
  {
    Locked lock(g_pointers);
    profile.stacks.reserve(g_stacks.size());
    for (std::size_t id = 0; id < g_stacks.size(); ++id) {
      const CapturedStack& r = g_stacks[id];
      heapgate::StackRecord& out = profile.stacks.emplace_back();
      for (std::uint32_t f = 0; f < r.depth; ++f) {
        out.frames.push_back(reinterpret_cast<std::uintptr_t>(g_frames[r.first_frame + f]));
      }
      out.counts =
          Counts{static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.live_allocations)),
                 static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.live_bytes)), r.allocations, r.allocated_bytes};
      profile.totals.live_objects += out.counts.live_objects;
      profile.totals.live_bytes += out.counts.live_bytes;
      profile.totals.accum_objects += out.counts.accum_objects;
      profile.totals.accum_bytes += out.counts.accum_bytes;
    }
  }
  return sys::write_file_atomic(path, write_profile(profile));
}

}  // namespace heapgate::detail
