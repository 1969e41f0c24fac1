// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "test_support.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
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

}  // namespace heapgate::testing
