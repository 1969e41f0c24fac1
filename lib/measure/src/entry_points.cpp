// SPDX-License-Identifier: MIT
//
// The allocation entry points (entry_points.h). Why they exist: jemalloc's
// experimental.hooks see every allocation too, but any installed hook sends
// every allocation of every thread off jemalloc's fast path (~5 -> ~39 ns a
// malloc+free pair), and installing or removing them while threads exit
// corrupts jemalloc 5.3's list of threads (docs/platform-facts.md). These
// definitions cost one load and a jump while no window counts, keep
// jemalloc's fast paths, and never change jemalloc's state.
//
// This file is compiled with -fno-builtin: the compiler must not turn code
// here into calls of the functions it defines.
#include "entry_points.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "alloc_counting.h"

namespace heapgate::detail {
namespace {

// What each entry point forwards to, in one table: the name's next
// definition after the one the program calls (RTLD_NEXT), i.e. jemalloc's when
// jemalloc is linked or preloaded.
// A table, one group a line.
// clang-format off
enum Entry : unsigned {
  e_malloc, e_calloc, e_realloc, e_free, e_posix_memalign, e_aligned_alloc, e_memalign, e_valloc,
  e_mallocx, e_rallocx, e_xallocx, e_dallocx, e_sdallocx,
  e_new, e_new_array, e_new_nothrow, e_new_array_nothrow,
  e_new_aligned, e_new_array_aligned, e_new_aligned_nothrow, e_new_array_aligned_nothrow,
  e_delete, e_delete_array, e_delete_nothrow, e_delete_array_nothrow, e_delete_sized, e_delete_array_sized,
  e_delete_aligned, e_delete_array_aligned, e_delete_aligned_nothrow, e_delete_array_aligned_nothrow,
  e_delete_sized_aligned, e_delete_array_sized_aligned,
  kEntryCount
};
// clang-format on

// A table, one group a line.
// clang-format off
constexpr const char* kEntryNames[kEntryCount] = {
    "malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "memalign", "valloc",
    "mallocx", "rallocx", "xallocx", "dallocx", "sdallocx",
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t", "_ZdlPvm", "_ZdaPvm",
    "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
};
// clang-format on

using nothrow_ref = const std::nothrow_t&;
using align = std::align_val_t;

// The forwarding table. Written once by resolve() (by each thread that gets
// there first, with the same values), read relaxed on every call.
struct Real {
  std::atomic<bool> resolved{false};
  // Entries whose target is jemalloc's own: only those count, since any other
  // target (a runtime's operator new that calls malloc) reaches an entry
  // point again.
  std::uint64_t counted = 0;
  const void* jemalloc_base = nullptr;  // jemalloc's module, nullptr if not loaded
  void* fn[kEntryCount] = {};
};
Real g_real;

// Allocations made while the table is being filled in (the dynamic linker
// may allocate, e.g. for an error message) come from here; they are never
// given back, and are rare and small.
alignas(16) unsigned char g_boot[64 * 1024];
std::atomic<std::size_t> g_boot_used{0};
__attribute__((tls_model("initial-exec"))) thread_local bool t_resolving = false;

bool is_boot(const void* p) noexcept {
  auto* c = static_cast<const unsigned char*>(p);
  return c >= g_boot && c < g_boot + sizeof g_boot;
}

// A 16-byte header keeps the size, for realloc.
void* boot_alloc(std::size_t size, std::size_t alignment = 16) noexcept {
  if (alignment < 16) alignment = 16;
  const std::size_t need = ((size + 15) & ~std::size_t{15}) + alignment + 16;
  const std::size_t at = g_boot_used.fetch_add(need, std::memory_order_relaxed);
  if (at + need > sizeof g_boot) return nullptr;
  auto base = reinterpret_cast<std::uintptr_t>(g_boot + at) + 16;
  base = (base + alignment - 1) & ~(alignment - 1);
  std::memcpy(reinterpret_cast<void*>(base - 16), &size, sizeof size);
  return reinterpret_cast<void*>(base);
}
std::size_t boot_size(const void* p) noexcept {
  std::size_t size;
  std::memcpy(&size, static_cast<const unsigned char*>(p) - 16, sizeof size);
  return size;
}

const void* module_base(const void* address) noexcept {
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0) return nullptr;
  return info.dli_fbase;
}

// Fills the table in; false while this thread is already doing so (a
// recursive call from inside the dynamic linker).
__attribute__((noinline, cold)) bool resolve() noexcept {
  if (t_resolving) return false;
  t_resolving = true;
  Real fresh;
  fresh.jemalloc_base = module_base(dlsym(RTLD_DEFAULT, "mallctl"));
  for (unsigned e = 0; e < kEntryCount; ++e) {
    fresh.fn[e] = dlsym(RTLD_NEXT, kEntryNames[e]);
    if (fresh.fn[e] != nullptr && fresh.jemalloc_base != nullptr && module_base(fresh.fn[e]) == fresh.jemalloc_base) {
      fresh.counted |= std::uint64_t{1} << e;
    }
  }
  for (unsigned e = 0; e < kEntryCount; ++e) g_real.fn[e] = fresh.fn[e];
  g_real.counted = fresh.counted;
  g_real.jemalloc_base = fresh.jemalloc_base;
  g_real.resolved.store(true, std::memory_order_release);
  t_resolving = false;
  make_thread_key_early();
  return true;
}

inline bool ready() noexcept { return g_real.resolved.load(std::memory_order_acquire) || resolve(); }

// The dynamic loader's code. What it allocates (a new thread's TLS vector,
// the link maps of a dlopen) is its own bookkeeping, and whether it does
// depends on timing: a thread gets a new TLS vector only when glibc has no
// cached stack of an exited thread to give it. Counted, it made a test that
// starts threads +1 allocation in some runs; it is not counted, like
// heapgate's own allocations. Found once, before any window counts.
std::atomic<std::uintptr_t> g_loader_begin{0};
std::atomic<std::uintptr_t> g_loader_end{0};

void find_loader() noexcept {
  const std::uintptr_t base = ::getauxval(AT_BASE);
  if (base == 0) return;  // a static executable has no loader
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        if (info->dlpi_addr != *static_cast<const std::uintptr_t*>(data)) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          g_loader_begin.store(info->dlpi_addr + ph.p_vaddr, std::memory_order_relaxed);
          g_loader_end.store(info->dlpi_addr + ph.p_vaddr + ph.p_memsz, std::memory_order_relaxed);
        }
        return 1;
      },
      const_cast<std::uintptr_t*>(&base));
}

