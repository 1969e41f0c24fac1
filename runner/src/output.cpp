// SPDX-License-Identifier: MIT
// emit(): a verb's output written atomically to a file, or to stdout; bad_input(): an Error
// printed on stderr with the usage exit status.
#include "output.h"

#include <cstdio>

#include "commands.h"
#include "heapgate/sys.h"

namespace heapgate::runner {

Result<void> emit(const std::string& path, const std::string& text) {
  if (!path.empty()) return sys::write_file_atomic(path, text);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    return fail(make_error(ErrorCode::io_error, "stdout", "write failed", "check the pipe or disk it goes to"));
  }
  return {};
}

int bad_input(const Error& error) {
  std::fprintf(stderr, "heapgate: %s\n", error.message().c_str());
  return exit_status(GateExit::usage);
}

}  // namespace heapgate::runner
