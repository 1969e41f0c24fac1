// SPDX-License-Identifier: MIT
// ProfileKeeper::keep(): moves a test's heap profiles and their symbols sidecars into the
// profiles directory (across file systems too), under unique names, and rewrites the paths.
#include "kept_profiles.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include "heapgate/symbols_sidecar.h"
#include "heapgate/sys.h"

namespace heapgate::harness {
namespace {

// Moves a file, across file systems too ($TMPDIR to a report directory).
bool move_file(const std::string& from, const std::string& to, std::string& why) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (!ec) return true;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    why = ec.message();
    return false;
  }
  std::filesystem::remove(from, ec);
  return true;
}

}  // namespace

std::string file_stem_of(const std::string& name) { return sys::file_name_part(name, "test"); }

bool ProfileKeeper::ready() {
  if (dir_.empty()) return false;
  if (made_) return true;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (!std::filesystem::is_directory(dir_, ec)) {
    std::fprintf(stderr,
                 "heapgate: %s: cannot create the directory for heap profiles; none is kept; fix: pass a "
                 "writable --heapgate_profiles=DIR\n",
                 dir_.c_str());
    dir_.clear();
    return false;
  }
  made_ = true;
  return true;
}

std::string ProfileKeeper::new_path(const std::string& stem) {
  for (int n = 1;; ++n) {
    std::string name = n == 1 ? stem + ".heap" : stem + "." + std::to_string(n) + ".heap";
    if (used_names_.insert(name).second) return dir_ + "/" + name;
  }
}

void ProfileKeeper::keep(TestRecord& record, const std::string& own_profile) {
  if (record.profiles.empty()) return;
  if (!ready()) {
    if (!own_profile.empty()) {
      ::unlink(own_profile.c_str());
      ::unlink(symbols_sidecar_path(own_profile).c_str());
    }
    record.profiles.clear();
    return;
  }
  std::vector<std::string> kept;
  for (const std::string& profile : record.profiles) {
    if (profile.rfind(dir_ + "/", 0) == 0) {
      kept.push_back(profile);  // written there in the first place
      continue;
    }
    std::string stem = std::filesystem::path(profile).filename().string();
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".heap") == 0) stem.resize(stem.size() - 5);
    const std::string to = new_path(stem);
    std::string why;
    if (!move_file(profile, to, why)) {
      std::fprintf(stderr, "heapgate: %s: cannot keep the heap profile of %s: %s\n", to.c_str(), record.name.c_str(),
                   why.c_str());
      continue;
    }
    std::error_code ec;
    if (std::filesystem::exists(symbols_sidecar_path(profile), ec)) {
      // Without its sidecar the kept profile reads until the binary is rebuilt,
      // then is refused with the fix (prepare_symbols()); said here, once.
      if (!move_file(symbols_sidecar_path(profile), symbols_sidecar_path(to), why)) {
        std::fprintf(stderr, "heapgate: %s: cannot keep the symbols of %s's heap profile: %s\n", to.c_str(),
                     record.name.c_str(), why.c_str());
      }
    }
    kept.push_back(to);
  }
  kept_ += kept.size();
  record.profiles = std::move(kept);
}

}  // namespace heapgate::harness
