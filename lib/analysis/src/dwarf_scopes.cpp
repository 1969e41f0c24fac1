// SPDX-License-Identifier: MIT
// CuScopes: one walk of a compile unit's subprograms and inlined instances, swept into disjoint
// address segments each owned by its innermost scope; containing() looks an address up.
#include "dwarf_scopes.h"

#include <dwarf.h>

#include <algorithm>
#include <utility>

namespace heapgate::detail {
namespace {

bool is_function_scope(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

// Deeper than any real nesting of namespaces, classes, blocks and inlined
// calls; a corrupt file cannot recurse without end.
constexpr int kMaxDepth = 256;

}  // namespace

CuScopes::CuScopes(Dwarf_Die* cudie) {
  std::vector<Range> ranges;
  walk(cudie, -1, 0, ranges);
  build_segments(std::move(ranges));
}

// Pre-order: a scope gets a higher index than its parent and than every
// scope walked before it, so "the highest index over an address" is the
// innermost scope there (and, for ranges a broken file lets overlap, the one
// walked last).
void CuScopes::walk(Dwarf_Die* die, int parent, int depth, std::vector<Range>& ranges) {
  if (depth > kMaxDepth || dwarf_haschildren(die) <= 0) return;
  Dwarf_Die child;
  if (dwarf_child(die, &child) != 0) return;
  do {
    int inner = parent;
    if (is_function_scope(dwarf_tag(&child))) {
      const int index = static_cast<int>(scopes_.size());
      bool has_code = false;
      Dwarf_Addr base = 0;
      Dwarf_Addr low = 0;
      Dwarf_Addr high = 0;
      for (ptrdiff_t offset = 0; (offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0;) {
        if (high <= low) continue;
        if (!has_code) scopes_.push_back(Scope{child, parent});
        has_code = true;
        ranges.push_back(Range{low, high, index});
      }
      // A declaration or an abstract instance holds no code: its children
      // (an abstract instance's) are no scope of any address either.
      if (has_code) inner = index;
    }
    walk(&child, inner, depth + 1, ranges);
  } while (dwarf_siblingof(&child, &child) == 0);
}

// A sweep over the range starts with the open ranges in a heap by scope
// index: between two boundaries the owner is the highest open index.
void CuScopes::build_segments(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.low < b.low; });
  auto lower_priority = [](const Range& a, const Range& b) { return a.scope < b.scope; };
  std::vector<Range> open;  // a heap by scope; ranges that ended leave it lazily, once on top
  std::size_t next_range = 0;
  Dwarf_Addr at = 0;
  while (next_range < ranges.size() || !open.empty()) {
    if (open.empty()) at = ranges[next_range].low;
    for (; next_range < ranges.size() && ranges[next_range].low <= at; ++next_range) {
      open.push_back(ranges[next_range]);
      std::push_heap(open.begin(), open.end(), lower_priority);
    }
    while (!open.empty() && open.front().high <= at) {
      std::pop_heap(open.begin(), open.end(), lower_priority);
      open.pop_back();
    }
    if (open.empty()) continue;
    Dwarf_Addr boundary = open.front().high;
    if (next_range < ranges.size()) boundary = std::min(boundary, ranges[next_range].low);
    const int owner = open.front().scope;
    if (!segments_.empty() && segments_.back().end == at && segments_.back().scope == owner) {
      segments_.back().end = boundary;
    } else {
      segments_.push_back(Segment{at, boundary, owner});
    }
    at = boundary;
  }
  segments_.shrink_to_fit();
}

std::vector<Dwarf_Die> CuScopes::containing(Dwarf_Addr address) const {
  std::vector<Dwarf_Die> out;
  auto it = std::upper_bound(segments_.begin(), segments_.end(), address,
                             [](Dwarf_Addr a, const Segment& s) { return a < s.start; });
  if (it == segments_.begin()) return out;
  --it;
  if (address >= it->end) return out;
  for (int i = it->scope; i >= 0; i = scopes_[static_cast<std::size_t>(i)].parent) {
    Dwarf_Die die = scopes_[static_cast<std::size_t>(i)].die;
    const bool inlined = dwarf_tag(&die) == DW_TAG_inlined_subroutine;
    out.push_back(die);
    if (!inlined) break;
  }
  return out;
}

}  // namespace heapgate::detail
