// SPDX-License-Identifier: MIT
// Private: the role of a frame in a stack, for normalize_profile()'s dropping
// rules (names are read with bare_function_name(), heapgate/frame_text.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace heapgate::detail {

/// The role of one frame in a stack, for normalize_profile()'s dropping rules.
enum class FrameClass : std::uint8_t {
  user,       ///< kept
  allocator,  ///< dropped in the innermost run (malloc, operator new, jemalloc, ...)
  heapgate,   ///< heapgate's own library frames: dropped anywhere
  gtest,      ///< A test framework's frames (GoogleTest, Catch2, doctest): dropped anywhere (and then `main` too)
  outer,      ///< start-up and thread-start frames: dropped in the outermost run
  main,       ///< `main`: everything outward of it is dropped
  dropped,    ///< matched NormalizeOptions::drop_frames: dropped anywhere
};

/// Classifies a known function (`function` demangled, `file` its source file
/// or "", `module` the mapped file it lives in or "").
FrameClass classify_frame(std::string_view function, std::string_view file, std::string_view module);

/// Classifies a frame whose function is unknown, by its module alone.
FrameClass classify_unknown(std::string_view module);

/// True for the C and C++ runtimes and the allocator (libc, libstdc++,
/// libgcc_s, the dynamic loader, libjemalloc): code of the system, not of the
/// program under test, whose frames are named from symbol tables alone.
bool is_system_runtime_module(std::string_view module);

}  // namespace heapgate::detail
