// SPDX-License-Identifier: MIT
// DwarfNamer: spells a function the way the C++ demangler would, from DWARF alone, for functions
// without a linkage name; scope prefixes, parameter and type names, a parent index per unit.
#include "dwarf_names.h"

#include <dwarf.h>

#include <algorithm>
#include <vector>

namespace heapgate::detail {
namespace {

constexpr int kMaxDepth = 12;

const char* die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  return dwarf_formstring(dwarf_attr(die, DW_AT_name, &attr));
}

bool referenced_die(Dwarf_Die* die, unsigned int attribute, Dwarf_Die* result) {
  Dwarf_Attribute attr;
  Dwarf_Attribute* a = dwarf_attr(die, attribute, &attr);
  return a != nullptr && dwarf_formref_die(a, result) != nullptr;
}

bool descends(int tag) {
  switch (tag) {
    case DW_TAG_compile_unit:
    case DW_TAG_partial_unit:
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_subprogram:
    case DW_TAG_lexical_block:
      return true;
    default:
      return false;
  }
}

bool is_cxx(int language) {
  switch (language) {
    case DW_LANG_C_plus_plus:
    case DW_LANG_C_plus_plus_03:
    case DW_LANG_C_plus_plus_11:
    case DW_LANG_C_plus_plus_14:
      return true;
    default:
      return false;
  }
}

// GCC spells base types "long unsigned int"; the demangler "unsigned long".
std::string base_type_name(const char* name) {
  static const std::unordered_map<std::string_view, std::string_view> kNames = {
      {"long unsigned int", "unsigned long"},
      {"long int", "long"},
      {"short int", "short"},
      {"short unsigned int", "unsigned short"},
      {"long long int", "long long"},
      {"long long unsigned int", "unsigned long long"},
      {"__int128 unsigned", "unsigned __int128"},
  };
  if (name == nullptr) return "?";
  auto it = kNames.find(name);
  return std::string(it == kNames.end() ? std::string_view(name) : it->second);
}

}  // namespace