inline bool from_loader(const void* caller) noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(caller);
  return at >= g_loader_begin.load(std::memory_order_relaxed) && at < g_loader_end.load(std::memory_order_relaxed);
}

template <typename Fn>
inline Fn real(Entry e) noexcept {
  return reinterpret_cast<Fn>(g_real.fn[e]);
}

// This entry point's target is jemalloc's own (see Real::counted).
inline bool jemalloc_behind(Entry e) noexcept { return (g_real.counted >> e & 1) != 0; }

// A window counts through the entry points, and this one's target is jemalloc's own.
inline bool counts(Entry e) noexcept {
  return g_entry_point_windows.load(std::memory_order_relaxed) != 0 && jemalloc_behind(e);
}

// The many faces of allocating and freeing, each written once. An exact-mode
// stack starts in the entry point's own frame (note_allocated(..., nullptr)),
// so it reads `malloc` or `operator new` innermost, as jemalloc's own
// profiles do. No lambdas: every frame of an entry point must read as an
// allocator frame or heapgate's, in stacks recorded here and in those
// jemalloc's profiler records through it. `request_or_0` is the size asked
// for or given back when its usable size is the request rounded up to a size
// class, else 0 (jemalloc is asked); it is rounded only once a window counts,
// so the calls outside windows pay nothing for it.
template <typename Fn, typename... Args>
inline void* allocated(Entry e, std::size_t request_or_0, Fn fn, Args... args) {
  if (!counts(e)) return fn(args...);
  void* p = fn(args...);
  if (p != nullptr) note_allocated(p, usable_size_of_request(request_or_0), nullptr);
  return p;
}

template <typename Fn, typename... Args>
inline void freed(Entry e, void* p, std::size_t request_or_0, Fn fn, Args... args) noexcept {
  if (p != nullptr && counts(e)) {
    note_freed(p, usable_size_of_request(request_or_0));
  } else if (p != nullptr && g_follow_frees.load(std::memory_order_relaxed) && jemalloc_behind(e)) {
    note_freed_between_windows(p, usable_size_of_request(request_or_0));
  }
  fn(p, args...);
}

