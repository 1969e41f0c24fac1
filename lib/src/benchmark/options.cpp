// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// --heapgate_* flags of benchmark binaries, their HEAPGATE_* environment
// twins, and the one re-exec that gives jemalloc what `exact` needs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/benchmark.h"
#include "sys/sys.h"

namespace heapgate::bench {
namespace {

constexpr std::string_view kFlagPrefix = "--heapgate_";
// Set across the restart. A separate name from the gtest plugin's marker, and
// cleared after start-up, so benchmark binaries started by a restarted process
// (or by each other) still restart themselves when they need to.
constexpr const char* kReexecMarker = "HEAPGATE_BENCHMARK_REEXECUTED";

Error bad_value(const std::string& where, std::string_view value, const std::string& expected) {
  return make_error(ErrorCode::invalid_argument, where, "bad value \"" + std::string(value) + "\"",
                    "expected " + expected);
}

Result<void> apply(Options& options, std::string_view name, const std::string& where, std::string_view value) {
  if (name == "mode") {
    auto mode = parse_mode(value);
    if (!mode || *mode == Mode::sampled) return fail(bad_value(where, value, "one of off, counters, exact"));
    options.mode = *mode;
  } else if (name == "profiles") {
    options.profiles_dir = std::string(value);
  } else if (value.empty() || value == "1" || value == "true" || value == "yes") {
    options.strict = true;
  } else if (value == "0" || value == "false" || value == "no") {
    options.strict = false;
  } else {
    return fail(bad_value(where, value, "true or false"));
  }
  return {};
}

// True when `mode` is unusable only because of how jemalloc was started.
bool fixable_by_restart(Mode mode) {
  const AllocatorStatus& s = allocator_status();
  if (!s.jemalloc_active || !s.config_prof || s.profiling_started_externally) return false;
  return !s.check(mode);
}

}  // namespace

Result<Options> parse_options(int* argc, char** argv) {
  Options options;
  // The environment first, so flags override it.
  for (const char* name : {"mode", "profiles", "strict"}) {
    std::string variable = "HEAPGATE_" + std::string(name);
    for (char& c : variable) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    if (const char* value = std::getenv(variable.c_str()); value != nullptr) {
      if (auto applied = apply(options, name, variable, value); !applied) return fail(applied.error());
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
    const std::string where = std::string(kFlagPrefix) + std::string(name);
    if (name != "mode" && name != "profiles" && name != "strict") {
      return fail(make_error(ErrorCode::invalid_argument, std::string(arg), "unknown heapgate flag",
                             "use --heapgate_mode=off|counters|exact, --heapgate_profiles=DIR or --heapgate_strict"));
    }
    if (eq == std::string_view::npos && name != "strict") {
      return fail(make_error(ErrorCode::invalid_argument, where, "missing value", "write " + where + "=VALUE"));
    }
    std::string_view value = eq == std::string_view::npos ? std::string_view() : body.substr(eq + 1);
    if (auto applied = apply(options, name, where, value); !applied) return fail(applied.error());
  }
  argv[kept] = nullptr;
  *argc = kept;
  return options;
}

Options init(int* argc, char** argv) {
  std::vector<std::string> original(argv, argv + *argc);
  auto options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "heapgate: %s\n", options.error().message().c_str());
    std::exit(2);
  }
  const bool needs_profiling = options->mode == Mode::exact || !options->profiles_dir.empty();
  if (needs_profiling && fixable_by_restart(Mode::exact) && std::getenv(kReexecMarker) == nullptr) {
    auto restarted = sys::restart_with_malloc_conf(original, kExactMallocConf, kReexecMarker);
    // Still here: carry on; register_memory_manager() says what is missing.
    std::fprintf(stderr, "heapgate: %s\n", restarted.error().message().c_str());
  }
  ::unsetenv(kReexecMarker);
  if (auto registered = register_memory_manager(*options); !registered) {
    std::fprintf(stderr, "heapgate: allocations are not measured: %s\n", registered.error().message().c_str());
    if (options->strict) {
      std::fprintf(stderr, "heapgate: --heapgate_strict: stopping\n");
      std::exit(1);
    }
  }
  return *options;
}

}  // namespace heapgate::bench
