// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A suite whose middle test fails in the way HEAPGATE_FAULT names, for the
// fault table of docs/bad-inputs.md (tests/e2e/faults_test.cpp): `segv`,
// `abort`, `exit0`, `hang` (with two more threads blocked beside it), or
// `sleep` (a long test for a kill from outside), or `segv-beside-child` (a
// sharded run being recorded crashes while its call-sites child is in the
// same test: the child writes its pid to $FAULT_SUITE_DIR/child.pid and
// sleeps, the run waits for that file, then segfaults). Without it, every
// test passes.
// FAULT_SUITE_GROW makes Faults.First allocate more.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

// heapgate's re-run children carry --heapgate_internal_child=N on their
// command line (heapgate's init takes its flags out of argv, so it is read
// from /proc).
bool in_heapgate_child() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) {
    if (arg.rfind("--heapgate_internal_child", 0) == 0) return true;
  }
  return false;
}

void crash_while_the_child_sleeps() {
  const char* dir = std::getenv("FAULT_SUITE_DIR");
  const std::string pid_file = std::string(dir != nullptr ? dir : ".") + "/child.pid";
  if (in_heapgate_child()) {
    const std::string temp = pid_file + ".tmp";
    if (FILE* f = std::fopen(temp.c_str(), "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
      std::fclose(f);
      std::rename(temp.c_str(), pid_file.c_str());
    }
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return;
  }
  for (int i = 0; i < 600 && ::access(pid_file.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  volatile int* nowhere = nullptr;
  *nowhere = 1;
}

std::string fault() {
  const char* f = std::getenv("HEAPGATE_FAULT");
  return f != nullptr ? f : "";
}

__attribute__((noinline)) void wait_forever_for_a_reply() {
  static std::mutex m;
  static std::condition_variable never;
  std::unique_lock<std::mutex> lock(m);
  never.wait(lock, [] { return false; });
}

// FAULT_SUITE_GROW: one more allocation, a change for a baseline to accept.
TEST(Faults, First) {
  std::vector<int> v(100);
  if (std::getenv("FAULT_SUITE_GROW") != nullptr) v.reserve(1000);
  EXPECT_EQ(v.size(), 100u);
}
TEST(Faults, Second) {
  std::string s(300, 'x');
  EXPECT_EQ(s.size(), 300u);
}

TEST(Faults, Trigger) {
  std::vector<int> allocated(50);
  const std::string f = fault();
  if (f == "segv") {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  } else if (f == "abort") {
    std::abort();
  } else if (f == "exit0") {
    std::exit(0);
  } else if (f == "hang") {
    std::thread a(wait_forever_for_a_reply);
    std::thread b(wait_forever_for_a_reply);
    wait_forever_for_a_reply();
  } else if (f == "segv-beside-child") {
    crash_while_the_child_sleeps();
  } else if (f == "sleep") {
    std::this_thread::sleep_for(std::chrono::seconds(60));
  }
  EXPECT_EQ(allocated.size(), 50u);
}

TEST(Faults, Later) {
  std::vector<int> v(10);
  EXPECT_EQ(v.size(), 10u);
}

}  // namespace