// realloc, rallocx: the block is taken before the call (see ResizeTicket).
// `null_is_free`: a null result for size 0 means the block was freed.
template <typename Fn, typename... Args>
void* resized(void* p, std::size_t size, bool null_is_free, Fn fn, Args... args) noexcept {
  if (p == nullptr) {
    void* q = fn(p, size, args...);
    if (q != nullptr) note_allocated(q, 0, nullptr);
    return q;
  }
  const ResizeTicket ticket = begin_resize(p);
  void* q = fn(p, size, args...);
  if (q != nullptr) {
    resize_done(ticket, p, q, 0, nullptr);
  } else if (null_is_free && size == 0) {
    resize_done(ticket, p, nullptr, 0, nullptr);
  } else {
    resize_failed(ticket, p);
  }
  return q;
}

// A block of the boot area moved into memory from `fn` (the allocator's realloc).
void* move_from_boot(void* p, std::size_t size, void* (*fn)(void*, std::size_t)) noexcept {
  void* q = fn(nullptr, size);
  if (q != nullptr) std::memcpy(q, p, std::min(size, boot_size(p)));
  return q;
}

}  // namespace

bool entry_points_in_effect() noexcept { return why_entry_points_not_in_effect()[0] == '\0'; }

const char* why_entry_points_not_in_effect() noexcept {
  static const char* const why = []() -> const char* {
    if (!ready()) return "heapgate's allocation entry points could not find the allocator behind them";
    find_loader();
    if (g_real.jemalloc_base == nullptr) return "jemalloc is not loaded";
    if (!jemalloc_behind(e_malloc)) return "malloc after heapgate's is not jemalloc's";
    for (unsigned e = 0; e < kEntryCount; ++e) {
      void* called = dlsym(RTLD_DEFAULT, kEntryNames[e]);
      if (called != nullptr && module_base(called) == g_real.jemalloc_base) {
        // jemalloc's own definition is what callers get: its allocations
        // would never pass through heapgate (heapgate linked into a shared
        // library after jemalloc, or jemalloc linked statically).
        static char text[160];
        std::strcpy(text, "callers of ");
        std::strncat(text, kEntryNames[e], 60);
        std::strcat(text, " reach jemalloc without passing heapgate's entry points");
        return text;
      }
    }
    return "";
  }();
  return why;
}

}  // namespace heapgate::detail

using heapgate::detail::Entry;
namespace hg = heapgate::detail;

#define HEAPGATE_ENTRY extern "C" __attribute__((weak, visibility("default")))

HEAPGATE_ENTRY void* malloc(std::size_t size) noexcept {
  if (!hg::ready()) return hg::boot_alloc(size);
  auto fn = hg::real<void* (*)(std::size_t)>(hg::e_malloc);
  if (hg::from_loader(__builtin_return_address(0))) return fn(size);
  return hg::allocated(hg::e_malloc, size, fn, size);
}

HEAPGATE_ENTRY void* calloc(std::size_t count, std::size_t size) noexcept {
  if (!hg::ready()) return hg::boot_alloc(count * size);  // the boot area is zero and never reused
  auto fn = hg::real<void* (*)(std::size_t, std::size_t)>(hg::e_calloc);
  if (hg::from_loader(__builtin_return_address(0))) return fn(count, size);
  // Hooks get calloc's usable size from jemalloc; so does this, as the product may overflow.
  return hg::allocated(hg::e_calloc, 0, fn, count, size);
}

HEAPGATE_ENTRY void free(void* p) noexcept {
  if (hg::is_boot(p) || !hg::ready()) return;  // before the table, only boot blocks exist
  auto fn = hg::real<void (*)(void*)>(hg::e_free);
  hg::freed(hg::e_free, p, 0, fn);
}

HEAPGATE_ENTRY void* realloc(void* p, std::size_t size) noexcept {
  if (!hg::ready()) {
    void* q = hg::boot_alloc(size);
    if (q != nullptr && p != nullptr) std::memcpy(q, p, std::min(size, hg::boot_size(p)));
    return q;
  }
  auto fn = hg::real<void* (*)(void*, std::size_t)>(hg::e_realloc);
  if (hg::is_boot(p)) return hg::move_from_boot(p, size, fn);
  if (!hg::counts(hg::e_realloc) || hg::from_loader(__builtin_return_address(0))) return fn(p, size);
  return hg::resized(p, size, true, fn);
}

HEAPGATE_ENTRY int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (!hg::ready()) {
    *out = hg::boot_alloc(size, alignment);
    return *out != nullptr ? 0 : ENOMEM;
  }
  auto fn = hg::real<int (*)(void**, std::size_t, std::size_t)>(hg::e_posix_memalign);
  const int err = fn(out, alignment, size);
  if (err == 0 && hg::counts(hg::e_posix_memalign) && *out != nullptr &&
      !hg::from_loader(__builtin_return_address(0))) {
    hg::note_allocated(*out, 0, nullptr);
  }
  return err;
}

