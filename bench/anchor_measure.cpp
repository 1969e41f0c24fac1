// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Runs one command and records what scripts/bench_anchors.sh tabulates:
//   anchor_measure RESULT_FILE COMMAND [ARGS...]
// RESULT_FILE gets one line "WALL_S CPU_S PEAK_RSS_KIB EXIT_CODE". CPU time is
// user+system of the command and every descendant it waited for (heaptrack's
// recorder and interpreter, Valgrind's re-exec): wait4 reports those, and a
// loaded machine disturbs CPU time less than wall time. Peak RSS is the largest
// of the command and those descendants, not their sum. The command's own
// output is left alone. Exit: the command's exit code, 2 for bad usage, 127
// when it could not be started.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "heapgate/sys.h"

namespace {

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "heapgate: anchor_measure: expected RESULT_FILE COMMAND [ARGS...]; fix: "
                 "anchor_measure result.txt ./anchor_workload\n");
    return 2;
  }
  const std::string result_path = argv[1];
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "heapgate: anchor_measure: fork: %s; fix: free processes or memory\n", std::strerror(errno));
    return 127;
  }
  if (pid == 0) {
    ::execvp(argv[2], argv + 2);
    std::fprintf(stderr, "heapgate: anchor_measure: %s: %s; fix: check the command's path\n", argv[2],
                 std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  pid_t waited = -1;
  do {
    waited = ::wait4(pid, &status, 0, &usage);
  } while (waited < 0 && errno == EINTR);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A command killed by a signal reports 128+signal, as a shell does.
  const int code = waited != pid ? 127 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  char line[128];
  std::snprintf(line, sizeof line, "%.6f %.6f %ld %d\n", wall, seconds(usage.ru_utime) + seconds(usage.ru_stime),
                usage.ru_maxrss, code);  // ru_maxrss is in KiB on Linux
  if (auto written = heapgate::sys::write_file_atomic(result_path, line); !written) {
    std::fprintf(stderr, "%s\n", written.error().message().c_str());
    return 2;
  }
  return code;
}
