// SPDX-License-Identifier: MIT
// Symbolizer (heapgate/symbolizer.h) on elfutils libdw: opens each module once, checks its mapping
// against the file's segments, names functions from DWARF or the symbol table, caches addresses.
#include "heapgate/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "heapgate/build_id.h"
#include "heapgate/frame_text.h"
#include "heapgate/sys.h"
#include "dwarf_names.h"
#include "dwarf_scopes.h"
#include "symbol_index.h"
#include "frame_class.h"

namespace heapgate {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

// Stores each distinct string once; the views stay valid because a deque never
// moves its elements on push_back.
class StringPool {
 public:
  std::string_view intern(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return *it;
    const std::string& stored = storage_.emplace_back(s);
    index_.insert(stored);
    return stored;
  }

 private:
  std::deque<std::string> storage_;
  std::unordered_set<std::string_view> index_;
};

struct Segment {
  std::uint64_t offset = 0;  // p_offset
  std::uint64_t vaddr = 0;   // p_vaddr
  std::uint64_t size = 0;    // p_filesz
};

// One file, opened at most once per Symbolizer.
struct Module {
  std::string_view path;      // interned, without " (deleted)"
  std::string_view build_id;  // interned
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  Dwarf_Addr bias = 0;
  // Named from the symbol table only, never from DWARF: see open_module.
  bool symbols_only = false;
  // The symbol table by address, made on the first name it gives.
  std::unique_ptr<detail::SymbolIndex> symbol_index;
  std::vector<Segment> segments;
  // Module address (after the return-address adjustment) -> its Location.
  std::unordered_map<std::uint64_t, const Location*> cache;
  // Frames of mappings that do not match the file on disk: file offset -> Location.
  std::unordered_map<std::uint64_t, const Location*> stale_cache;

  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

std::string_view strip_deleted(std::string_view path) {
  if (path.size() >= kDeletedSuffix.size() && path.substr(path.size() - kDeletedSuffix.size()) == kDeletedSuffix) {
    path.remove_suffix(kDeletedSuffix.size());
  }
  return path;
}

// True when the code mapping `m` could have come from `segments`: a loadable
// segment starts in the mapping's first page and spans as many pages. A file
// rebuilt in place (linkers reuse the inode) almost always moves or resizes
// its code, so its frames are not named from the wrong code.
bool mapping_matches(const Mapping& m, const std::vector<Segment>& segments) {
  if (!m.executable()) return true;
  const std::uint64_t size = m.end - m.start;
  for (const Segment& s : segments) {
    for (std::uint64_t page : {0x1000ull, 0x4000ull, 0x10000ull}) {
      const std::uint64_t first = s.offset & ~(page - 1);
      const std::uint64_t span = ((s.offset - first) + s.size + page - 1) & ~(page - 1);
      if (first == m.offset && span == size) return true;
    }
  }
  return false;
}

// libdw reports modules through these; debug info is searched the standard way.
char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &g_debuginfo_path,
};

// The runtimes are named from symbol tables (see open_module), so the only
// debug file wanted for them is one that carries a fuller .symtab. elfutils
// 0.188 loads libdebuginfod (and with it curl, GnuTLS, Kerberos, LDAP: ~4.5 MB
// and ~15 ms per process) whenever a module with a build-id has no local debug
// file, even with no server configured, where the answer is always "none".
// So without DEBUGINFOD_URLS this asks only the local places: by build-id,
// then, if a file by the debuglink's name exists anywhere the standard search
// looks, the standard search itself (same answer as before in every case).
bool debuginfod_configured() {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && urls[0] != '\0';
}

bool debuglink_candidate_exists(const char* file_name, const char* debuglink_file) {
  if (file_name == nullptr) return false;
  std::vector<std::string> paths{file_name};
  if (char* canonical = ::realpath(file_name, nullptr)) {
    paths.emplace_back(canonical);
    std::free(canonical);
  }
  for (const std::string& path : paths) {
    const std::string::size_type slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
    const std::string name =
        debuglink_file != nullptr ? std::string(debuglink_file) : path.substr(slash + 1) + ".debug";
    // A superset of the places elfutils' default path (":.debug:/usr/lib/debug") names.
    for (const std::string& candidate_dir :
         {dir, dir + "/.debug", "/usr/lib/debug" + dir, std::string("/usr/lib/debug")}) {
      struct stat st {};
      if (::stat((candidate_dir + "/" + name).c_str(), &st) == 0) return true;
    }
  }
  return false;
}

int find_runtime_debuginfo(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                           const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                           char** debuginfo_file_name) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  // Without a build-id the standard search never asks debuginfod.
  if (debuginfod_configured() || dwfl_module_build_id(mod, &bits, &vaddr) <= 0) {
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
  }
  errno = 0;
  const int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                              debuginfo_file_name);
  if (fd >= 0 || (errno != 0 && errno != ENOENT)) return fd;
  if (debuglink_candidate_exists(file_name, debuglink_file)) {
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
  }
  errno = ENOENT;
  return -1;
}