std::string DwarfNamer::class_name(Dwarf_Die* die, int depth) {
  const char* name = die_name(die);
  if (name == nullptr) {
    // A closure type has no name, but its operator() tells what it is.
    Dwarf_Die child;
    if (dwarf_child(die, &child) == 0) {
      do {
        const char* member = dwarf_tag(&child) == DW_TAG_subprogram ? die_name(&child) : nullptr;
        if (member != nullptr && std::string_view(member) == "operator()") {
          std::string params = parameters(&child, depth + 1);
          constexpr std::string_view kConst = " const";
          if (params.size() > kConst.size() &&
              params.compare(params.size() - kConst.size(), kConst.size(), kConst) == 0) {
            params.resize(params.size() - kConst.size());
          }
          return "{lambda" + params + "}";
        }
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    return "{unnamed type}";
  }
  std::string_view n = name;
  // GCC names closure types "<lambda(int)>"; the demangler writes "{lambda(int)#1}".
  if (n.size() > 8 && n.substr(0, 7) == "<lambda" && n.back() == '>') {
    return "{lambda" + std::string(n.substr(7, n.size() - 8)) + "}";
  }
  return std::string(n);
}

DwarfNamer::Key DwarfNamer::key_of(Dwarf_Die* die) { return Key{dwarf_cu_getdwarf(die->cu), dwarf_dieoffset(die)}; }

const DwarfNamer::ParentIndex& DwarfNamer::index_unit(Dwarf_Die* cu) {
  auto [it, inserted] = parents_.try_emplace(key_of(cu));
  ParentIndex& index = it->second;
  if (!inserted) return index;
  std::vector<Dwarf_Die> pending{*cu};
  while (!pending.empty()) {
    Dwarf_Die die = pending.back();
    pending.pop_back();
    const Dwarf_Off parent_offset = dwarf_dieoffset(&die);
    Dwarf_Die child;
    if (dwarf_child(&die, &child) != 0) continue;
    do {
      index.emplace_back(dwarf_dieoffset(&child), parent_offset);
      if (descends(dwarf_tag(&child))) pending.push_back(child);
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  std::sort(index.begin(), index.end());
  index.shrink_to_fit();
  return index;
}

bool DwarfNamer::parent(Dwarf_Die* die, Dwarf_Die* result) {
  Dwarf_Die cu;
  if (dwarf_diecu(die, &cu, nullptr, nullptr) == nullptr) return false;
  const ParentIndex& index = index_unit(&cu);
  const Dwarf_Off offset = dwarf_dieoffset(die);
  auto it = std::lower_bound(index.begin(), index.end(), std::make_pair(offset, Dwarf_Off{0}));
  if (it == index.end() || it->first != offset) return false;
  return dwarf_offdie(dwarf_cu_getdwarf(die->cu), it->second, result) != nullptr;
}

std::string DwarfNamer::scope_prefix(Dwarf_Die* die, int depth) {
  std::vector<std::string> parts;
  Dwarf_Die current = *die;
  Dwarf_Die up;
  while (parent(&current, &up)) {
    const int tag = dwarf_tag(&up);
    if (tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit || tag == DW_TAG_type_unit) break;
    if (tag == DW_TAG_namespace) {
      const char* name = die_name(&up);
      parts.emplace_back(name != nullptr ? name : "(anonymous namespace)");
    } else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
               tag == DW_TAG_enumeration_type) {
      parts.push_back(class_name(&up, depth + 1));
    } else if (tag == DW_TAG_subprogram) {
      // A local class (a lambda's closure): the function is its scope.
      parts.push_back(function_name(&up, depth + 1));
      break;
    }
    current = up;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    out += *it;
    out += "::";
  }
  return out;
}

std::string DwarfNamer::type_name(Dwarf_Die* type, int depth) {
  if (depth > kMaxDepth) return "?";
  const Key key = key_of(type);
  auto cached = types_.find(key);
  if (cached != types_.end()) return cached->second;
  Dwarf_Die target;
  const bool has_target = referenced_die(type, DW_AT_type, &target);
  auto inner = [&] { return has_target ? type_name(&target, depth + 1) : std::string("void"); };
  auto function_type = [&](Dwarf_Die* sub, const char* declarator) {
    Dwarf_Die ret;
    std::string out = referenced_die(sub, DW_AT_type, &ret) ? type_name(&ret, depth + 1) : "void";
    out += ' ';
    out += declarator;
    out += parameters(sub, depth + 1);
    return out;
  };
  std::string out;
  switch (dwarf_tag(type)) {
    case DW_TAG_base_type:
      out = base_type_name(die_name(type));
      break;
    case DW_TAG_typedef:
      out = inner();
      break;
    case DW_TAG_const_type:
      out = inner() + " const";
      break;
    case DW_TAG_volatile_type:
      out = inner() + " volatile";
      break;
    case DW_TAG_pointer_type:
      out = has_target && dwarf_tag(&target) == DW_TAG_subroutine_type ? function_type(&target, "(*)") : inner() + "*";
      break;
    case DW_TAG_reference_type:
      out = has_target && dwarf_tag(&target) == DW_TAG_subroutine_type ? function_type(&target, "(&)") : inner() + "&";
      break;
    case DW_TAG_rvalue_reference_type:
      out = inner() + "&&";
      break;
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_enumeration_type:
      out = scope_prefix(type, depth + 1) + class_name(type, depth + 1);
      break;
    case DW_TAG_subroutine_type:
      out = function_type(type, "");
      break;
    case DW_TAG_array_type:
      out = inner() + " []";
      break;
    case DW_TAG_ptr_to_member_type: {
      Dwarf_Die owner;
      out = inner() + " " + (referenced_die(type, DW_AT_containing_type, &owner) ? type_name(&owner, depth + 1) : "?") +
            "::*";
      break;
    }
    default: {
      const char* name = die_name(type);
      out = name != nullptr ? name : "?";
      break;
    }
  }
  types_.emplace(key, out);
  return out;
}

std::string DwarfNamer::parameters(Dwarf_Die* function, int depth) {
  std::string out = "(";
  bool first = true;
  bool is_const = false;
  Dwarf_Die child;
  if (dwarf_child(function, &child) == 0) {
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_unspecified_parameters) {
        out += first ? "..." : ", ...";
        first = false;
        continue;
      }
      if (tag != DW_TAG_formal_parameter) continue;
      Dwarf_Die type;
      Dwarf_Attribute attr;
      const bool has_type = dwarf_formref_die(dwarf_attr_integrate(&child, DW_AT_type, &attr), &type) != nullptr;
      bool artificial = false;
      if (dwarf_attr(&child, DW_AT_artificial, &attr) != nullptr) dwarf_formflag(&attr, &artificial);
      if (artificial) {
        // `this` (`T* const` or `T const* const`): a pointer to const makes a
        // const member function.
        Dwarf_Die pointer = type;
        Dwarf_Die pointee;
        while (has_type && dwarf_tag(&pointer) == DW_TAG_const_type && referenced_die(&pointer, DW_AT_type, &pointer)) {
        }
        if (has_type && dwarf_tag(&pointer) == DW_TAG_pointer_type && referenced_die(&pointer, DW_AT_type, &pointee) &&
            dwarf_tag(&pointee) == DW_TAG_const_type) {
          is_const = true;
        }
        continue;
      }
      if (!first) out += ", ";
      out += has_type ? type_name(&type, depth + 1) : "?";
      first = false;
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  out += ')';
  if (is_const) out += " const";
  return out;
}

std::string DwarfNamer::function_name(Dwarf_Die* die) { return function_name(die, 0); }

std::string DwarfNamer::function_name(Dwarf_Die* die, int depth) {
  if (depth > kMaxDepth) return {};
  const Key key = key_of(die);
  auto cached = functions_.find(key);
  if (cached != functions_.end()) return cached->second;
  // Follow the instance to its declaration: abstract origin, then specification.
  Dwarf_Die current = *die;
  std::string out;
  bool named = false;
  for (int hop = 0; hop < 16; ++hop) {
    Dwarf_Attribute attr;
    const char* linkage = dwarf_formstring(dwarf_attr(&current, DW_AT_linkage_name, &attr));
    if (linkage == nullptr) linkage = dwarf_formstring(dwarf_attr(&current, DW_AT_MIPS_linkage_name, &attr));
    if (linkage != nullptr) {
      out = demangle_(linkage);
      named = true;
      break;
    }
    Dwarf_Die next;
    if (!referenced_die(&current, DW_AT_abstract_origin, &next) &&
        !referenced_die(&current, DW_AT_specification, &next)) {
      break;
    }
    current = next;
  }
  if (!named) {
    const char* name = die_name(&current);
    if (name != nullptr) {
      // C functions, and `main`, are spelled as their symbols: the bare name.
      Dwarf_Die cu;
      const bool cxx = dwarf_diecu(&current, &cu, nullptr, nullptr) != nullptr && is_cxx(dwarf_srclang(&cu));
      if (!cxx || std::string_view(name) == "main") {
        out = name;
      } else {
        out = scope_prefix(&current, depth) + name + parameters(&current, depth);
      }
    }
  }
  functions_.emplace(key, out);
  return out;
}

}  // namespace heapgate::detail
