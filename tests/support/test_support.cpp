// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "test_support.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "heapgate/allocator.h"

namespace heapgate::testing {
namespace {

std::vector<std::string>& temp_dirs() {
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

void remove_temp_dirs() {
  if (std::getenv("HEAPGATE_KEEP_TEST_FILES") != nullptr) return;
  for (const auto& d : temp_dirs()) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
}

}  // namespace

std::string mode_unavailable_reason(Mode mode) {
  auto ok = allocator_status().check(mode);
  return ok ? std::string() : ok.error().message();
}

bool profiling_required() {
  const char* v = std::getenv("HEAPGATE_REQUIRE_PROFILING");
  return v != nullptr && std::string(v) == "1";
}

std::string make_temp_dir() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(remove_temp_dirs); });
  const char* t = std::getenv("TMPDIR");
  std::string tmpl = std::string(t != nullptr && *t != '\0' ? t : "/tmp") + "/heapgate-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp(" << tmpl << ") failed";
    return "/tmp";
  }
  temp_dirs().emplace_back(buf.data());
  return buf.data();
}

std::string data_path(const std::string& relative) { return std::string(HEAPGATE_TEST_DATA_DIR) + "/" + relative; }

std::string helper_binary(const std::string& name) { return std::string(HEAPGATE_TEST_BINARY_DIR) + "/" + name; }

std::vector<std::string> suite_unset_env() {
  return {"MALLOC_CONF",       "LD_PRELOAD",    "GTEST_TOTAL_SHARDS",
          "GTEST_SHARD_INDEX", "HEAPGATE_MODE", "HEAPGATE_REEXECUTED"};
}

sys::ProcessResult gate_suite(const std::string& cli, const std::string& suite, const std::string& baselines,
                              const std::string& report, std::vector<std::string> env) {
  const std::vector<std::string> args{cli,           "run",     "--progress",        "none", "--strict",
                                      "--baselines", baselines, "--report",          report, "--jobs",
                                      "2",           "--",      helper_binary(suite)};
  sys::ProcessOptions options;
  options.unset_env = suite_unset_env();
  options.extra_env = std::move(env);
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
  return ran ? *ran : sys::ProcessResult{};
}

bool process_ends_within(int pid, double seconds) {
  auto ended = [pid] {
    if (::kill(pid, 0) != 0) return true;
    auto stat = sys::read_file("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    const std::size_t paren = stat->rfind(')');
    return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!ended()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void expect_refused(const sys::ProcessResult& r, int code, std::string line) {
  EXPECT_FALSE(r.timed_out);
  if (std::getenv("BAD_INPUTS_CAPTURE") != nullptr) {
    std::cout << "CAPTURE " << ::testing::UnitTest::GetInstance()->current_test_info()->name() << " exit "
              << r.exit_code << "\n"
              << r.stderr_text << "ENDCAPTURE\n";
  }
  EXPECT_EQ(r.exit_code, code) << r.stderr_text;
  const bool prefix = line.size() > 3 && line.compare(line.size() - 3, 3, "...") == 0;
  if (prefix) line.erase(line.size() - 3);
  const std::size_t at = r.stderr_text.find(line);
  ASSERT_NE(at, std::string::npos) << "stderr:\n" << r.stderr_text;
  EXPECT_TRUE(at == 0 || r.stderr_text[at - 1] == '\n') << r.stderr_text;
  if (!prefix) {
    EXPECT_TRUE(at + line.size() == r.stderr_text.size() || r.stderr_text[at + line.size()] == '\n') << r.stderr_text;
  }
}

const TestRecord* find_record(const Report& report, const std::string& name) {
  for (const TestRecord& record : report.tests) {
    if (record.name == name) return &record;
  }
  return nullptr;
}

}  // namespace heapgate::testing
