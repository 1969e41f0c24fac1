// SPDX-License-Identifier: MIT
// The text of a stack frame, in one place: how normalize_profile() writes a
// frame with its source line ("f(int) at file.cpp:12") and how every reader
// splits it again, and the ways heapgate shortens a demangled C++ name.
//
// The shortenings differ on purpose, one per use:
//
// | function                    | keeps                                 | used for                                  |
// |-----------------------------|---------------------------------------|-------------------------------------------|
// | bare_function_name()        | the qualified name only: `ns::C::f`   | classifying frames (normalize_profile)    |
// | elide_template_arguments()  | everything but template arguments     | failure messages, call-site keys (gate)   |
// | short_function_name()       | the qualified name, short arguments   | narrow display (HTML report, flame graph) |
// | strip_return_type()         | everything after the return type      | the symbolizer's frame names              |
//
// elide_template_arguments() is what CallSite::function holds, and baselines
// store call sites by that text: changing its output renames recorded call
// sites, so it keeps its output exactly, flaws included.
#pragma once

#include <string>
#include <string_view>

namespace heapgate {

/// A frame as normalize_profile() writes it with NormalizeOptions::with_lines,
/// "function at file:line", in its two parts.
struct FrameParts {
  std::string function;
  /// "file.cpp:12"; "" when the frame has no location.
  std::string location;
};

/// "f(int)" and "file.cpp:12" → "f(int) at file.cpp:12"; an empty location
/// gives the function alone.
std::string join_frame(std::string_view function, std::string_view location);

/// The inverse of join_frame(): splits at the last " at ".
FrameParts split_frame(std::string_view frame);

/// The qualified name of a demangled function without return type, template
/// arguments and parameters: "void ns::f<int>(int) const" → "ns::f".
/// "(anonymous namespace)", lambdas and operator names are kept as written.
/// For matching names against lists (normalize_profile()'s frame classes).
std::string bare_function_name(std::string_view demangled);

/// `demangled` without the return type the demangler prints for template
/// functions: "void ns::f<int>(int)" → "ns::f<int>(int)". Other names are
/// returned unchanged.
std::string_view strip_return_type(std::string_view demangled);

/// `name` with each outermost template argument list replaced by `<…>`,
/// everything else as it is (scope, parameters, a return type, an " at
/// file:line" suffix): "std::map<int, int>::find(int const&) at m.cpp:3" →
/// "std::map<…>::find(int const&) at m.cpp:3". Parameters stay, so overloads
/// stay apart. For failure messages and call-site keys (CallSite::function).
/// Only the `<` right after "operator" is taken for an operator's, so
/// "operator<<(std::ostream&, X const&)" becomes "operator<<…" (parameters
/// lost). A flaw, kept: call sites recorded in baselines are spelled that
/// way, and fixing it would report them as gone and new.
std::string elide_template_arguments(std::string_view name);

/// The function of a demangled C++ name, for display where space is short:
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

/// short_function_name() of a frame's function; its location is left out.
std::string short_frame_label(std::string_view frame);

}  // namespace heapgate