const Dwfl_Callbacks kRuntimeCallbacks = {
    dwfl_build_id_find_elf,
    find_runtime_debuginfo,
    dwfl_offline_section_address,
    &g_debuginfo_path,
};

const char* die_linkage_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (name == nullptr) name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  return name;
}

bool is_function_scope(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

}  // namespace

struct Symbolizer::Impl {
  StringPool strings;
  std::deque<Location> locations;
  std::deque<Module> modules;
  // "path\0device\0inode" -> module.
  std::unordered_map<std::string, Module*> module_index;
  // Profiles with known locations (set_known): looked-up address -> Location.
  std::unordered_map<const Profile*, std::unordered_map<std::uint64_t, const Location*>> known;
  // Raw address -> Location, for addresses outside every file mapping.
  std::unordered_map<std::uint64_t, const Location*> unmapped;
  // Mangled (or plain) symbol name -> interned demangled name.
  std::unordered_map<std::string, std::string_view> demangled;
  SymbolizerStats stats;
  // Text -> its one shared FrameName (see Symbolizer::frame_name).
  std::unordered_map<std::string_view, FrameName> frame_names;
  detail::DwarfNamer namer{[this](const char* name) { return std::string(demangle(name)); }};
  // A compile unit's function scopes by address, built on its first address.
  // Declared after `modules`, so destroyed before the debug data it points into.
  std::unordered_map<const void*, std::unique_ptr<detail::CuScopes>> cu_scopes;

  const detail::CuScopes& scopes_of(Dwarf_Die* cudie) {
    std::unique_ptr<detail::CuScopes>& scopes = cu_scopes[cudie->addr];
    if (!scopes) scopes = std::make_unique<detail::CuScopes>(cudie);
    return *scopes;
  }

  Module* module_for(const Mapping& mapping);
  void open_module(Module& module, const Mapping& mapping);
  const Location& locate(const Mapping* mapping, Module* module, bool stale, std::uint64_t address);
  bool stale(const Mapping& mapping, const Module& module) {
    if (module.mod == nullptr || mapping_matches(mapping, module.segments)) return false;
    ++stats.mappings_mismatched;
    return true;
  }
  const Location& resolve(Module& module, std::uint64_t module_address, std::uint64_t fallback_offset);
  const char* symbol_at(Module& module, Dwarf_Addr addr);
  std::string_view demangle(const char* name);
  // A source file's name, absolute when the compiler saw a relative path (ccache's
  // base_dir, builds run from the source tree): DWARF 5 keeps such names
  // relative to the unit's compilation directory, and libdw leaves them so.
  std::string_view file_name(const char* path, const char* comp_dir) {
    if (path == nullptr) return {};
    if (path[0] == '/' || comp_dir == nullptr || comp_dir[0] != '/') return strings.intern(path);
    return strings.intern((std::filesystem::path(comp_dir) / path).lexically_normal().string());
  }
};

Module* Symbolizer::Impl::module_for(const Mapping& mapping) {
  if (mapping.path.empty()) return nullptr;  // anonymous memory (JIT code and the like)
  std::string key;
  key.reserve(mapping.path.size() + mapping.device.size() + 24);
  key += mapping.path;
  key += '\0';
  key += mapping.device;
  key += '\0';
  key += std::to_string(mapping.inode);
  auto it = module_index.find(key);
  if (it != module_index.end()) return it->second;
  Module& module = modules.emplace_back();
  module.path = strings.intern(strip_deleted(mapping.path));
  ++stats.modules_seen;
  open_module(module, mapping);
  module_index.emplace(std::move(key), &module);
  return &module;
}

