// SPDX-License-Identifier: MIT
// Private: names for functions that DWARF describes without a linkage name.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace heapgate::detail {

/// Spells functions the way the C++ demangler does ("ns::Class::f(int const&)
/// const"), from DWARF alone. GCC gives no DW_AT_linkage_name to functions with
/// internal linkage (anonymous namespaces, lambdas, templates instantiated on
/// them), and DW_AT_name alone ("operator()", "_M_invoke<0>") loses the scope
/// that normalization and readers rely on. Scopes come from a parent index
/// built once per compile unit. Template arguments are as GCC spells them in
/// DW_AT_name (lambdas as "<lambda()>"); closure types
/// themselves are "{lambda(params)}" (the demangler's "{lambda(params)#N}"
/// without the number, which DWARF does not record); return types are never printed.
/// Not thread-safe; the Dwarf handles must outlive it.
class DwarfNamer {
 public:
  /// `demangle` turns a linkage name into the spelling used for other frames.
  explicit DwarfNamer(std::function<std::string(const char*)> demangle) : demangle_(std::move(demangle)) {}

  /// The qualified name and parameter list of the function `die` (a
  /// DW_TAG_subprogram or DW_TAG_inlined_subroutine) refers to; "" if none.
  std::string function_name(Dwarf_Die* die);

 private:
  struct Key {
    const void* dwarf = nullptr;
    Dwarf_Off offset = 0;
    friend bool operator==(const Key& a, const Key& b) { return a.dwarf == b.dwarf && a.offset == b.offset; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<const void*>()(k.dwarf) ^ (std::hash<Dwarf_Off>()(k.offset) * 0x9e3779b97f4a7c15ull);
    }
  };

  static Key key_of(Dwarf_Die* die);
  bool parent(Dwarf_Die* die, Dwarf_Die* result);
  std::string scope_prefix(Dwarf_Die* die, int depth);
  std::string type_name(Dwarf_Die* type, int depth);
  std::string class_name(Dwarf_Die* type, int depth);
  std::string parameters(Dwarf_Die* function, int depth);
  std::string function_name(Dwarf_Die* die, int depth);

  std::function<std::string(const char*)> demangle_;
  // Per compile unit, each DIE's offset and its parent's, sorted by the
  // former: one vector a unit instead of a hash node a DIE (a unit of a
  // template-heavy test file has hundreds of thousands).
  using ParentIndex = std::vector<std::pair<Dwarf_Off, Dwarf_Off>>;
  const ParentIndex& index_unit(Dwarf_Die* cu);
  std::unordered_map<Key, ParentIndex, KeyHash> parents_;
  std::unordered_map<Key, std::string, KeyHash> functions_;
  std::unordered_map<Key, std::string, KeyHash> types_;
};

}  // namespace heapgate::detail
