// SPDX-License-Identifier: MIT
// SymbolIndex: a module's ELF symbol table sorted by address, answering which function symbol
// contains an address by binary search, picking as dwfl_module_addrinfo would.
#include "symbol_index.h"

#include <algorithm>

namespace heapgate::detail {
namespace {

int binding_rank(const GElf_Sym& sym) {
  switch (GELF_ST_BIND(sym.st_info)) {
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    case STB_LOCAL:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

SymbolIndex::SymbolIndex(Dwfl_Module* mod) {
  const int count = dwfl_module_getsymtab(mod);
  if (count <= 0) return;
  const int first_global = dwfl_module_getsymtab_first_global(mod);
  symbols_.reserve(static_cast<std::size_t>(count));
  for (int i = 1; i < count; ++i) {
    GElf_Sym sym;
    GElf_Addr address = 0;
    GElf_Word shndx = 0;
    const char* name = dwfl_module_getsym_info(mod, i, &sym, &address, &shndx, nullptr, nullptr);
    if (name == nullptr || shndx == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;  // never names an address in libdw
    if (sym.st_size == 0) {
      labels_.push_back(address);
      continue;
    }
    // Code: defined functions and untyped symbols (libdw also names by data
    // objects, whose addresses no return address falls in; a large table
    // among them would only lengthen the search back below).
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
    // libdw searches the globals first, then the locals.
    const int order = first_global > 0 && i >= first_global ? i - first_global : count + i;
    symbols_.push_back(Symbol{address, address + sym.st_size, binding_rank(sym), order, name});
  }
  std::sort(labels_.begin(), labels_.end());
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.order < b.order;
  });
  reach_.reserve(symbols_.size());
  GElf_Addr furthest = 0;
  for (const Symbol& s : symbols_) {
    furthest = std::max(furthest, s.end);
    reach_.push_back(furthest);
  }
}

SymbolIndex::Answer SymbolIndex::at(GElf_Addr address) const {
  // The symbols that start at or below `address`, nearest first: the first
  // that contains it has the highest start, and at that start the best.
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](GElf_Addr a, const Symbol& s) { return a < s.start; });
  // The end of the nearest symbol below: libdw takes no label below it.
  GElf_Addr labels_from = 0;
  if (it != symbols_.begin()) labels_from = std::prev(it)->end;
  bool searched_all = true;
  for (int looked = 0; it != symbols_.begin(); ++looked) {
    // No symbol from here down reaches the address.
    if (reach_[static_cast<std::size_t>(std::prev(it) - symbols_.begin())] <= address) break;
    if (looked == kMostLookedBack) {
      searched_all = false;
      break;
    }
    --it;
    if (address < it->end) {
      // The best at this start: sorted first among those that share it and contain the address.
      auto best = it;
      while (best != symbols_.begin() && std::prev(best)->start == it->start) {
        --best;
        if (address < best->end) it = best;
      }
      return Answer{it->name, true};
    }
  }
  if (!searched_all) return Answer{};
  // No symbol contains it: libdw's answer is a label without a size at or
  // below the address and past the symbols below, if there is one.
  auto label = std::upper_bound(labels_.begin(), labels_.end(), address);
  if (label != labels_.begin() && *std::prev(label) >= labels_from) return Answer{};
  return Answer{nullptr, true};
}

}  // namespace heapgate::detail
