// SPDX-License-Identifier: MIT
// Symbolizer: a heap profile's raw addresses to module, function, file and line, offline, through
// the files in the profile's own mappings; SourceFrame, Location, AddressKind, SymbolizerStats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "heapgate/frame_name.h"
#include "heapgate/profile.h"

namespace heapgate {

/// One function-level frame at an address: the function whose code it is, or
/// one of the functions inlined there.
///
/// The string views point into storage owned by the Symbolizer that made the
/// frame and stay valid until that Symbolizer is destroyed. Equal names are
/// interned once, so equal strings usually share one pointer (do not rely on it).
struct SourceFrame {
  /// Qualified function name with parameter types, as the C++ demangler spells
  /// it ("ns::parse(std::__cxx11::basic_string<...> const&)"), or the plain
  /// name for C functions and `main`; never empty. Return types of template
  /// functions and GCC clone suffixes (" [clone .cold]") are left out, so every
  /// part and copy of a function gets one name. Functions without a linkage
  /// name in DWARF (internal linkage: anonymous namespaces, lambdas) are
  /// spelled from their DWARF scopes the same way; closure types read
  /// "{lambda(int)}" (no "#N": DWARF does not record it).
  std::string_view function;
  /// Source file as recorded in the debug info (usually absolute); empty when
  /// only a symbol table was available.
  std::string_view file;
  /// 1-based source line; 0 when unknown.
  std::uint32_t line = 0;
  /// True when this function was inlined into the next (outer) frame of the
  /// same Location; false for the last frame, the function the code lives in.
  bool inlined = false;
};

/// What one address of a profile points at.
///
/// Owned by the Symbolizer (see SourceFrame for the lifetime of the views).
struct Location {
  /// The mapped file, as the profile's MAPPED_LIBRARIES section names it but
  /// without the kernel's " (deleted)" suffix; a pseudo name such as "[vdso]";
  /// or empty when the address lies in no mapping or in anonymous memory.
  std::string_view module;
  /// The module's GNU build-id in lowercase hex (the file as read from disk);
  /// empty when the file could not be read or has no build-id.
  std::string_view build_id;
  /// The address `addr2line -e <module>` takes for the looked-up address: the
  /// link-time virtual address inside the module (the offset from the load base
  /// for PIE executables and shared libraries; the absolute address for non-PIE
  /// `ET_EXEC` executables). When the module could not be read it is the file
  /// offset instead, and when there is no module it is the address itself.
  /// For a return address this is of `address - 1` (see AddressKind).
  std::uint64_t offset = 0;
  /// Functions at the address, innermost first: inlined functions (`inlined`
  /// set), then the function the code belongs to. Empty when the function is
  /// unknown (no file, no debug info and no symbol covering the address).
  std::vector<SourceFrame> frames;

