// SPDX-License-Identifier: MIT
// Moves a base profile's frame addresses onto another process' layout (docs/design.md §5).
#include "heapgate/rebase.h"

#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "heapgate/build_id.h"
#include "heapgate/sys.h"

namespace heapgate {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

std::string file_path(const Mapping& m) {
  if (!m.deleted()) return m.path;
  return m.path.substr(0, m.path.size() - kDeletedSuffix.size());
}

std::string describe(const Mapping& m) { return "device " + m.device + " inode " + std::to_string(m.inode); }

// What one base mapping resolves to; computed once per mapping, not per frame.
struct Target {
  enum class Kind { unresolved, unmapped, file };
  Kind kind = Kind::unresolved;
  std::optional<std::size_t> module;       // index into RebaseResult::modules, once a frame moved
  std::string path;                        // for Kind::file
  std::vector<const Mapping*> candidates;  // current's mappings of the same file
};

class Rebaser {
 public:
  Rebaser(const Profile& base, const Profile& current) : base_(base), current_(current) {
    targets_.resize(base.mappings.size());
  }

  Result<RebaseResult> run() {
    result_.profile.sample_period = base_.sample_period;
    result_.profile.totals = base_.totals;
    result_.profile.threads = base_.threads;
    result_.profile.mappings = current_.mappings;
    result_.profile.maps_text = current_.maps_text;
    result_.profile.stacks.reserve(base_.stacks.size());
    for (const auto& record : base_.stacks) {
      StackRecord moved = record;
      bool any_unmapped = false;
      for (std::size_t i = 0; i < moved.frames.size(); ++i) {
        ++result_.total_frames;
        auto rebased = rebase_frame(moved.frames[i], /*caller=*/i > 0);
        if (!rebased) return fail(std::move(rebased.error()));
        if (*rebased) {
          moved.frames[i] = **rebased;
          ++result_.rebased_frames;
        } else {
          ++result_.unmapped_frames;
          any_unmapped = true;
        }
      }
      if (any_unmapped) ++result_.unmapped_stacks;
      result_.profile.stacks.push_back(std::move(moved));
    }
    for (auto& module : result_.modules) {
      auto id = detail::read_build_id(module.path);
      if (id) module.build_id = std::move(*id);
    }
    return std::move(result_);
  }

 private:
  // The frame's address in current's layout, nullopt when it cannot be moved.
  Result<std::optional<std::uint64_t>> rebase_frame(std::uint64_t address, bool caller) {
    if (address == 0) return std::optional<std::uint64_t>();
    // A caller frame is a return address, which may sit just past the end of
    // the mapping holding the call; jeprof looks these up at address - 1 too.
    const std::uint64_t lookup = caller ? address - 1 : address;
    const Mapping* from = base_.find_mapping(lookup);
    if (from == nullptr) return std::optional<std::uint64_t>();
    auto index = static_cast<std::size_t>(from - base_.mappings.data());
    auto target = resolve(index);
    if (!target) return fail(std::move(target.error()));
    if ((*target)->kind != Target::Kind::file) return std::optional<std::uint64_t>();

    const std::uint64_t file_offset = lookup - from->start + from->offset;
    const Mapping* to = find_in_current(**target, *from, file_offset);
    if (to == nullptr) {
      note_missing((*target)->path);
      return std::optional<std::uint64_t>();
    }
    Target& used = targets_[index];
    if (!used.module) used.module = module_index(used.path, *from);
    ++result_.modules[*used.module].frames;
    // Unsigned wrap-around is intended: the difference of two layouts may be "negative".
    return std::optional<std::uint64_t>(address - from->start + from->offset - to->offset + to->start);
  }

  // Classifies base mapping `index` and checks its file against current's.
  Result<const Target*> resolve(std::size_t index) {
    Target& target = targets_[index];
    if (target.kind != Target::Kind::unresolved) return &target;
    const Mapping& from = base_.mappings[index];
    target.kind = Target::Kind::unmapped;
    if (!from.file_backed()) return &target;
    target.path = file_path(from);
    for (const Mapping& m : current_.mappings) {
      if (!m.file_backed() || file_path(m) != target.path) continue;
      if (m.device != from.device || m.inode != from.inode) {
        return fail(make_error(ErrorCode::conflict, target.path,
                               "the two profiles come from different builds of " + target.path + " (base: " +
                                   describe(from) + ", current: " + describe(m) + "); expected the same file",
                               "use heapgate's symbolic diff, which compares function names"));
      }
      target.candidates.push_back(&m);
    }
    if (target.candidates.empty()) {
      note_missing(target.path);
      return &target;
    }
    target.kind = Target::Kind::file;
    return &target;
  }

