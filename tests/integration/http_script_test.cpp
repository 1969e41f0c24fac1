// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The Mesos memory-profiling page's curl/wget script, run unchanged against
// examples/http_service (HEAPGATE_HTTP_SERVICE and HEAPGATE_MESOS_SCRIPT).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "heapgate/jeprof.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate::testing {
namespace {

// The service as a child whose stdout we read; stopped with SIGTERM.
struct Service {
  pid_t pid = -1;
  std::string address;
  ~Service() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
};

TEST(HttpScript, MesosPageScriptDownloadsARawProfile) {
  for (const char* tool : {"curl", "wget", "bash"}) {
    if (!sys::find_program(tool)) GTEST_SKIP() << tool << " is not installed";
  }
  Service service;
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  service.pid = ::fork();
  ASSERT_GE(service.pid, 0);
  if (service.pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    ::setenv("HEAPGATE_MEMORY_PROFILING", "true", 1);
    ::setenv("HEAPGATE_HTTP", "127.0.0.1:0", 1);
    ::execl(HEAPGATE_HTTP_SERVICE, HEAPGATE_HTTP_SERVICE, "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  FILE* lines = ::fdopen(out[0], "r");
  ASSERT_NE(lines, nullptr);
  char line[256] = {};
  ASSERT_NE(std::fgets(line, sizeof line, lines), nullptr) << "the service printed nothing";
  std::fclose(lines);
  std::string first = line;
  const std::string prefix = "listening on ";
  ASSERT_EQ(first.rfind(prefix, 0), 0u) << first;
  service.address = first.substr(prefix.size(), first.find('\n') - prefix.size());

  std::string dir = make_temp_dir();
  sys::ProcessOptions options;
  options.extra_env = {"PROFILE_SECONDS=1", "HOST=" + service.address};
  options.timeout = std::chrono::seconds(30);
  // wget saves into the working directory: run the script from `dir`.
  auto ran = sys::run_process({"bash", "-c", "cd \"$0\" && exec bash \"$1\"", dir, HEAPGATE_MESOS_SCRIPT}, options);
  ASSERT_TRUE(ran) << ran.error().message();
  EXPECT_EQ(ran->exit_code, 0) << ran->stdout_text << ran->stderr_text;
  // curl printed /start's JSON.
  EXPECT_NE(ran->stdout_text.find("Successfully started new heap profiling run."), std::string::npos)
      << ran->stdout_text;
  EXPECT_NE(ran->stdout_text.find("\"remaining_seconds\":\"1\""), std::string::npos) << ran->stdout_text;

  auto raw = sys::read_file(dir + "/raw");
  ASSERT_TRUE(raw) << raw.error().message() << "\n" << ran->stderr_text;
  ASSERT_EQ(raw->rfind("heap_v2/1\n", 0), 0u) << raw->substr(0, 200);
  if (sys::find_program("jeprof")) {
    JeprofOptions jeprof;
    jeprof.binary = HEAPGATE_HTTP_SERVICE;
    jeprof.profile = dir + "/raw";
    auto text = run_jeprof(jeprof);
    ASSERT_TRUE(text) << text.error().message();
    EXPECT_NE(text->find("Total:"), std::string::npos) << *text;
    EXPECT_NE(text->find("handle_request"), std::string::npos) << *text;
  }
}

}  // namespace
}  // namespace heapgate::testing
