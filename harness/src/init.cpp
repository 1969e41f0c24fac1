// SPDX-License-Identifier: MIT
// Start-up: options, and the one re-exec that gives jemalloc the settings a
// profiling mode needs (jemalloc reads MALLOC_CONF only when it starts).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "heapgate/flags.h"
#include "heapgate/harness.h"

namespace heapgate::harness {

Options init(int* argc, char** argv) {
  std::vector<std::string> original(argv, argv + *argc);
  auto options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "heapgate: %s\n", options.error().message().c_str());
    std::exit(2);
  }
  detail::restart_once_for(options->mode, original);
  return *options;
}

}  // namespace heapgate::harness