void Symbolizer::Impl::open_module(Module& module, const Mapping& mapping) {
  if (!mapping.file_backed()) return;  // "[vdso]" and the like
  // A deleted file's path names another file now, or none: its frames stay unknown.
  if (mapping.deleted()) return;
  const std::string path(module.path);
  // The path comes from the profile: a FIFO there would block a plain
  // open() forever, and a device would be read as if it were code.
  auto opened = sys::open_regular_file(path);
  if (!opened) return;
  int fd = *opened;
  struct stat st {};
  // Only the inode is compared: on overlayfs the kernel's maps show the
  // underlying device, which differs from what stat() reports.
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != mapping.inode) {
    ::close(fd);
    return;
  }
  const bool symbols_only = detail::is_system_runtime_module(module.path);
  Dwfl* dwfl = dwfl_begin(symbols_only ? &kRuntimeCallbacks : &kCallbacks);
  if (dwfl == nullptr) {
    ::close(fd);
    return;
  }
  dwfl_report_begin(dwfl);
  // Base 0 relative to p_vaddr: module addresses are the ELF's own link-time
  // addresses (what addr2line takes), for ET_EXEC and ET_DYN alike.
  Dwfl_Module* mod = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), fd, 0, true);
  if (mod == nullptr) {
    ::close(fd);  // not consumed on failure
    dwfl_end(dwfl);
    return;
  }
  dwfl_report_end(dwfl, nullptr, nullptr);
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(mod, &bias);
  if (elf == nullptr) {
    dwfl_end(dwfl);
    return;
  }
  std::size_t count = 0;
  if (elf_getphdrnum(elf, &count) == 0) {
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_LOAD) continue;
      module.segments.push_back(Segment{phdr.p_offset, phdr.p_vaddr, phdr.p_filesz});
    }
  }
  const unsigned char* bits = nullptr;
  GElf_Addr note_vaddr = 0;
  int n = dwfl_module_build_id(mod, &bits, &note_vaddr);
  if (n > 0 && bits != nullptr) module.build_id = strings.intern(detail::to_hex(bits, static_cast<std::size_t>(n)));
  module.dwfl = dwfl;
  module.mod = mod;
  module.bias = bias;
  // The runtimes' frames only frame the program's own: their inlined helpers
  // and source lines tell a user nothing, and reading them costs more than all
  // the rest of a diff (Debian's libc6-dbg keeps libc's DWARF zlib-compressed:
  // ~80 ms and 16 MB to decompress per process). Their symbol tables (the
  // detached debug file's .symtab when there is one) name every function.
  module.symbols_only = symbols_only;
  ++stats.modules_loaded;
}

std::string_view Symbolizer::Impl::demangle(const char* name) {
  auto it = demangled.find(name);
  if (it != demangled.end()) return it->second;
  std::string text;
  int status = -1;
  char* out = (name[0] == '_' && name[1] == 'Z') ? abi::__cxa_demangle(name, nullptr, nullptr, &status) : nullptr;
  if (out != nullptr && status == 0) {
    text = out;
  } else {
    text = name;
    // Unmangled clones ("foo.cold", "foo.part.0") and symbol versions ("foo@@V_1").
    auto cut = text.find_first_of(".@");
    if (cut != std::string::npos && cut > 0) text.resize(cut);
  }
  std::free(out);
  // "f(int) [clone .cold]": one name for all parts of a function.
  auto clone = text.find(" [clone ");
  if (clone != std::string::npos) text.resize(clone);
  // Template functions come with a return type that DWARF-built names lack.
  std::string_view interned = strings.intern(strip_return_type(text));
  demangled.emplace(name, interned);
  return interned;
}

// The ELF symbol at `addr` (a Dwfl address): from the module's sorted index
// (symbol_index.h), or from libdw where the index has no function there.
const char* Symbolizer::Impl::symbol_at(Module& module, Dwarf_Addr addr) {
  if (!module.symbol_index) module.symbol_index = std::make_unique<detail::SymbolIndex>(module.mod);
  const detail::SymbolIndex::Answer answer = module.symbol_index->at(addr);
  if (answer.known) return answer.name;
  GElf_Off off = 0;
  GElf_Sym sym;
  return dwfl_module_addrinfo(module.mod, addr, &off, &sym, nullptr, nullptr, nullptr);
}

