// SPDX-License-Identifier: MIT
// heapgate's allocation entry points: the malloc family, jemalloc's *allocx
// functions and every replaceable operator new/delete, defined (weakly) by
// the measuring library so that a program linking it calls them first. Each
// forwards to the allocator behind it, jemalloc's fast paths included, and
// feeds the counting (alloc_counting.h) only while a window counts through
// them (docs/design.md §3).
#pragma once

namespace heapgate::detail {

/// Every allocation of the process reaches heapgate's entry points before
/// jemalloc: for each name, the definition the dynamic linker gives callers is
/// not jemalloc's own (it is heapgate's, or the program's own replacement,
/// which calls one of heapgate's), and jemalloc serves the ones heapgate
/// forwards to. Decided once; allocates nothing after the first call.
bool entry_points_in_effect() noexcept;

/// Why entry_points_in_effect() is false (a symbol and the module it resolved
/// to), or "" when it is true.
const char* why_entry_points_not_in_effect() noexcept;

}  // namespace heapgate::detail
