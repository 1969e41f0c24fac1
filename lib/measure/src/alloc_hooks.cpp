// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "alloc_hooks.h"

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <mutex>

#include "heapgate/allocator.h"
#include "heapgate/sys.h"

// jemalloc's hook ABI (include/jemalloc/internal/hook.h, 5.1.0–5.3.x). It is
// private to jemalloc, so it is declared here; allocator.cpp checks the version.
extern "C" {
using je_hook_alloc = void (*)(void* extra, int type, void* result, std::uintptr_t result_raw,
                               std::uintptr_t args_raw[3]);
using je_hook_dalloc = void (*)(void* extra, int type, void* address, std::uintptr_t args_raw[3]);
using je_hook_expand = void (*)(void* extra, int type, void* address, std::size_t old_usize, std::size_t new_usize,
                                std::uintptr_t result_raw, std::uintptr_t args_raw[4]);
struct je_hooks_t {
  je_hook_alloc alloc_hook;
  je_hook_dalloc dalloc_hook;
  je_hook_expand expand_hook;
  void* extra;
};
}

namespace heapgate::detail {
namespace {

using SallocxFn = std::size_t (*)(const void*, int);

// Thread-local state read on every allocation: initial-exec keeps it a single
// %fs-relative load (no __tls_get_addr, which could itself allocate).
__attribute__((tls_model("initial-exec"))) thread_local bool t_suppressed = false;
__attribute__((tls_model("initial-exec"))) thread_local bool t_skip_next = false;
__attribute__((tls_model("initial-exec"))) thread_local std::uint64_t t_skipped_bytes = 0;

SallocxFn g_sallocx = nullptr;

// Process-wide totals. One cache line each so two cores don't fight over them.
struct alignas(64) PaddedCounter {
  std::atomic<std::uint64_t> value{0};
};
PaddedCounter g_allocations;  // doubles as the allocation sequence number
PaddedCounter g_deallocations;
PaddedCounter g_allocated_bytes;

// A counting window: what was allocated since it opened and is still live.
struct alignas(64) Window {
  std::atomic<std::uint64_t> start_seq{0};
  std::atomic<std::int64_t> live_bytes{0};
  std::atomic<std::int64_t> live_count{0};
  std::atomic<std::int64_t> peak_bytes{0};
};
Window g_windows[kMaxWindows];
std::atomic<std::uint64_t> g_windows_used{0};    // slots taken
std::atomic<std::uint64_t> g_windows_active{0};  // slots counting

// Live allocations made while any window was open: pointer -> (sequence, usable
// size). Sharded open addressing with linear probing and backward-shift
// deletion; memory comes from mmap so the table never re-enters malloc.
struct Entry {
  std::uintptr_t key;  // 0 = empty
  std::uint64_t seq;
  std::uint64_t size;
};

class Shard {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

  // Both under lock().
  void insert(std::uintptr_t key, std::uint64_t seq, std::uint64_t size) noexcept {
    if ((count_ + 1) * 2 > capacity_ && !grow()) return;  // out of memory: the entry is not tracked
    std::size_t i = index(key);
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & (capacity_ - 1);
    if (slots_[i].key == 0) ++count_;
    slots_[i] = Entry{key, seq, size};
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

  bool grow() noexcept {
    std::size_t new_capacity = capacity_ == 0 ? 1024 : capacity_ * 2;
    void* mem = ::mmap(nullptr, new_capacity * sizeof(Entry), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return false;
    Entry* old = slots_;
    std::size_t old_capacity = capacity_;
    slots_ = static_cast<Entry*>(mem);
    capacity_ = new_capacity;
    count_ = 0;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].key != 0) insert(old[i].key, old[i].seq, old[i].size);
    }
    if (old != nullptr) ::munmap(old, old_capacity * sizeof(Entry));
    return true;
  }