HEAPGATE_ENTRY void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  if (!hg::ready()) return hg::boot_alloc(size, alignment);
  auto fn = hg::real<void* (*)(std::size_t, std::size_t)>(hg::e_aligned_alloc);
  return hg::allocated(hg::e_aligned_alloc, 0, fn, alignment, size);
}

HEAPGATE_ENTRY void* memalign(std::size_t alignment, std::size_t size) noexcept {
  if (!hg::ready()) return hg::boot_alloc(size, alignment);
  auto fn = hg::real<void* (*)(std::size_t, std::size_t)>(hg::e_memalign);
  if (hg::from_loader(__builtin_return_address(0))) return fn(alignment, size);
  return hg::allocated(hg::e_memalign, 0, fn, alignment, size);
}

HEAPGATE_ENTRY void* valloc(std::size_t size) noexcept {
  if (!hg::ready()) return hg::boot_alloc(size, 4096);
  auto fn = hg::real<void* (*)(std::size_t)>(hg::e_valloc);
  return hg::allocated(hg::e_valloc, 0, fn, size);
}

// jemalloc's own API, which some programs call directly (folly does).
HEAPGATE_ENTRY void* mallocx(std::size_t size, int flags) noexcept {
  if (!hg::ready()) return nullptr;
  auto fn = hg::real<void* (*)(std::size_t, int)>(hg::e_mallocx);
  if (fn == nullptr) return nullptr;
  return hg::allocated(hg::e_mallocx, flags == 0 ? size : 0, fn, size, flags);
}

HEAPGATE_ENTRY void* rallocx(void* p, std::size_t size, int flags) noexcept {
  if (!hg::ready()) return nullptr;
  auto fn = hg::real<void* (*)(void*, std::size_t, int)>(hg::e_rallocx);
  if (fn == nullptr) return nullptr;
  if (!hg::counts(hg::e_rallocx)) return fn(p, size, flags);
  return hg::resized(p, size, false, fn, flags);
}

HEAPGATE_ENTRY std::size_t xallocx(void* p, std::size_t size, std::size_t extra, int flags) noexcept {
  if (!hg::ready()) return 0;
  auto fn = hg::real<std::size_t (*)(void*, std::size_t, std::size_t, int)>(hg::e_xallocx);
  if (fn == nullptr) return 0;
  if (!hg::counts(hg::e_xallocx)) return fn(p, size, extra, flags);
  // xallocx sets up the thread's jemalloc state anyway; asking the size is safe here.
  const std::uint64_t before = hg::usable_size_of_block(p);
  const hg::ResizeTicket ticket = hg::begin_resize(p);
  const std::size_t usize = fn(p, size, extra, flags);
  // Resized in place only if the usable size changed (jemalloc's expand hook runs only then).
  if (usize != before) {
    hg::resize_done(ticket, p, p, usize, nullptr);
  } else {
    hg::resize_failed(ticket, p);
  }
  return usize;
}

HEAPGATE_ENTRY void dallocx(void* p, int flags) noexcept {
  if (hg::is_boot(p) || !hg::ready()) return;
  auto fn = hg::real<void (*)(void*, int)>(hg::e_dallocx);
  hg::freed(hg::e_dallocx, p, 0, fn, flags);
}

HEAPGATE_ENTRY void sdallocx(void* p, std::size_t size, int flags) noexcept {
  if (hg::is_boot(p) || !hg::ready()) return;
  auto fn = hg::real<void (*)(void*, std::size_t, int)>(hg::e_sdallocx);
  hg::freed(hg::e_sdallocx, p, flags == 0 ? size : 0, fn, size, flags);
}