const Location& Symbolizer::Impl::resolve(Module& module, std::uint64_t module_address, std::uint64_t fallback_offset) {
  Location& loc = locations.emplace_back();
  loc.module = module.path;
  loc.build_id = module.build_id;
  loc.offset = module.mod != nullptr ? module_address : fallback_offset;
  if (module.mod == nullptr) return loc;
  ++stats.addresses_resolved;
  const Dwarf_Addr addr = module_address + module.bias;

  // The innermost line comes from the line table; each inlined scope then gives
  // the call site in the function it was inlined into (as eu-addr2line -i does).
  std::string_view file;
  std::uint32_t line = 0;
  auto name_from_symbol_table = [&] {
    const char* symbol = symbol_at(module, addr);
    if (symbol != nullptr && *symbol != '\0') loc.frames.push_back(SourceFrame{demangle(symbol), file, line, false});
  };
  if (module.symbols_only) {
    name_from_symbol_table();
    return loc;
  }
  if (Dwfl_Line* row = dwfl_module_getsrc(module.mod, addr)) {
    int lineno = 0;
    file = file_name(dwfl_lineinfo(row, nullptr, &lineno, nullptr, nullptr, nullptr), dwfl_line_comp_dir(row));
    line = lineno > 0 ? static_cast<std::uint32_t>(lineno) : 0;
  }

  Dwarf_Addr cu_bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(module.mod, addr, &cu_bias);
  if (cudie != nullptr) {
    // Innermost first, up to the out-of-line function (dwarf_scopes.h).
    std::vector<Dwarf_Die> scopes = scopes_of(cudie).containing(addr - cu_bias);
    Dwarf_Attribute comp_dir_attr;
    const char* comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &comp_dir_attr));
    Dwarf_Files* files = nullptr;
    std::size_t nfiles = 0;
    if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0) files = nullptr;
    for (Dwarf_Die& die : scopes) {
      Dwarf_Die* scope = &die;
      const int tag = dwarf_tag(scope);
      if (!is_function_scope(tag)) continue;
      const bool inlined = tag == DW_TAG_inlined_subroutine;
      const char* name = die_linkage_name(scope);
      std::string_view function;
      if (name != nullptr) {
        function = demangle(name);
      } else {
        // No linkage name (C, or C++ with internal linkage): spelled from the
        // DWARF scopes, so inlined and out-of-line copies get one name.
        std::string built = namer.function_name(scope);
        if (!built.empty()) function = strings.intern(built);
      }
      if (function.empty() && !inlined) {
        const char* symbol = symbol_at(module, addr);
        if (symbol != nullptr) function = demangle(symbol);
      }
      if (!function.empty()) loc.frames.push_back(SourceFrame{function, file, line, inlined});
      if (!inlined) break;
      Dwarf_Attribute attr;
      Dwarf_Word value = 0;
      file = {};
      line = 0;
      if (files != nullptr && dwarf_formudata(dwarf_attr(scope, DW_AT_call_file, &attr), &value) == 0 &&
          value < nfiles) {
        file = file_name(dwarf_filesrc(files, value, nullptr, nullptr), comp_dir);
      }
      if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_line, &attr), &value) == 0) {
        line = static_cast<std::uint32_t>(value);
      }
    }
    if (!loc.frames.empty()) loc.frames.back().inlined = false;
  }

  if (loc.frames.empty()) name_from_symbol_table();
  return loc;
}

const Location& Symbolizer::Impl::locate(const Mapping* mapping, Module* module, bool stale, std::uint64_t address) {
  if (mapping == nullptr || module == nullptr) {
    auto it = unmapped.find(address);
    if (it != unmapped.end()) return *it->second;
    Location& loc = locations.emplace_back();
    loc.offset = address;
    unmapped.emplace(address, &loc);
    return loc;
  }
  const std::uint64_t file_offset = address - mapping->start + mapping->offset;
  if (stale) {
    auto it = module->stale_cache.find(file_offset);
    if (it != module->stale_cache.end()) return *it->second;
    Location& unknown = locations.emplace_back();
    unknown.module = module->path;
    unknown.offset = file_offset;
    module->stale_cache.emplace(file_offset, &unknown);
    return unknown;
  }
  std::uint64_t module_address = file_offset;
  bool in_segment = false;
  for (const Segment& s : module->segments) {
    if (file_offset >= s.offset && file_offset - s.offset < s.size) {
      module_address = file_offset - s.offset + s.vaddr;
      in_segment = true;
      break;
    }
  }
  if (module->mod != nullptr && !in_segment) {
    // Mapped from the file but outside its loadable segments: nothing to look up.
    module_address = file_offset;
  }
  // Readable modules are keyed by module address, the others by file offset.
  const std::uint64_t key = (module->mod != nullptr && in_segment) ? module_address : file_offset;
  auto it = module->cache.find(key);
  if (it != module->cache.end()) {
    ++stats.cache_hits;
    return *it->second;
  }
  const Location* loc;
  if (module->mod != nullptr && in_segment) {
    loc = &resolve(*module, module_address, file_offset);
  } else {
    Location& unknown = locations.emplace_back();
    unknown.module = module->path;
    unknown.build_id = module->build_id;
    unknown.offset = file_offset;
    loc = &unknown;
  }
  module->cache.emplace(key, loc);
  return *loc;
}

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;
Symbolizer::Symbolizer(Symbolizer&& other) noexcept = default;
Symbolizer& Symbolizer::operator=(Symbolizer&& other) noexcept = default;

