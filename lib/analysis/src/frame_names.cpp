// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "frame_names.h"

#include <algorithm>
#include <array>

namespace heapgate::detail {
namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)";
constexpr std::string_view kOperatorSymbols = "<>=!+-*/%^&|~,";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool has_suffix(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// True when an operator name ("operator<<", "operator new[]") starts at s[i].
bool operator_at(std::string_view s, std::size_t i) {
  if (s.compare(i, 8, "operator") != 0) return false;
  if (i > 0 && (is_ident(s[i - 1]))) return false;
  return i + 8 < s.size() && !is_ident(s[i + 8]);
}

// The end of the operator name that starts at s[i].
std::size_t operator_end(std::string_view s, std::size_t i) {
  std::size_t j = i + 8;
  std::string_view rest = s.substr(j);
  for (std::string_view word : {std::string_view(" new"), std::string_view(" delete")}) {
    if (starts_with(rest, word) && (rest.size() == word.size() || !is_ident(rest[word.size()]))) {
      j += word.size();
      if (s.compare(j, 2, "[]") == 0) j += 2;
      return j;
    }
  }
  if (starts_with(rest, "()") || starts_with(rest, "[]")) return j + 2;
  if (!rest.empty() && rest[0] == ' ') {
    // A conversion operator ("operator unsigned long"): up to its "(".
    auto paren = s.find('(', j);
    return paren == std::string_view::npos ? s.size() : paren;
  }
  while (j < s.size() && kOperatorSymbols.find(s[j]) != std::string_view::npos) ++j;
  return j;
}

// Removes template argument lists, keeping operator names intact.
std::string strip_templates(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  int angle = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (angle == 0 && operator_at(s, i)) {
      std::size_t end = operator_end(s, i);
      out.append(s.substr(i, end - i));
      i = end;
      continue;
    }
    const char c = s[i++];
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (angle == 0) {
      out += c;
    }
  }
  return out;
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
  if (is_one_of(bare, {"malloc", "calloc", "realloc", "free", "cfree", "posix_memalign", "aligned_alloc", "memalign",
                       "valloc", "pvalloc", "reallocarray", "malloc_usable_size", "mallocx", "rallocx", "xallocx",
                       "sallocx", "dallocx", "sdallocx", "nallocx", "__libc_malloc", "__libc_calloc", "__libc_realloc",
                       "__libc_free", "__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__posix_memalign",
                       "_int_malloc", "_int_realloc", "_int_memalign", "_int_free", "operator new", "operator new[]",
                       "operator delete", "operator delete[]", "std::allocator::allocate",
                       "std::allocator_traits::allocate", "std::__new_allocator::allocate",
                       "__gnu_cxx::new_allocator::allocate", "__gnu_cxx::__alloc_traits::allocate"})) {
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
  return is_one_of(bare, {"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
                          "start_thread", "clone", "clone3", "__clone", "__clone3", "__clone_internal",
                          "__GI___clone", "__GI___clone3", "execute_native_thread_routine",
                          "execute_native_thread_routine_compat", "std::thread::_State_impl::_M_run",
                          "std::thread::_Invoker::operator()", "std::thread::_Invoker::_M_invoke", "std::__invoke",
                          "std::__invoke_impl", "std::__invoke_r"});
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

// heapgate's own library sources: "<root>/lib/" and "<root>/gtest_plugin/",
// from the source root the build passes in (HEAPGATE_SOURCE_ROOT).
struct SourceRoots {
  std::string lib;
  std::string plugin;
};

const SourceRoots& source_roots() {
  static const SourceRoots roots = [] {
    SourceRoots r;
#ifdef HEAPGATE_SOURCE_ROOT
    const std::string root = HEAPGATE_SOURCE_ROOT;
    if (!root.empty() && root[0] == '/') {
      r.lib = root + "lib/";
      r.plugin = root + "gtest_plugin/";
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
  return starts_with(file, roots.lib) || starts_with(file, roots.plugin);
}

}  // namespace

std::string bare_function_name(std::string_view demangled) {
  const std::string s = strip_templates(demangled);
  // The parameter list is the last top-level "(...)" group; the return type
  // (template functions) ends at the last top-level space before it.
  std::size_t params = std::string::npos;
  std::size_t name_start = 0;
  int paren = 0;
  int brace = 0;
  bool seen_operator = false;  // spaces after an operator name belong to it
  for (std::size_t i = 0; i < s.size();) {
    const bool top = paren == 0 && brace == 0;
    if (top && s.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size();
      continue;
    }
    if (top && operator_at(s, i)) {
      i = operator_end(s, i);
      seen_operator = true;
      continue;
    }
    const char c = s[i];
    if (c == '(') {
      if (top) params = i;
      ++paren;
    } else if (c == ')' && paren > 0) {
      --paren;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}' && brace > 0) {
      --brace;
    } else if (c == ' ' && top && params == std::string::npos && !seen_operator) {
      name_start = i + 1;
    }
    ++i;
  }
  std::size_t end = params == std::string::npos ? s.size() : params;
  if (name_start > end) name_start = 0;
  return s.substr(name_start, end - name_start);
}

std::string_view strip_return_type(std::string_view s) {
  // The return type ends at the last top-level space before the first
  // top-level "(" (the parameters, or those of an enclosing function).
  std::size_t last_space = std::string_view::npos;
  int angle = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (angle == 0 && s.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size();
      continue;
    }
    if (operator_at(s, i)) break;  // nothing after an operator name is a return type
    const char c = s[i];
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (angle == 0 && (c == '(' || c == '{')) {
      break;
    } else if (angle == 0 && c == ' ') {
      last_space = i;
    }
    ++i;
  }
  return last_space == std::string_view::npos ? s : s.substr(last_space + 1);
}

FrameClass classify_frame(std::string_view function, std::string_view file, std::string_view module) {
  const std::string bare = bare_function_name(function);
  if (bare == "main") return FrameClass::main;
  if (is_jemalloc_module(module) || is_allocator(bare)) return FrameClass::allocator;
  if (starts_with(bare, "testing::") || bare == "RUN_ALL_TESTS") return FrameClass::gtest;
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
