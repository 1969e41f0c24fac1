// SPDX-License-Identifier: MIT
// How to step from one stack frame to its caller, read from the DWARF
// call-frame information (.eh_frame) the compiler leaves for exceptions
// (frame_walker.cpp keeps one rule per return address).
#pragma once

#include <cstdint>

namespace heapgate::detail {

/// The step out of the frame of one return address, in the forms compiled
/// code uses: the canonical frame address (CFA, the caller's stack pointer)
/// is the stack pointer or rbp plus a constant, the return address is at
/// CFA - 8, and rbp is unchanged or saved at a constant offset from the CFA.
/// Any other form (a CFA from an expression, a signal frame) is
/// `unsupported`: the caller unwinds with libunwind instead.
struct FrameRule {
  enum Kind : std::uint8_t {
    none = 0,         ///< not computed (a rule cache's empty value)
    step = 1,         ///< apply the fields below
    outermost = 2,    ///< the return address is undefined: the stack ends here
    unsupported = 3,  ///< a form this rule cannot describe: ask libunwind
    /// No FDE covers the address (hand-written assembly, a fiber's entry):
    /// the known stack ends here.
    no_unwind_info = 4,
  };
  Kind kind = none;
  bool cfa_from_bp = false;  ///< the CFA is rbp + cfa_offset, else rsp + cfa_offset
  bool bp_saved = false;     ///< the caller's rbp is at CFA + bp_offset, else unchanged
  std::int32_t cfa_offset = 0;
  std::int32_t bp_offset = 0;
};

/// The rule at `return_address`, from the FDE libgcc's _Unwind_Find_FDE finds
/// for the call instruction before it (return_address - 1). Slow (a search
/// and a CFA program interpreted): for a cache's misses. Allocates nothing.
FrameRule frame_rule_at(std::uintptr_t return_address) noexcept;

/// Whether frame_rule_at() can answer at all in this process (x86-64 and
/// libgcc's _Unwind_Find_FDE present).
bool frame_rules_available() noexcept;

}  // namespace heapgate::detail