  /// True when at least the function is known.
  bool known() const { return !frames.empty(); }
};

/// How an address of a backtrace is looked up.
enum class AddressKind {
  /// The address itself.
  exact,
  /// A return address: `address - 1` is looked up, so that file and line are
  /// those of the call instruction rather than of the one after it.
  return_address,
};

/// Counters of what a Symbolizer has done, for tests and benchmarks.
struct SymbolizerStats {
  /// Distinct modules (same path, device and inode) seen, readable or not.
  std::size_t modules_seen = 0;
  /// Modules whose ELF file was opened and reported to libdw (once each).
  std::size_t modules_loaded = 0;
  /// Distinct module addresses resolved through debug info or symbol tables.
  std::size_t addresses_resolved = 0;
  /// Lookups answered by a module's address cache without touching libdw.
  std::size_t cache_hits = 0;
  /// Code mappings (counted once per symbolize() call or per profile) that
  /// match no loadable segment of the file now on disk: rebuilt since.
  std::size_t mappings_mismatched = 0;
};

/// Turns the raw addresses of heap profiles into modules, functions, files and
/// lines, offline: through the files listed in each profile's own
/// MAPPED_LIBRARIES section, never through the running process, so it works
/// on a saved profile as long as the binaries it names still exist.
///
/// For each address: the mapping that contains it gives the module, the file
/// offset and, through the ELF program headers, the module address; elfutils'
/// libdw then gives the function, file and line and the chain of inlined
/// functions (DWARF), or the function alone from the ELF symbol table.
/// Separate debug info is found the way elfutils finds it (build-id and
/// debuglink under /usr/lib/debug, and debuginfod when DEBUGINFOD_URLS is set).
///
/// A module is opened once per Symbolizer, the first time a profile maps it,
/// and kept open; it is identified by path, device and inode, so the profiles
/// of several processes of one build (each at its own ASLR load address)
/// share it and its cache of resolved addresses. Reuse one Symbolizer for all
/// profiles of a run.
///
/// Never fails as a whole: a file that is missing, deleted (" (deleted)" in
/// the profile: the path now names another file, or none), replaced (its inode
/// differs from the profile's), rebuilt in place (linkers keep the inode; the
/// profile's code mapping then matches none of the file's loadable segments in
/// offset and page count) or not ELF gives Locations with the module and file
/// offset but no frames; so does an address outside every mapping. A rebuild
/// that changes no segment's offset or page count cannot be detected: heap
/// profiles record no build-ids, so symbolize a profile before rebuilding.
///
/// Not thread-safe: use one Symbolizer per thread, or lock around it. Movable,
/// not copyable; moving keeps every Location valid (a moved-from Symbolizer
/// may only be destroyed or assigned to).
class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(Symbolizer&& other) noexcept;
  Symbolizer& operator=(Symbolizer&& other) noexcept;
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  /// Symbolizes one address of `profile` (looked up as `kind` says). The
  /// result lives as long as this Symbolizer. Cost: a map lookup when the
  /// module address was seen before (in any profile), else one libdw query.
  const Location& symbolize(const Profile& profile, std::uint64_t address,
                            AddressKind kind = AddressKind::return_address);

  /// Symbolizes every frame of every record of `profile`, in order: the result
  /// holds `profile.stacks[0].frames.size()` entries for the first record, then
  /// those of the second, and so on. As jeprof does, the first frame of each
  /// record is looked up as AddressKind::exact and the others as
  /// AddressKind::return_address. The pointers are never null and live as long
  /// as this Symbolizer. The fast path for whole profiles: each mapping is
  /// resolved to its module once per call.
  std::vector<const Location*> symbolize_all(const Profile& profile);

  /// The frames of one record of `profile`, innermost first, looked up as in
  /// symbolize_all().
  std::vector<const Location*> symbolize_stack(const Profile& profile, const StackRecord& record);

  /// Calls `visit(index, locations)` for each record of `profile` in order,
  /// with the record's index in `profile.stacks` and the Locations of its
  /// frames (looked up as in symbolize_all()). `locations` is a buffer reused
  /// between calls: copy what must outlive the call. Same cost as
  /// symbolize_all() without holding every frame's Location at once.
  void for_each_stack(
      const Profile& profile,
      const std::function<void(std::size_t index, const std::vector<const Location*>& locations)>& visit);

  /// What an address of `profile` is known to mean without reading the
  /// module (a profile's symbols sidecar, symbols_sidecar.h).
  struct KnownFrame {
    std::string function;
    std::string file;
    std::uint32_t line = 0;
    bool inlined = false;
  };
  struct KnownLocation {
    /// The looked-up address (a return address already less one).
    std::uint64_t address = 0;
    std::string module;
    std::string build_id;
    std::uint64_t offset = 0;
    std::vector<KnownFrame> frames;
  };
  /// From now on, symbolizing `profile` (this object, by address) answers
  /// these addresses from `known` instead of from the modules on disk.
  void set_known(const Profile& profile, const std::vector<KnownLocation>& known);

  /// The shared FrameName for `text`: every call with equal text returns a copy
  /// of one FrameName, so stacks normalized through one Symbolizer share their
  /// strings (and compare by pointer). Grows with the distinct texts seen.
  FrameName frame_name(std::string_view text);

  /// What this Symbolizer has done so far.
  SymbolizerStats stats() const noexcept;
  /// Shorthand for `stats().modules_loaded`: ELF files opened so far.
  std::size_t modules_loaded() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapgate
