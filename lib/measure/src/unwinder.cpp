// SPDX-License-Identifier: MIT
// The unwinder behind jemalloc's sampled allocations (heapgate/unwinder.h): loads libunwind at run
// time and installs unw_backtrace as jemalloc's prof_backtrace hook; use_unwinder() switches.
#include "heapgate/unwinder_control.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "heapgate/allocator.h"
#include "heapgate/integration.h"

namespace heapgate {
namespace {

// jemalloc's prof_backtrace_hook_t: fill vec[0..*len) with return addresses, at most max_len.
using ProfBacktraceHook = void (*)(void** vec, unsigned* len, unsigned max_len);
using UnwBacktraceFn = detail::BacktraceFn;
using UnwSetCachingPolicyFn = int (*)(void* address_space, int policy);
constexpr int kUnwCachePerThread = 2;  // UNW_CACHE_PER_THREAD in <libunwind-common.h>
// libunwind prefixes its local-unwinding symbols with the architecture.
#if defined(__x86_64__)
#define HEAPGATE_UNW_LOCAL(name) "_ULx86_64_" name
#elif defined(__aarch64__)
#define HEAPGATE_UNW_LOCAL(name) "_ULaarch64_" name
#else
#define HEAPGATE_UNW_LOCAL(name) nullptr
#endif

UnwBacktraceFn g_unw_backtrace = nullptr;
ProfBacktraceHook g_jemalloc_default = nullptr;
Unwinder g_current = Unwinder::jemalloc_default;
// use_unwinder() was called: the automatic switch to libunwind no longer applies.
bool g_chosen = false;
std::mutex g_mutex;

// HEAPGATE_UNWINDER=jemalloc: keep jemalloc's own unwinder, and no libunwind at all.
bool jemalloc_unwinder_requested() noexcept {
  const char* env = std::getenv("HEAPGATE_UNWINDER");
  return env != nullptr && std::string_view(env) == "jemalloc";
}

void* dlsym_or_null(void* handle, const char* name) noexcept {
  return name == nullptr ? nullptr : ::dlsym(handle, name);
}

// libunwind is opened RTLD_LOCAL at run time rather than linked: its shared
// object also exports _Unwind_Backtrace and friends, which, linked into a test
// binary, would take over C++ exception unwinding from libgcc.
bool load_libunwind() noexcept {
  if (g_unw_backtrace != nullptr) return true;
  void* handle = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  auto backtrace = reinterpret_cast<UnwBacktraceFn>(::dlsym(handle, "unw_backtrace"));
  if (backtrace == nullptr) return false;
  // Without a cache every unwind searches the DWARF tables again; the
  // per-thread cache needs no lock (jemalloc samples from any thread).
  auto set_policy =
      reinterpret_cast<UnwSetCachingPolicyFn>(dlsym_or_null(handle, HEAPGATE_UNW_LOCAL("set_caching_policy")));
  auto* local_space = static_cast<void**>(dlsym_or_null(handle, HEAPGATE_UNW_LOCAL("local_addr_space")));
  if (set_policy != nullptr && local_space != nullptr) (void)set_policy(*local_space, kUnwCachePerThread);
  g_unw_backtrace = backtrace;
  return true;
}

// jemalloc's default unwinder starts inside jemalloc, whose frames the
// normalizer drops. unw_backtrace starts inside itself and this function; the
// stack kept starts at this function's return address (in jemalloc's
// prof_backtrace), so both unwinders give the same normalized stacks.
__attribute__((noinline)) void libunwind_backtrace(void** vec, unsigned* len, unsigned max_len) {
  constexpr unsigned kMaxFrames = 256;
  void* frames[kMaxFrames];
  void* const return_address = __builtin_return_address(0);
  // libunwind allocates a little on a thread's first unwind (its per-thread
  // cache); that is heapgate's cost, not the test's.
  detail::HookSuppressor suppress;
  const unsigned want = max_len + 3 < kMaxFrames ? max_len + 3 : kMaxFrames;
  const int got = g_unw_backtrace(frames, static_cast<int>(want));
  unsigned first = 0;
  const unsigned count = got > 0 ? static_cast<unsigned>(got) : 0;
  for (unsigned i = 0; i < count && i < 4; ++i) {
    if (frames[i] == return_address) {
      first = i;
      break;
    }
  }
  unsigned n = count - first;
  if (n > max_len) n = max_len;
  std::memcpy(vec, frames + first, n * sizeof(void*));
  *len = n;
}

bool write_hook(ProfBacktraceHook hook, ProfBacktraceHook* previous) noexcept {
  auto fn = detail::mallctl_fn();
  if (fn == nullptr) return false;
  ProfBacktraceHook old = nullptr;
  std::size_t old_len = sizeof old;
  if (fn("experimental.hooks.prof_backtrace", &old, &old_len, &hook, sizeof hook) != 0) return false;
  if (previous != nullptr) *previous = old;
  return true;
}

bool use_locked(Unwinder unwinder) noexcept {
  if (unwinder == g_current) return true;
  if (unwinder == Unwinder::libunwind) {
    if (!allocator_status().jemalloc_active || !load_libunwind()) return false;
    ProfBacktraceHook previous = nullptr;
    if (!write_hook(&libunwind_backtrace, &previous)) return false;
    if (g_jemalloc_default == nullptr) g_jemalloc_default = previous;
  } else {
    if (g_jemalloc_default == nullptr || !write_hook(g_jemalloc_default, nullptr)) return false;
  }
  g_current = unwinder;
  return true;
}

}  // namespace

Unwinder active_unwinder() noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_current;
}

const char* describe(Unwinder unwinder) noexcept {
  return unwinder == Unwinder::libunwind ? "libunwind" : "jemalloc's default (libgcc)";
}

namespace detail {

Unwinder install_fast_unwinder() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    if (jemalloc_unwinder_requested()) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_chosen) (void)use_locked(Unwinder::libunwind);
  });
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_current;
}

bool use_unwinder(Unwinder unwinder) noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_chosen = true;
  return use_locked(unwinder);
}

BacktraceFn libunwind_backtrace() noexcept {
  if (jemalloc_unwinder_requested()) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  return load_libunwind() ? g_unw_backtrace : nullptr;
}

}  // namespace detail
}  // namespace heapgate
