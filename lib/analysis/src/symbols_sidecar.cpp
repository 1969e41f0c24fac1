// SPDX-License-Identifier: MIT
// The `<profile>.symbols.json` sidecar (heapgate/symbols_sidecar.h): write_symbols_sidecar(),
// load_symbols_sidecar(), rebuilt_modules(), and prepare_symbols() that refuses a stale read.
#include "heapgate/symbols_sidecar.h"

#include <sys/stat.h>

#include <set>

#include <nlohmann/json.hpp>

#include "heapgate/sys.h"

namespace heapgate {
namespace {

using json = nlohmann::json;

Error sidecar_error(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::parse_error, path, what,
                    "delete the damaged sidecar; the profile is then read against the modules on disk");
}

}  // namespace

std::string symbols_sidecar_path(const std::string& profile_path) { return profile_path + ".symbols.json"; }

Result<void> write_symbols_sidecar(const std::string& profile_path, const Profile& profile, Symbolizer& symbolizer) {
  json locations = json::array();
  std::set<std::uint64_t> written;
  symbolizer.for_each_stack(profile, [&](std::size_t index, const std::vector<const Location*>& found) {
    const StackRecord& record = profile.stacks[index];
    for (std::size_t i = 0; i < record.frames.size() && i < found.size(); ++i) {
      // The looked-up address, as for_each_stack computes it.
      std::uint64_t address = record.frames[i];
      if (i > 0 && address > 0) --address;
      if (!written.insert(address).second) continue;
      const Location& loc = *found[i];
      json frames = json::array();
      for (const SourceFrame& f : loc.frames) {
        frames.push_back(json{{"function", std::string(f.function)},
                              {"file", std::string(f.file)},
                              {"line", f.line},
                              {"inlined", f.inlined}});
      }
      locations.push_back(json{{"address", address},
                               {"module", std::string(loc.module)},
                               {"build_id", std::string(loc.build_id)},
                               {"offset", loc.offset},
                               {"frames", std::move(frames)}});
    }
  });
  json doc = json{{"schema", kSymbolsSchema}, {"locations", std::move(locations)}};
  return sys::write_file_atomic(symbols_sidecar_path(profile_path),
                                doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
                                sys::Durability::process_crash);
}

Result<bool> load_symbols_sidecar(const std::string& profile_path, const Profile& profile, Symbolizer& symbolizer) {
  const std::string path = symbols_sidecar_path(profile_path);
  if (!sys::exists(path)) return false;
  auto text = sys::read_file(path);
  if (!text) return fail(text.error());
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return fail(sidecar_error(path, "not JSON"));
  if (!doc.contains("schema") || doc["schema"] != kSymbolsSchema) {
    return fail(sidecar_error(path, std::string("expected schema ") + kSymbolsSchema));
  }
  std::vector<Symbolizer::KnownLocation> known;
  try {
    for (const json& l : doc.at("locations")) {
      Symbolizer::KnownLocation k;
      k.address = l.at("address").get<std::uint64_t>();
      k.module = l.at("module").get<std::string>();
      k.build_id = l.at("build_id").get<std::string>();
      k.offset = l.at("offset").get<std::uint64_t>();
      for (const json& f : l.at("frames")) {
        k.frames.push_back(Symbolizer::KnownFrame{f.at("function").get<std::string>(), f.at("file").get<std::string>(),
                                                  f.at("line").get<std::uint32_t>(), f.at("inlined").get<bool>()});
      }
      known.push_back(std::move(k));
    }
  } catch (const json::exception& e) {
    return fail(sidecar_error(path, std::string("wrong shape: ") + e.what()));
  }
  symbolizer.set_known(profile, known);
  return true;
}

std::vector<std::string> rebuilt_modules(const std::string& profile_path, const Profile& profile) {
  struct stat written {};
  if (::stat(profile_path.c_str(), &written) != 0) return {};
  std::set<std::string> out;
  for (const Mapping& m : profile.mappings) {
    if (!m.file_backed() || m.deleted() || !m.executable()) continue;
    struct stat now {};
    if (::stat(m.path.c_str(), &now) != 0 || !S_ISREG(now.st_mode)) continue;  // nothing to misread it with
    // Modified after the profile was written. (The inode alone does not tell:
    // a file system may give the rebuilt file the inode the old one freed.)
    if (now.st_mtim.tv_sec < written.st_mtim.tv_sec ||
        (now.st_mtim.tv_sec == written.st_mtim.tv_sec && now.st_mtim.tv_nsec <= written.st_mtim.tv_nsec)) {
      continue;  // another machine's file, older than the profile: not a rebuild of it
    }
    out.insert(m.path);
  }
  return {out.begin(), out.end()};
}

Result<void> prepare_symbols(const std::string& profile_path, const Profile& profile, Symbolizer& symbolizer) {
  auto loaded = load_symbols_sidecar(profile_path, profile, symbolizer);
  if (!loaded) return fail(loaded.error());
  if (*loaded) return {};
  const std::vector<std::string> rebuilt = rebuilt_modules(profile_path, profile);
  if (rebuilt.empty()) return {};
  return fail(make_error(ErrorCode::conflict, profile_path,
                         rebuilt.front() + " was rebuilt after this profile was written, and the profile has no " +
                             "symbols sidecar (" + symbols_sidecar_path(profile_path) +
                             "): its stacks would be read against the new code",
                         "diff profiles that heapgate kept (it writes the sidecar), or restore the binary the "
                         "profile was taken from at its path"));
}

}  // namespace heapgate
