// SPDX-License-Identifier: MIT
// install_jemalloc_hooks() (jemalloc_hooks.h): jemalloc's private experimental.hooks ABI declared
// here, with alloc, dalloc and expand hooks that feed note_allocated() and note_freed().
#include "jemalloc_hooks.h"

#include <cstddef>
#include <cstdint>

#include "alloc_counting.h"
#include "heapgate/allocator.h"

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
// The `type` the hooks are given (hook.h's enums, the same in 5.1.0–5.3.x):
// malloc and operator new pass {size}, sized frees {address, size, flags}.
constexpr int kJeHookAllocMalloc = 0;
constexpr int kJeHookDallocSdallocx = 2;

namespace heapgate::detail {
namespace {

// The hook's return address is inside jemalloc, where jemalloc's own stacks
// start too, so normalization drops the same allocator frames.
__attribute__((noinline)) void on_alloc(void*, int type, void* result, std::uintptr_t, std::uintptr_t* args) {
  if (result == nullptr) return;
  note_allocated(result, type == kJeHookAllocMalloc ? usable_size_of_request(args[0]) : 0, __builtin_return_address(0));
}

void on_dalloc(void*, int type, void* address, std::uintptr_t* args) {
  if (address == nullptr) return;
  note_freed(address, type == kJeHookDallocSdallocx && args[2] == 0 ? usable_size_of_request(args[1]) : 0);
}

// In-place realloc: jemalloc's profiler records it as a free plus a new
// allocation, so counting it the same way keeps `counters` and `exact` equal.
// The hook runs after the resize, so the old size comes from its arguments.
__attribute__((noinline)) void on_expand(void*, int, void* address, std::size_t old_usize, std::size_t new_usize,
                                         std::uintptr_t, std::uintptr_t*) {
  if (address == nullptr) return;
  note_freed(address, old_usize);
  note_allocated(address, new_usize, __builtin_return_address(0));
}

// Under the caller's lock (alloc_counting.cpp serializes opening windows).
// Kept, never removed: see install_jemalloc_hooks().
void* g_hooks_handle = nullptr;

}  // namespace

bool jemalloc_hooks_supported() noexcept { return allocator_status().hooks_available; }

bool install_jemalloc_hooks() noexcept {
  if (g_hooks_handle != nullptr) return true;
  // jemalloc keeps a pointer to the struct: it must outlive the process.
  static je_hooks_t hooks{on_alloc, on_dalloc, on_expand, nullptr};
  void* handle = nullptr;
  std::size_t handle_len = sizeof handle;
  auto fn = mallctl_fn();
  if (fn == nullptr || fn("experimental.hooks.install", &handle, &handle_len, &hooks, sizeof hooks) != 0 ||
      handle == nullptr) {
    return false;
  }
  g_hooks_handle = handle;
  return true;
}

}  // namespace heapgate::detail
