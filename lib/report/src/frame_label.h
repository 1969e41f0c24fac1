// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Private: short, readable labels for stack frames in the HTML report and the
// flame graphs. A demangled libstdc++ name can fill a screen; the label keeps
// what tells frames apart (the qualified function name) and the full name
// stays available on hover.
#pragma once

#include <string>
#include <string_view>

namespace heapgate::detail {

/// A frame as normalize_profile writes it, "function at file:line", split in
/// two; `location` is "" when the frame has none.
struct FrameParts {
  std::string function;
  std::string location;
};

/// Splits at the last " at ".
FrameParts split_frame(std::string_view frame);

/// The function of a demangled C++ name, for display:
/// - libstdc++'s spelled-out aliases become the alias
///   (`std::__cxx11::basic_string<char, std::char_traits<char>,
///   std::allocator<char> >` → `std::string`; `std::__cxx11::` → `std::`);
/// - the return type and the parameter list are dropped (`int f(long)` → `f`),
///   as are cv/ref qualifiers after them;
/// - template arguments stay when short and flat (`std::vector<char>`), else
///   become `<…>` (`std::map<…>::find`);
/// - `operator<`, `operator()` and lambdas (`{lambda()#1}`) keep their names.
/// Names that are not C++ (C functions, "[framework]", "all") come back as
/// they are. Never throws on odd input; unbalanced brackets are kept as text.
std::string short_function_name(std::string_view function);

/// short_function_name() of the frame's function; its location is left out.
std::string short_frame_label(std::string_view frame);

}  // namespace heapgate::detail
