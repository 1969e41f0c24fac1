// SPDX-License-Identifier: MIT
// classify_frame() and classify_unknown(): a frame's FrameClass (allocator, heapgate, test
// framework, outer, main, user) from its function, source file and module, by fixed name lists.
#include "frame_class.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "heapgate/frame_text.h"

namespace heapgate::detail {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool has_suffix(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool has_prefix(std::string_view name, std::initializer_list<std::string_view> list) {
  for (std::string_view p : list) {
    if (starts_with(name, p)) return true;
  }
  return false;
}

bool is_allocator(std::string_view bare) {
  // clang-format off
  if (is_one_of(bare, {"malloc", "calloc", "realloc", "free", "cfree", "posix_memalign", "aligned_alloc", "memalign",
                       "valloc", "pvalloc", "reallocarray", "malloc_usable_size", "mallocx", "rallocx", "xallocx",
                       "sallocx", "dallocx", "sdallocx", "nallocx", "__libc_malloc", "__libc_calloc", "__libc_realloc",
                       "__libc_free", "__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__posix_memalign",
                       "_int_malloc", "_int_realloc", "_int_memalign", "_int_free", "operator new", "operator new[]",
                       "operator delete", "operator delete[]", "std::allocator::allocate",
                       "std::allocator_traits::allocate", "std::__new_allocator::allocate",
                       "__gnu_cxx::new_allocator::allocate", "__gnu_cxx::__alloc_traits::allocate"})) {
    // clang-format on
    return true;
  }
  // The allocation members of standard containers' allocator plumbing.
  if ((starts_with(bare, "std::") || starts_with(bare, "__gnu_cxx::")) &&
      (has_suffix(bare, "::allocate") || has_suffix(bare, "::_M_allocate"))) {
    return true;
  }
  // jemalloc's internals, when its symbols are visible (static or debug builds).
  return has_prefix(bare, {"je_", "imalloc", "ialloc", "ipalloc", "iralloc", "ifree", "isfree", "idalloc", "isdalloc",
                           "prof_", "arena_", "tcache_", "malloc_default", "do_rallocx", "sdallocx_default"});
}

bool is_outer(std::string_view bare) {
  // clang-format off
  return is_one_of(bare, {"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
                          "start_thread", "clone", "clone3", "__clone", "__clone3", "__clone_internal",
                          "__GI___clone", "__GI___clone3", "execute_native_thread_routine",
                          "execute_native_thread_routine_compat", "std::thread::_State_impl::_M_run",
                          "std::thread::_Invoker::operator()", "std::thread::_Invoker::_M_invoke", "std::__invoke",
                          "std::__invoke_impl", "std::__invoke_r"});
  // clang-format on
}

bool is_runtime_module(std::string_view module) {
  auto slash = module.rfind('/');
  std::string_view base = slash == std::string_view::npos ? module : module.substr(slash + 1);
  return has_prefix(base, {"libc.so", "libc-", "libpthread", "ld-linux", "libstdc++", "libgcc_s"});
}

bool is_jemalloc_module(std::string_view module) {
  auto slash = module.rfind('/');
  std::string_view base = slash == std::string_view::npos ? module : module.substr(slash + 1);
  return starts_with(base, "libjemalloc");
}

// heapgate's own library sources: "<root>/lib/", the engine "<root>/harness/"
// and the faces (gtest_plugin, catch2_plugin, doctest_plugin), from the
// source root the build passes in (HEAPGATE_SOURCE_ROOT).
struct SourceRoots {
  std::string lib;
  std::vector<std::string> others;
};

const SourceRoots& source_roots() {
  static const SourceRoots roots = [] {
    SourceRoots r;
#ifdef HEAPGATE_SOURCE_ROOT
    const std::string root = HEAPGATE_SOURCE_ROOT;
    if (!root.empty() && root[0] == '/') {
      r.lib = root + "lib/";
      for (const char* dir : {"harness/", "gtest_plugin/", "catch2_plugin/", "doctest_plugin/"}) {
        r.others.push_back(root + dir);
      }
    }
#endif
    return r;
  }();
  return roots;
}

bool is_heapgate(std::string_view bare, std::string_view file) {
  if (!starts_with(bare, "heapgate::")) return false;
  const SourceRoots& roots = source_roots();
  // Code that merely lives in namespace heapgate (heapgate's own tests) stays.
  if (file.empty() || roots.lib.empty()) return true;
  if (starts_with(file, roots.lib)) return true;
  for (const std::string& dir : roots.others) {
    if (starts_with(file, dir)) return true;
  }
  return false;
}

}  // namespace

FrameClass classify_frame(std::string_view function, std::string_view file, std::string_view module) {
  const std::string bare = bare_function_name(function);
  if (bare == "main") return FrameClass::main;
  if (is_jemalloc_module(module) || is_allocator(bare)) return FrameClass::allocator;
  // Every framework a face covers (heapgate/face.h): its frames are the
  // harness's, not the test's, like GoogleTest's.
  if (starts_with(bare, "testing::") || bare == "RUN_ALL_TESTS") return FrameClass::gtest;
  if (starts_with(bare, "Catch::") || starts_with(bare, "doctest::")) return FrameClass::gtest;
  if (is_heapgate(bare, file)) return FrameClass::heapgate;
  if (is_outer(bare)) return FrameClass::outer;
  return FrameClass::user;
}

bool is_system_runtime_module(std::string_view module) {
  return is_runtime_module(module) || is_jemalloc_module(module);
}

FrameClass classify_unknown(std::string_view module) {
  if (is_jemalloc_module(module)) return FrameClass::allocator;
  if (is_runtime_module(module)) return FrameClass::outer;
  return FrameClass::user;
}

}  // namespace heapgate::detail
