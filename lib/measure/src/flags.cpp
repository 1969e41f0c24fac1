// SPDX-License-Identifier: MIT
// parse_heapgate_flags() (heapgate/flags.h): `--heapgate_*` flags and HEAPGATE_* variables by a
// FlagSpec table, with bool and count parsers; restart_once_for() re-execs with MALLOC_CONF.
#include <cstdio>
#include "heapgate/flags.h"
#include "heapgate/malloc_conf.h"
#include "heapgate/sys.h"

#include <cstdlib>

namespace heapgate::detail {
namespace {

constexpr std::string_view kFlagPrefix = "--heapgate_";

std::string environment_name(std::string_view name) {
  std::string out = "HEAPGATE_";
  for (char c : name) out += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return out;
}

std::string known_flags(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const auto& spec : specs) {
    if (spec.name.substr(0, 9) == "internal_") continue;
    out += (out.empty() ? "" : ", ") + std::string(kFlagPrefix) + std::string(spec.name);
  }
  return out;
}

}  // namespace

Error bad_flag_value(const std::string& where, std::string_view value, const std::string& expected) {
  return make_error(ErrorCode::invalid_argument, where, "bad value \"" + std::string(value) + "\"",
                    "expected " + expected);
}

Result<bool> parse_flag_bool(const std::string& where, std::string_view value) {
  if (value.empty() || value == "1" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "no") return false;
  return fail(bad_flag_value(where, value, "true or false"));
}

Result<std::uint64_t> parse_flag_count(const std::string& where, std::string_view value) {
  std::uint64_t n = 0;
  if (value.empty() || value.size() > 9) return fail(bad_flag_value(where, value, "a count from 0 to 999999999"));
  for (char c : value) {
    if (c < '0' || c > '9') return fail(bad_flag_value(where, value, "a count from 0 to 999999999"));
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

Result<void> parse_heapgate_flags(int* argc, char** argv, const std::vector<FlagSpec>& specs) {
  for (const auto& spec : specs) {
    const std::string variable = environment_name(spec.name);
    if (const char* value = std::getenv(variable.c_str()); value != nullptr) {
      if (auto applied = spec.apply(variable, value); !applied) return applied;
    }
  }
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, kFlagPrefix.size()) != kFlagPrefix) {
      argv[kept++] = argv[i];
      continue;
    }
    std::string_view body = arg.substr(kFlagPrefix.size());
    std::size_t eq = body.find('=');
    std::string_view name = body.substr(0, eq);
    const FlagSpec* found = nullptr;
    for (const auto& spec : specs) {
      if (name == spec.name) found = &spec;
    }
    const std::string where = std::string(kFlagPrefix) + std::string(name);
    if (found == nullptr) {
      return fail(make_error(ErrorCode::invalid_argument, std::string(arg), "unknown heapgate flag",
                             "use one of " + known_flags(specs)));
    }
    if (eq == std::string_view::npos && !found->is_switch) {
      return fail(make_error(ErrorCode::invalid_argument, where, "missing value", "write " + where + "=VALUE"));
    }
    std::string_view value = eq == std::string_view::npos ? std::string_view() : body.substr(eq + 1);
    if (auto applied = found->apply(where, value); !applied) return applied;
  }
  argv[kept] = nullptr;
  *argc = kept;
  return {};
}

bool fixable_by_restart(Mode mode) {
  const AllocatorStatus& s = allocator_status();
  if (mode != Mode::exact && mode != Mode::sampled) return false;
  if (!s.jemalloc_active || !s.config_prof || s.profiling_started_externally) return false;
  return !s.check(mode);
}

void restart_once_for(Mode mode, const std::vector<std::string>& argv) {
  static constexpr const char* kReexecMarker = "HEAPGATE_REEXECUTED";
  if (!fixable_by_restart(mode) || std::getenv(kReexecMarker) != nullptr) return;
  const char* conf = mode == Mode::exact ? kExactMallocConf : kSampledMallocConf;
  auto restarted = sys::restart_with_malloc_conf(argv, conf, kReexecMarker);
  // Still here: carry on; the face reports the mode as unavailable.
  std::fprintf(stderr, "heapgate: %s\n", restarted.error().message().c_str());
}

}  // namespace heapgate::detail