  // The mapping of the same file in `current` that covers `file_offset`,
  // preferring one with the base mapping's permissions (the code, not a data copy).
  static const Mapping* find_in_current(const Target& target, const Mapping& from, std::uint64_t file_offset) {
    const Mapping* fallback = nullptr;
    for (const Mapping* m : target.candidates) {
      if (file_offset < m->offset || file_offset - m->offset >= m->end - m->start) continue;
      if (m->permissions == from.permissions) return m;
      if (fallback == nullptr) fallback = m;
    }
    return fallback;
  }

  std::size_t module_index(const std::string& path, const Mapping& from) {
    for (std::size_t i = 0; i < result_.modules.size(); ++i) {
      if (result_.modules[i].path == path) return i;
    }
    RebasedModule module;
    module.path = path;
    module.device = from.device;
    module.inode = from.inode;
    result_.modules.push_back(std::move(module));
    return result_.modules.size() - 1;
  }

  void note_missing(const std::string& path) {
    for (const auto& p : result_.missing_modules) {
      if (p == path) return;
    }
    result_.missing_modules.push_back(path);
  }

  const Profile& base_;
  const Profile& current_;
  std::vector<Target> targets_;
  RebaseResult result_;
};

// Removes a private temporary directory on scope exit.
struct TempDir {
  std::string path;
  TempDir() = default;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);  // best effort: a leftover file in $TMPDIR is not an error
  }
};

}  // namespace

Result<RebaseResult> rebase_profile(const Profile& base, const Profile& current) {
  for (const auto& [which, profile] : {std::pair<const char*, const Profile*>{"base", &base}, {"current", &current}}) {
    if (profile->mappings.empty()) {
      return fail(make_error(ErrorCode::invalid_argument, which,
                             std::string("the ") + which +
                                 " profile has no MAPPED_LIBRARIES section; expected one to map addresses to files",
                             "use a profile written by jemalloc's prof.dump, which appends /proc/PID/maps"));
    }
    // find_mapping's binary search needs what parse_profile guarantees; a hand-built Profile may not.
    for (std::size_t i = 1; i < profile->mappings.size(); ++i) {
      if (profile->mappings[i - 1].end > profile->mappings[i].start) {
        return fail(make_error(ErrorCode::invalid_argument, which,
                               std::string("the ") + which + " profile's mapping " + std::to_string(i) +
                                   " is out of order or overlaps the one before; expected ascending, disjoint "
                                   "mappings as /proc/PID/maps lists them"));
      }
    }
  }
  try {
    return Rebaser(base, current).run();
  } catch (const std::exception& e) {
    // Only allocation failures can throw here; they must not cross the API.
    return fail(make_error(ErrorCode::internal, "rebase", std::string("rebasing failed: ") + e.what()));
  }
}

Result<std::string> run_jeprof_rebased(const JeprofOptions& options) {
  if (!options.base) {
    return fail(make_error(ErrorCode::invalid_argument, "base", "no base profile given; expected a path to rebase",
                           "set JeprofOptions::base, or call run_jeprof without a base"));
  }
  auto base = read_profile(*options.base);
  if (!base) return fail(std::move(base.error()));
  auto current = read_profile(options.profile);
  if (!current) return fail(std::move(current.error()));
  auto rebased = rebase_profile(*base, *current);
  if (!rebased) return fail(std::move(rebased.error()));

  TempDir dir;
  auto made = sys::make_private_dir("heapgate-rebase-");
  if (!made) return fail(std::move(made.error()));
  dir.path = std::move(*made);
  std::string base_path = dir.path + "/base.rebased.heap";
  auto written = sys::write_file_atomic(base_path, write_profile(rebased->profile));
  if (!written) return fail(std::move(written.error()));

  JeprofOptions run = options;
  run.base = base_path;
  return run_jeprof(run);
}

Result<std::string> run_jeprof_base_rebased(const std::string& binary, const std::string& base_path,
                                            const std::string& current_path, JeprofFormat format,
                                            const std::vector<std::string>& extra_args) {
  JeprofOptions options;
  options.binary = binary;
  options.profile = current_path;
  options.base = base_path;
  options.format = format;
  options.extra_args = extra_args;
  return run_jeprof_rebased(options);
}

}  // namespace heapgate
