// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate accept`: not built yet.
#include "commands.h"

namespace heapgate::runner {

void add_accept_command(CLI::App& app, int& exit_code) {
  (void)app;
  (void)exit_code;
}

}  // namespace heapgate::runner
