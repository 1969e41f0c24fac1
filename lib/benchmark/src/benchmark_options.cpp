// SPDX-License-Identifier: MIT
// --heapgate_* flags of benchmark binaries, their HEAPGATE_* environment
// twins, and the one re-exec that gives jemalloc what `exact` needs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/benchmark.h"
#include "heapgate/flags.h"
#include "heapgate/sys.h"

namespace heapgate::bench {
namespace {

// Set across the restart. A separate name from the gtest plugin's marker, and
// cleared after start-up, so benchmark binaries started by a restarted process
// (or by each other) still restart themselves when they need to.
constexpr const char* kReexecMarker = "HEAPGATE_BENCHMARK_REEXECUTED";

}  // namespace

Result<Options> parse_options(int* argc, char** argv) {
  Options o;
  const std::vector<detail::FlagSpec> specs = {
      {"mode", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto mode = parse_mode(v);
         if (!mode || *mode == Mode::sampled)
           return fail(detail::bad_flag_value(where, v, "one of off, counters, exact"));
         o.mode = *mode;
         return {};
       }},
      {"profiles", false,
       [&o](const std::string&, std::string_view v) -> Result<void> {
         o.profiles_dir = std::string(v);
         return {};
       }},
      {"strict", true,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto b = detail::parse_flag_bool(where, v);
         if (!b) return fail(b.error());
         o.strict = *b;
         return {};
       }},
  };
  if (auto parsed = detail::parse_heapgate_flags(argc, argv, specs); !parsed) return fail(parsed.error());
  return o;
}

Options init(int* argc, char** argv) {
  std::vector<std::string> original(argv, argv + *argc);
  auto options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "heapgate: %s\n", options.error().message().c_str());
    std::exit(2);
  }
  const bool needs_profiling = options->mode == Mode::exact || !options->profiles_dir.empty();
  if (needs_profiling) {
    // If that fails, register_memory_manager() says what is missing.
    detail::restart_once_for(Mode::exact, original);
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
