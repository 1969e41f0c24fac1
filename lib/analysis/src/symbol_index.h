// SPDX-License-Identifier: MIT
// A module's ELF symbol table sorted by address, for naming frames of code
// without debug information.
//
// Why not dwfl_module_addrinfo per address: it scans the whole symbol table
// on every call. For a program built on large libraries without their debug
// files (Debian's clang-format on libLLVM and libclang-cpp) that scan was a
// third of `heapgate record`'s time, summary included. One sort per module,
// then a binary search per address. It picks what dwfl_module_addrinfo
// picks among the symbols that contain the address (the highest address;
// then global over weak over local; then the first in the table). Where
// none does, libdw may still name the address by a label without a size
// before it; the index knows where there is none (the common case: a
// library's internal functions, absent from its dynamic symbol table) and
// sends only the rest to libdw.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace heapgate::detail {

class SymbolIndex {
 public:
  /// Reads `mod`'s symbol table (its .symtab, else .dynsym, as libdw chose).
  explicit SymbolIndex(Dwfl_Module* mod);

  struct Answer {
    const char* name = nullptr;  ///< libdw's string, alive as long as the module
    bool known = false;          ///< false: ask dwfl_module_addrinfo
  };
  /// The name of the function symbol that contains `address` (in the Dwfl's
  /// address space, as dwfl_module_addrinfo takes it); known to be none when
  /// no symbol with a size contains it and no label without one lies between
  /// the end of the nearest symbol below and the address. Not known when
  /// such a label does, or when more than kMostLookedBack symbols below it
  /// reach past it and none of them contains it.
  Answer at(GElf_Addr address) const;
  /// at(address).name when it is known, else nullptr.
  const char* name_at(GElf_Addr address) const { return at(address).name; }

  static constexpr int kMostLookedBack = 256;

  std::size_t size() const noexcept { return symbols_.size(); }

 private:
  struct Symbol {
    GElf_Addr start;
    GElf_Addr end;  // past the end; start + st_size
    int rank;       // 3 global, 2 weak, 1 local, 0 other
    int order;      // the order libdw meets it in: globals first, then locals
    const char* name;
  };
  std::vector<Symbol> symbols_;    // by start, then best first
  std::vector<GElf_Addr> reach_;   // reach_[i]: the furthest end of symbols_[0..i]
  std::vector<GElf_Addr> labels_;  // where symbols without a size are, sorted
};

}  // namespace heapgate::detail