void Symbolizer::set_known(const Profile& profile, const std::vector<KnownLocation>& known) {
  auto& table = impl_->known[&profile];
  for (const KnownLocation& k : known) {
    Location& loc = impl_->locations.emplace_back();
    loc.module = impl_->strings.intern(k.module);
    loc.build_id = impl_->strings.intern(k.build_id);
    loc.offset = k.offset;
    for (const KnownFrame& f : k.frames) {
      SourceFrame frame;
      frame.function = impl_->strings.intern(f.function);
      frame.file = impl_->strings.intern(f.file);
      frame.line = f.line;
      frame.inlined = f.inlined;
      loc.frames.push_back(frame);
    }
    table[k.address] = &loc;
  }
}

const Location& Symbolizer::symbolize(const Profile& profile, std::uint64_t address, AddressKind kind) {
  if (kind == AddressKind::return_address && address > 0) --address;
  if (auto k = impl_->known.find(&profile); k != impl_->known.end()) {
    if (auto hit = k->second.find(address); hit != k->second.end()) return *hit->second;
  }
  const Mapping* mapping = profile.find_mapping(address);
  Module* module = mapping != nullptr ? impl_->module_for(*mapping) : nullptr;
  const bool stale = module != nullptr && impl_->stale(*mapping, *module);
  return impl_->locate(mapping, module, stale, address);
}

void Symbolizer::for_each_stack(
    const Profile& profile,
    const std::function<void(std::size_t index, const std::vector<const Location*>& locations)>& visit) {
  // Per call: mapping index -> module, and looked-up address -> Location, so
  // that the many repeats of an address within one profile cost one lookup.
  std::vector<Module*> modules(profile.mappings.size(), nullptr);
  std::vector<bool> resolved(profile.mappings.size(), false);
  std::vector<bool> stale(profile.mappings.size(), false);
  std::unordered_map<std::uint64_t, const Location*> seen;
  seen.reserve(profile.stacks.size() + 64);
  // A profile read through its sidecar: its addresses mean what they meant then.
  if (auto k = impl_->known.find(&profile); k != impl_->known.end()) seen = k->second;
  std::vector<const Location*> locations;
  for (std::size_t index = 0; index < profile.stacks.size(); ++index) {
    const StackRecord& record = profile.stacks[index];
    locations.clear();
    for (std::size_t i = 0; i < record.frames.size(); ++i) {
      std::uint64_t address = record.frames[i];
      if (i > 0 && address > 0) --address;
      auto it = seen.find(address);
      if (it != seen.end()) {
        locations.push_back(it->second);
        continue;
      }
      const Mapping* mapping = profile.find_mapping(address);
      Module* module = nullptr;
      bool mismatched = false;
      if (mapping != nullptr) {
        const auto m = static_cast<std::size_t>(mapping - profile.mappings.data());
        if (!resolved[m]) {
          modules[m] = impl_->module_for(*mapping);
          stale[m] = modules[m] != nullptr && impl_->stale(*mapping, *modules[m]);
          resolved[m] = true;
        }
        module = modules[m];
        mismatched = stale[m];
      }
      const Location* loc = &impl_->locate(mapping, module, mismatched, address);
      seen.emplace(address, loc);
      locations.push_back(loc);
    }
    visit(index, locations);
  }
}

std::vector<const Location*> Symbolizer::symbolize_all(const Profile& profile) {
  std::size_t total = 0;
  for (const auto& record : profile.stacks) total += record.frames.size();
  std::vector<const Location*> out;
  out.reserve(total);
  for_each_stack(profile, [&](std::size_t, const std::vector<const Location*>& locations) {
    out.insert(out.end(), locations.begin(), locations.end());
  });
  return out;
}

FrameName Symbolizer::frame_name(std::string_view text) {
  auto it = impl_->frame_names.find(text);
  if (it != impl_->frame_names.end()) return it->second;
  FrameName name{text};
  // The key views the FrameName's own text, which never moves.
  impl_->frame_names.emplace(name.view(), name);
  return name;
}

std::vector<const Location*> Symbolizer::symbolize_stack(const Profile& profile, const StackRecord& record) {
  std::vector<const Location*> out;
  out.reserve(record.frames.size());
  for (std::size_t i = 0; i < record.frames.size(); ++i) {
    out.push_back(&symbolize(profile, record.frames[i], i == 0 ? AddressKind::exact : AddressKind::return_address));
  }
  return out;
}

SymbolizerStats Symbolizer::stats() const noexcept { return impl_->stats; }

std::size_t Symbolizer::modules_loaded() const noexcept { return impl_->stats.modules_loaded; }

}  // namespace heapgate
