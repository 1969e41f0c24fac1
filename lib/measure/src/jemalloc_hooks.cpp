// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "jemalloc_hooks.h"

#include <fcntl.h>
#include <unistd.h>

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
  note_allocated(result, type == kJeHookAllocMalloc ? usable_size_of_request(args[0]) : 0,
                 __builtin_return_address(0));
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

// Under the caller's lock (alloc_counting.cpp serializes opening and closing).
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

void remove_jemalloc_hooks_if_alone() noexcept {
  if (g_hooks_handle == nullptr || process_thread_count() != 1) return;
  void* handle = g_hooks_handle;
  auto fn = mallctl_fn();
  if (fn("experimental.hooks.remove", nullptr, nullptr, &handle, sizeof handle) == 0) g_hooks_handle = nullptr;
}

int process_thread_count() noexcept {
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got <= 0) return 0;
  buf[got] = '\0';
  // After the command name's closing parenthesis: state, then fields 4 to 19,
  // then num_threads (proc(5): field 20).
  const char* p = nullptr;
  for (const char* c = buf; *c != '\0'; ++c) {
    if (*c == ')') p = c;
  }
  if (p == nullptr) return 0;
  int field = 2;
  for (++p; *p != '\0' && field < 20; ++p) {
    if (*p == ' ') ++field;
  }
  int count = 0;
  for (; *p >= '0' && *p <= '9'; ++p) count = count * 10 + (*p - '0');
  return count;
}

}  // namespace heapgate::detail
