// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The sorted symbol table (lib/analysis/src/symbol_index.h) against libdw's
// own search, which it stands in for: on a real library without debug
// information, the same name at every function's first, middle and last
// byte, or no answer (then the symbolizer asks libdw).
#include <elfutils/libdwfl.h>

#include <string>

#include <gtest/gtest.h>

#include "symbol_index.h"

namespace heapgate::detail {
namespace {

const Dwfl_Callbacks kOffline = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo, dwfl_offline_section_address,
                                 nullptr};

struct Compared {
  int addresses = 0;
  int inside = 0;           // addresses inside a function
  int answered_inside = 0;  // of those, answered without libdw
  int differ = 0;
  std::string first_difference;
};

Compared compare_with_libdw(const char* path) {
  Compared c;
  Dwfl* dwfl = dwfl_begin(&kOffline);
  if (dwfl == nullptr) return c;
  Dwfl_Module* mod = dwfl_report_offline(dwfl, "lib", path, -1);
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (mod != nullptr) {
    const SymbolIndex index(mod);
    const int count = dwfl_module_getsymtab(mod);
    for (int i = 1; i < count; ++i) {
      GElf_Sym sym;
      GElf_Addr start = 0;
      GElf_Word shndx = 0;
      if (dwfl_module_getsym_info(mod, i, &sym, &start, &shndx, nullptr, nullptr) == nullptr) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0 || shndx == SHN_UNDEF) continue;
      // Its first, middle and last byte, and the bytes just past it (padding
      // before the next function, or the next function).
      for (GElf_Addr address :
           {start, start + sym.st_size / 2, start + sym.st_size - 1, start + sym.st_size, start + sym.st_size + 7}) {
        ++c.addresses;
        const bool inside = address < start + sym.st_size;
        c.inside += inside ? 1 : 0;
        const SymbolIndex::Answer ours = index.at(address);
        if (!ours.known) continue;
        c.answered_inside += inside ? 1 : 0;
        GElf_Off offset = 0;
        GElf_Sym found;
        const char* theirs = dwfl_module_addrinfo(mod, address, &offset, &found, nullptr, nullptr, nullptr);
        const std::string a = ours.name != nullptr ? ours.name : "(none)";
        const std::string b = theirs != nullptr ? theirs : "(none)";
        if (a != b && ++c.differ == 1) c.first_difference = a + " vs " + b;
      }
    }
  }
  dwfl_end(dwfl);
  return c;
}

TEST(SymbolIndex, NamesWhatLibdwNamesOnRealLibraries) {
  // Shipped without their debug files on a machine set up by scripts/setup.sh.
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}) {
    const Compared c = compare_with_libdw(path);
    ASSERT_GT(c.addresses, 3000) << path;
    EXPECT_EQ(c.differ, 0) << path << ": " << c.first_difference;
    // It answers for nearly every address inside a function (the rest go to libdw).
    EXPECT_GT(c.answered_inside * 100, c.inside * 99) << path << ": " << c.answered_inside << " of " << c.inside;
  }
}

TEST(SymbolIndex, AnAddressOutsideEveryFunctionHasNoAnswer) {
  Dwfl* dwfl = dwfl_begin(&kOffline);
  ASSERT_NE(dwfl, nullptr);
  Dwfl_Module* mod = dwfl_report_offline(dwfl, "lib", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", -1);
  dwfl_report_end(dwfl, nullptr, nullptr);
  ASSERT_NE(mod, nullptr);
  const SymbolIndex index(mod);
  EXPECT_GT(index.size(), 1000u);
  EXPECT_EQ(index.name_at(0), nullptr);
  EXPECT_EQ(index.name_at(~GElf_Addr{0}), nullptr);
  dwfl_end(dwfl);
}

}  // namespace
}  // namespace heapgate::detail
