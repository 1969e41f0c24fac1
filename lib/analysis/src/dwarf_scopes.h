// SPDX-License-Identifier: MIT
// The function scopes of one compile unit (subprograms and the instances
// inlined into them), indexed by address after one walk of the unit.
//
// Why not libdw's dwarf_getscopes + dwarf_getscopes_die per address: each
// call walks the unit's whole DIE tree, so their cost grows with the unit.
// A test file that includes a header-only library is one huge unit (a
// 4,000-line HTTP library and GoogleTest's templates): symbolizing one test's
// profile took ~50 s there, and recording call sites ran out of its budget
// after 35 of 772 tests. One walk per unit, then a lookup per address.
//
// The walk collects each scope's address ranges; one sort and sweep then
// turns them into disjoint segments, each owned by its innermost scope. A
// balanced tree repainted per range cost a third of a call-sites child on a
// suite of tiny tests (one node allocated per split, a lookup per paint).
#pragma once

#include <elfutils/libdw.h>

#include <vector>

namespace heapgate::detail {

class CuScopes {
 public:
  /// Walks the unit of `cudie` once. The DIEs it keeps point into the
  /// module's debug data: the index lives no longer than the module.
  explicit CuScopes(Dwarf_Die* cudie);

  /// The function scopes that contain `address` (a DWARF address of this
  /// unit: a module address less the unit's bias), innermost first, ending
  /// with the first that is not an inlined instance: the out-of-line function
  /// the code is in. Empty when no function scope contains it.
  std::vector<Dwarf_Die> containing(Dwarf_Addr address) const;

  std::size_t size() const noexcept { return scopes_.size(); }

 private:
  struct Scope {
    Dwarf_Die die;
    int parent;  // the enclosing function scope's index, -1 for none
  };
  struct Range {
    Dwarf_Addr low;
    Dwarf_Addr high;  // past the end
    int scope;
  };
  struct Segment {
    Dwarf_Addr start;
    Dwarf_Addr end;
    int scope;  // the innermost scope over [start, end)
  };

  void walk(Dwarf_Die* die, int parent, int depth, std::vector<Range>& ranges);
  void build_segments(std::vector<Range> ranges);

  std::vector<Scope> scopes_;
  std::vector<Segment> segments_;  // by start; disjoint
};

}  // namespace heapgate::detail
