// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "dwarf_scopes.h"

#include <dwarf.h>

namespace heapgate::detail {
namespace {

bool is_function_scope(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

// Deeper than any real nesting of namespaces, classes, blocks and inlined
// calls; a corrupt file cannot recurse without end.
constexpr int kMaxDepth = 256;

}  // namespace

CuScopes::CuScopes(Dwarf_Die* cudie) { walk(cudie, -1, 0); }

// Pre-order: a scope is painted over its parent's range, its children over it.
void CuScopes::walk(Dwarf_Die* die, int parent, int depth) {
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
        paint(low, high, index);
      }
      // A declaration or an abstract instance holds no code: its children
      // (an abstract instance's) are no scope of any address either.
      if (has_code) inner = index;
    }
    walk(&child, inner, depth + 1);
  } while (dwarf_siblingof(&child, &child) == 0);
}

void CuScopes::split_at(Dwarf_Addr at) {
  auto it = segments_.upper_bound(at);
  if (it == segments_.begin()) return;
  --it;
  if (it->first < at && at < it->second.end) {
    const Segment tail{it->second.end, it->second.scope};
    it->second.end = at;
    segments_.emplace(at, tail);
  }
}

void CuScopes::paint(Dwarf_Addr low, Dwarf_Addr high, int scope) {
  split_at(low);
  split_at(high);
  segments_.erase(segments_.lower_bound(low), segments_.lower_bound(high));
  segments_.emplace(low, Segment{high, scope});
}

std::vector<Dwarf_Die> CuScopes::containing(Dwarf_Addr address) const {
  std::vector<Dwarf_Die> out;
  auto it = segments_.upper_bound(address);
  if (it == segments_.begin()) return out;
  --it;
  if (address >= it->second.end) return out;
  for (int i = it->second.scope; i >= 0; i = scopes_[static_cast<std::size_t>(i)].parent) {
    Dwarf_Die die = scopes_[static_cast<std::size_t>(i)].die;
    const bool inlined = dwarf_tag(&die) == DW_TAG_inlined_subroutine;
    out.push_back(die);
    if (!inlined) break;
  }
  return out;
}

}  // namespace heapgate::detail