  std::atomic<bool> locked_{false};
  Entry* slots_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t count_ = 0;
};

constexpr std::size_t kShards = 64;
struct alignas(64) PaddedShard {
  Shard shard;
};
PaddedShard g_shards[kShards];

Shard& shard_of(std::uintptr_t key) noexcept {
  return g_shards[((key >> 12) * 0xC2B2AE3D27D4EB4Full >> 58) & (kShards - 1)].shard;
}

void raise_peak(Window& w, std::int64_t live) noexcept {
  std::int64_t peak = w.peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !w.peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void record_alloc(void* ptr, std::uint64_t usize) noexcept {
  std::uint64_t seq = g_allocations.value.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.value.fetch_add(usize, std::memory_order_relaxed);
  std::uint64_t active = g_windows_active.load(std::memory_order_acquire);
  if (active == 0) return;
  auto key = reinterpret_cast<std::uintptr_t>(ptr);
  Shard& shard = shard_of(key);
  shard.lock();
  shard.insert(key, seq, usize);
  shard.unlock();
  auto size = static_cast<std::int64_t>(usize);
  for (std::uint64_t bits = active; bits != 0; bits &= bits - 1) {
    Window& w = g_windows[__builtin_ctzll(bits)];
    if (seq < w.start_seq.load(std::memory_order_relaxed)) continue;
    w.live_count.fetch_add(1, std::memory_order_relaxed);
    raise_peak(w, w.live_bytes.fetch_add(size, std::memory_order_relaxed) + size);
  }
}

void record_dalloc(void* ptr) noexcept {
  g_deallocations.value.fetch_add(1, std::memory_order_relaxed);
  auto key = reinterpret_cast<std::uintptr_t>(ptr);
  Shard& shard = shard_of(key);
  Entry entry;
  shard.lock();
  bool found = shard.erase(key, &entry);
  shard.unlock();
  if (!found) return;  // allocated before any open window: not ours to count
  auto size = static_cast<std::int64_t>(entry.size);
  for (std::uint64_t bits = g_windows_active.load(std::memory_order_acquire); bits != 0; bits &= bits - 1) {
    Window& w = g_windows[__builtin_ctzll(bits)];
    if (entry.seq < w.start_seq.load(std::memory_order_relaxed)) continue;
    w.live_count.fetch_sub(1, std::memory_order_relaxed);
    w.live_bytes.fetch_sub(size, std::memory_order_relaxed);
  }
}

void on_alloc(void*, int, void* result, std::uintptr_t, std::uintptr_t*) {
  if (result == nullptr || t_suppressed) return;
  if (t_skip_next) {
    t_skip_next = false;
    t_skipped_bytes = g_sallocx(result, 0);
    return;
  }
  record_alloc(result, g_sallocx(result, 0));
}

void on_dalloc(void*, int, void* address, std::uintptr_t*) {
  if (address == nullptr) return;
  record_dalloc(address);
}

// In-place realloc: jemalloc's profiler records it as a free plus a new
// allocation, so counting it the same way keeps `counters` and `exact` equal.
void on_expand(void*, int, void* address, std::size_t, std::size_t new_usize, std::uintptr_t, std::uintptr_t*) {
  if (address == nullptr) return;
  record_dalloc(address);
  if (!t_suppressed) record_alloc(address, new_usize);
}

bool find_hook_symbols() noexcept {
  if (!allocator_status().hooks_available) return false;
  g_sallocx = reinterpret_cast<SallocxFn>(sys::find_symbol("sallocx"));
  return g_sallocx != nullptr;
}

// The hooks are installed only while a window counts. With any hook installed
// jemalloc takes its slow path for every allocation of every thread (~45 ns a
// malloc+free pair, measured with empty hooks), so code outside any window —
// every benchmark's timed loop, the rest of a test binary — keeps jemalloc's
// fast path. Installing and removing costs a few microseconds per window.
// Guarded by g_install_mutex together with the transitions of g_windows_used
// from and to zero; std::mutex never allocates.
std::mutex g_install_mutex;
void* g_hooks_handle = nullptr;

bool install_locked() noexcept {
  // jemalloc keeps a pointer to the struct: it must outlive the process.
  static je_hooks_t hooks{on_alloc, on_dalloc, on_expand, nullptr};
  void* handle = nullptr;
  std::size_t handle_len = sizeof handle;
  je_hooks_t* to_install = &hooks;
  auto fn = mallctl_fn();
  if (fn("experimental.hooks.install", &handle, &handle_len, to_install, sizeof hooks) != 0 || handle == nullptr) {
    return false;
  }
  g_hooks_handle = handle;
  return true;
}

void remove_locked() noexcept {
  if (g_hooks_handle == nullptr) return;
  void* handle = g_hooks_handle;
  auto fn = mallctl_fn();
  if (fn("experimental.hooks.remove", nullptr, nullptr, &handle, sizeof handle) == 0) g_hooks_handle = nullptr;
}

}  // namespace

bool hooks_supported() noexcept {
  static const bool supported = find_hook_symbols();
  return supported;
}

HookTotals hook_totals() noexcept {
  return HookTotals{g_allocations.value.load(std::memory_order_acquire),
                    g_deallocations.value.load(std::memory_order_acquire),
                    g_allocated_bytes.value.load(std::memory_order_acquire)};
}

int open_window() noexcept {
  if (!hooks_supported()) return kHooksFailed;
  std::lock_guard<std::mutex> lock(g_install_mutex);
  const std::uint64_t used = g_windows_used.load(std::memory_order_relaxed);
  if (~used == 0) return kNoFreeWindow;
  if (used == 0 && g_hooks_handle == nullptr && !install_locked()) return kHooksFailed;
  const int index = __builtin_ctzll(~used);
  g_windows_used.fetch_or(1ull << index, std::memory_order_acq_rel);
  Window& w = g_windows[index];
  w.live_bytes.store(0, std::memory_order_relaxed);
  w.live_count.store(0, std::memory_order_relaxed);
  w.peak_bytes.store(0, std::memory_order_relaxed);
  w.start_seq.store(g_allocations.value.load(std::memory_order_acquire), std::memory_order_relaxed);
  g_windows_active.fetch_or(1ull << index, std::memory_order_acq_rel);
  return index;
}

WindowResult peek_window(int window) noexcept {
  if (window < 0 || window >= kMaxWindows) return {};
  const Window& w = g_windows[window];
  WindowResult r;
  r.live_allocations = static_cast<std::uint64_t>(std::max<std::int64_t>(0, w.live_count.load()));
  r.live_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, w.live_bytes.load()));
  r.peak_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, w.peak_bytes.load()));
  return r;
}

WindowResult close_window(int window) noexcept {
  if (window < 0 || window >= kMaxWindows) return {};
  std::uint64_t bit = 1ull << window;
  std::uint64_t before = g_windows_active.fetch_and(~bit, std::memory_order_acq_rel);
  WindowResult r = peek_window(window);
  if ((before & ~bit) == 0) {
    // No window is counting: forget the tracked pointers so the table stays
    // small between scopes. A pointer inserted concurrently with this clear
    // is harmless: its sequence number predates every future window.
    for (auto& s : g_shards) {
      s.shard.lock();
      s.shard.clear();
      s.shard.unlock();
    }
  }
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if ((g_windows_used.fetch_and(~bit, std::memory_order_acq_rel) & ~bit) == 0) remove_locked();
  return r;
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