// The replaceable operator new and delete. Each forwards to the same
// operator behind it (jemalloc's, with its fast paths and new-handler loop).
// Until the table is filled in, and where there is nothing behind (no C++
// runtime exports it), the C functions above serve. In heapgate's namespace,
// so that their frames are dropped from stacks as heapgate's own.
namespace heapgate::detail {
namespace {
template <typename Fn, typename... Args>
inline void* new_via(Entry e, std::size_t size, std::size_t request_or_0, Args... args) {
  void* p = nullptr;
  if (!hg::ready()) {
    p = hg::boot_alloc(size);
  } else if (hg::g_real.fn[e] == nullptr) {
    p = malloc(size);
  } else {
    return hg::allocated(e, request_or_0, hg::real<Fn>(e), args...);
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
template <typename Fn, typename... Args>
inline void* new_nothrow_via(Entry e, std::size_t size, std::size_t request_or_0, Args... args) noexcept {
  if (!hg::ready()) return hg::boot_alloc(size);
  if (hg::g_real.fn[e] == nullptr) return malloc(size);
  return hg::allocated(e, request_or_0, hg::real<Fn>(e), args...);
}
template <typename Fn, typename... Args>
inline void delete_via(Entry e, void* p, std::size_t request_or_0, Args... args) noexcept {
  if (hg::is_boot(p) || !hg::ready()) return;
  if (hg::g_real.fn[e] == nullptr) return free(p);
  hg::freed(e, p, request_or_0, hg::real<Fn>(e), args...);
}

// Where jemalloc's own operator is behind, some of its variants enter heapgate
// again: Debian's jemalloc 5.3 implements the aligned operator new with
// aligned_alloc, and the unsized and aligned deletes with free and sdallocx,
// each called through its PLT, i.e. through the entry points above. Forwarded
// there, an over-aligned `new` was counted twice and its `delete` once: every
// object of an alignas(64) type (a thread pool, a lock-free queue) read as a
// leak. These variants go to jemalloc's C function themselves, as its
// operator would, and count once (docs/platform-facts.md).

// The throwing and nothrow aligned operator new: aligned_alloc, then the
// new-handler loop the standard asks of operator new.
template <bool Nothrow, typename Fn, typename... Args>
inline void* aligned_new_via(Entry e, std::size_t size, std::align_val_t alignment, Args... args) noexcept(Nothrow) {
  if (!hg::ready() || !jemalloc_behind(e) || !jemalloc_behind(hg::e_aligned_alloc)) {
    if constexpr (Nothrow) {
      return new_nothrow_via<Fn>(e, size, 0, args...);
    } else {
      return new_via<Fn>(e, size, 0, args...);
    }
  }
  auto fn = hg::real<void* (*)(std::size_t, std::size_t)>(hg::e_aligned_alloc);
  for (;;) {
    void* p = hg::allocated(hg::e_aligned_alloc, 0, fn, static_cast<std::size_t>(alignment), size);
    if (p != nullptr) return p;
    const std::new_handler handler = std::get_new_handler();
    if constexpr (Nothrow) {
      if (handler == nullptr) return nullptr;
      try {
        handler();
      } catch (const std::bad_alloc&) {
        return nullptr;
      }
    } else {
      if (handler == nullptr) throw std::bad_alloc();
      handler();
    }
  }
}

// The deletes without a size: jemalloc's free.
template <typename Fn, typename... Args>
inline void unsized_delete_via(Entry e, void* p, Args... args) noexcept {
  if (hg::is_boot(p) || !hg::ready()) return;
  if (jemalloc_behind(e) && jemalloc_behind(hg::e_free)) {
    hg::freed(hg::e_free, p, 0, hg::real<void (*)(void*)>(hg::e_free));
    return;
  }
  delete_via<Fn>(e, p, 0, args...);
}

// The sized aligned deletes: jemalloc's sdallocx with the alignment's flag
// (MALLOCX_LG_ALIGN is the alignment's log2).
template <typename Fn>
inline void sized_aligned_delete_via(Entry e, void* p, std::size_t size, std::align_val_t alignment) noexcept {
  if (hg::is_boot(p) || !hg::ready()) return;
  if (jemalloc_behind(e) && jemalloc_behind(hg::e_sdallocx)) {
    const int lg_align = __builtin_ctzll(static_cast<unsigned long long>(alignment));
    hg::freed(hg::e_sdallocx, p, 0, hg::real<void (*)(void*, std::size_t, int)>(hg::e_sdallocx), size, lg_align);
    return;
  }
  delete_via<Fn>(e, p, 0, size, alignment);
}
}  // namespace
}  // namespace heapgate::detail

__attribute__((weak, visibility("default"))) void* operator new(std::size_t size) {
  return hg::new_via<void* (*)(std::size_t)>(hg::e_new, size, size, size);
}
__attribute__((weak, visibility("default"))) void* operator new[](std::size_t size) {
  return hg::new_via<void* (*)(std::size_t)>(hg::e_new_array, size, size, size);
}
__attribute__((weak, visibility("default"))) void* operator new(std::size_t size, hg::nothrow_ref tag) noexcept {
  return hg::new_nothrow_via<void* (*)(std::size_t, hg::nothrow_ref)>(hg::e_new_nothrow, size, size, size, tag);
}
__attribute__((weak, visibility("default"))) void* operator new[](std::size_t size, hg::nothrow_ref tag) noexcept {
  return hg::new_nothrow_via<void* (*)(std::size_t, hg::nothrow_ref)>(hg::e_new_array_nothrow, size, size, size, tag);
}
__attribute__((weak, visibility("default"))) void* operator new(std::size_t size, hg::align a) {
  return hg::aligned_new_via<false, void* (*)(std::size_t, hg::align)>(hg::e_new_aligned, size, a, size, a);
}
__attribute__((weak, visibility("default"))) void* operator new[](std::size_t size, hg::align a) {
  return hg::aligned_new_via<false, void* (*)(std::size_t, hg::align)>(hg::e_new_array_aligned, size, a, size, a);
}
__attribute__((weak, visibility("default"))) void* operator new(std::size_t size, hg::align a,
                                                                hg::nothrow_ref tag) noexcept {
  return hg::aligned_new_via<true, void* (*)(std::size_t, hg::align, hg::nothrow_ref)>(hg::e_new_aligned_nothrow, size,
                                                                                       a, size, a, tag);
}
__attribute__((weak, visibility("default"))) void* operator new[](std::size_t size, hg::align a,
                                                                  hg::nothrow_ref tag) noexcept {
  return hg::aligned_new_via<true, void* (*)(std::size_t, hg::align, hg::nothrow_ref)>(hg::e_new_array_aligned_nothrow,
                                                                                       size, a, size, a, tag);
}

__attribute__((weak, visibility("default"))) void operator delete(void* p) noexcept {
  hg::unsized_delete_via<void (*)(void*)>(hg::e_delete, p);
}
__attribute__((weak, visibility("default"))) void operator delete[](void* p) noexcept {
  hg::unsized_delete_via<void (*)(void*)>(hg::e_delete_array, p);
}
__attribute__((weak, visibility("default"))) void operator delete(void* p, hg::nothrow_ref tag) noexcept {
  hg::unsized_delete_via<void (*)(void*, hg::nothrow_ref)>(hg::e_delete_nothrow, p, tag);
}
__attribute__((weak, visibility("default"))) void operator delete[](void* p, hg::nothrow_ref tag) noexcept {
  hg::unsized_delete_via<void (*)(void*, hg::nothrow_ref)>(hg::e_delete_array_nothrow, p, tag);
}
__attribute__((weak, visibility("default"))) void operator delete(void* p, std::size_t size) noexcept {
  hg::delete_via<void (*)(void*, std::size_t)>(hg::e_delete_sized, p, size, size);
}
__attribute__((weak, visibility("default"))) void operator delete[](void* p, std::size_t size) noexcept {
  hg::delete_via<void (*)(void*, std::size_t)>(hg::e_delete_array_sized, p, size, size);
}
__attribute__((weak, visibility("default"))) void operator delete(void* p, hg::align a) noexcept {
  hg::unsized_delete_via<void (*)(void*, hg::align)>(hg::e_delete_aligned, p, a);
}
__attribute__((weak, visibility("default"))) void operator delete[](void* p, hg::align a) noexcept {
  hg::unsized_delete_via<void (*)(void*, hg::align)>(hg::e_delete_array_aligned, p, a);
}
__attribute__((weak, visibility("default"))) void operator delete(void* p, hg::align a, hg::nothrow_ref tag) noexcept {
  hg::unsized_delete_via<void (*)(void*, hg::align, hg::nothrow_ref)>(hg::e_delete_aligned_nothrow, p, a, tag);
}
__attribute__((weak, visibility("default"))) void operator delete[](void* p, hg::align a,
                                                                    hg::nothrow_ref tag) noexcept {
  hg::unsized_delete_via<void (*)(void*, hg::align, hg::nothrow_ref)>(hg::e_delete_array_aligned_nothrow, p, a, tag);
}
__attribute__((weak, visibility("default"))) void operator delete(void* p, std::size_t size, hg::align a) noexcept {
  hg::sized_aligned_delete_via<void (*)(void*, std::size_t, hg::align)>(hg::e_delete_sized_aligned, p, size, a);
}
__attribute__((weak, visibility("default"))) void operator delete[](void* p, std::size_t size, hg::align a) noexcept {
  hg::sized_aligned_delete_via<void (*)(void*, std::size_t, hg::align)>(hg::e_delete_array_sized_aligned, p, size, a);
}
