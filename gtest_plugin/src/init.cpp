// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Start-up: options, and the one re-exec that gives jemalloc the settings a
// profiling mode needs (jemalloc reads MALLOC_CONF only when it starts).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "heapgate/gtest.h"
#include "sys/sys.h"

namespace heapgate::gtest {
namespace {

constexpr const char* kReexecMarker = "HEAPGATE_REEXECUTED";

// True when `mode` is unusable only because of how jemalloc was started.
bool fixable_by_restart(Mode mode) {
  const AllocatorStatus& s = allocator_status();
  if (mode != Mode::exact && mode != Mode::sampled) return false;
  if (!s.jemalloc_active || !s.config_prof || s.profiling_started_externally) return false;
  return !s.check(mode);
}

}  // namespace

Options init(int* argc, char** argv) {
  std::vector<std::string> original(argv, argv + *argc);
  auto options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "heapgate: %s\n", options.error().message().c_str());
    std::exit(2);
  }
  if (fixable_by_restart(options->mode) && std::getenv(kReexecMarker) == nullptr) {
    auto exe = sys::self_exe_path();
    if (exe) {
      std::string conf;
      if (const char* user = std::getenv("MALLOC_CONF"); user != nullptr && *user != '\0') conf = std::string(user) + ",";
      // Later settings win in MALLOC_CONF, so heapgate's come last.
      conf += options->mode == Mode::exact ? kExactMallocConf : kSampledMallocConf;
      ::setenv("MALLOC_CONF", conf.c_str(), 1);
      ::setenv(kReexecMarker, "1", 1);
      std::vector<char*> args;
      for (auto& a : original) args.push_back(a.data());
      args.push_back(nullptr);
      std::fflush(nullptr);
      ::execv(exe->c_str(), args.data());
      // execv returned: carry on; the listener reports the mode as unavailable.
      std::fprintf(stderr, "heapgate: could not restart %s with profiling enabled\n", exe->c_str());
    }
  }
  return *options;
}

}  // namespace heapgate::gtest
