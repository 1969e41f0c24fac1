// SPDX-License-Identifier: MIT
// The runner's jobs (run_targets.h): environment_for() a mode (jemalloc preload, MALLOC_CONF),
// count_tests() via --gtest_list_tests, and ctest_binaries() of a ctest build directory.
#include "run_targets.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

#include "binary_inspect.h"
#include "heapgate/allocator.h"
#include "heapgate/sys.h"

namespace heapgate::runner {

namespace fs = std::filesystem;

Result<std::vector<std::string>> environment_for(const std::string& path, const std::string& mode) {
  std::vector<std::string> env;
  if (mode == "off") return env;
  auto linkage = jemalloc_linkage(path);
  if (!linkage) return fail(linkage.error());
  if (*linkage == JemallocLinkage::absent) {
    auto jemalloc = find_system_jemalloc();
    if (!jemalloc) {
      return fail(make_error(ErrorCode::unavailable, path,
                             "is not linked with jemalloc and no libjemalloc.so.2 was found to preload",
                             "apt-get install libjemalloc2, or set HEAPGATE_JEMALLOC=/path/to/libjemalloc.so.2"));
    }
    std::string preload = *jemalloc;
    if (const char* existing = std::getenv("LD_PRELOAD"); existing != nullptr && *existing != '\0') {
      preload += std::string(":") + existing;
    }
    env.push_back("LD_PRELOAD=" + preload);
  }
  if (mode == "exact" || mode == "sampled") {
    std::string conf;
    if (const char* user = std::getenv("MALLOC_CONF"); user != nullptr && *user != '\0') conf = std::string(user) + ",";
    conf += mode == "exact" ? kExactMallocConf : kSampledMallocConf;
    env.push_back("MALLOC_CONF=" + conf);
  }
  return env;
}

namespace {

// Catch2: one name a line (--list-test-names-only exits with the count, not 0).
// doctest: its listing ends "[doctest] unskipped test cases passing the
// current filters: N".
Result<std::size_t> count_other_framework_tests(const Job& job) {
  const bool catch2 = job.framework == TestFramework::catch2;
  std::vector<std::string> argv{job.path, catch2 ? "--list-test-names-only" : "--list-test-cases"};
  argv.insert(argv.end(), job.args.begin(), job.args.end());
  sys::ProcessOptions options;
  options.extra_env = job.env;
  options.timeout = std::chrono::minutes(2);
  auto listed = sys::run_process(argv, options);
  if (!listed) return fail(listed.error());
  const std::string& text = listed->stdout_text;
  if (catch2) {
    std::size_t count = 0;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) ++count;
      start = end + 1;
    }
    return count;
  }
  constexpr std::string_view kTotal = "passing the current filters: ";
  const std::size_t at = text.rfind(kTotal);
  if (listed->exit_code != 0 || at == std::string::npos) {
    return fail(make_error(ErrorCode::io_error, job.path,
                           "--list-test-cases failed (exit " + std::to_string(listed->exit_code) + ")",
                           "run the binary by hand to see why; is it a doctest binary?"));
  }
  return static_cast<std::size_t>(std::strtoull(text.c_str() + at + kTotal.size(), nullptr, 10));
}

}  // namespace

Result<std::size_t> count_tests(const Job& job) {
  if (job.framework != TestFramework::googletest) return count_other_framework_tests(job);
  std::vector<std::string> argv{job.path, "--gtest_list_tests"};
  for (const auto& arg : job.args) {
    if (arg.rfind("--gtest_filter", 0) == 0 || arg.rfind("--gtest_also_run_disabled_tests", 0) == 0)
      argv.push_back(arg);
  }
  sys::ProcessOptions options;
  options.extra_env = job.env;
  options.timeout = std::chrono::minutes(2);
  auto listed = sys::run_process(argv, options);
  if (!listed) return fail(listed.error());
  if (listed->exit_code != 0) {
    std::string why = listed->stderr_text.substr(0, listed->stderr_text.find('\n'));
    return fail(make_error(ErrorCode::io_error, job.path,
                           "--gtest_list_tests failed" + (why.empty() ? std::string() : ": " + why),
                           "run the binary by hand to see why; is it a GoogleTest binary?"));
  }
  std::size_t count = 0;
  std::size_t start = 0;
  const std::string& text = listed->stdout_text;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start + 2 && text.compare(start, 2, "  ") == 0) ++count;
    start = end + 1;
  }
  return count;
}

Result<std::vector<std::string>> ctest_binaries(const std::string& dir) {
  // ctest on a missing directory fails with nothing on stderr: say it here.
  if (std::error_code ec; !fs::is_directory(dir, ec)) {
    return fail(make_error(ErrorCode::io_error, dir, "no such directory (--ctest-dir)",
                           "pass a configured CMake build directory with tests"));
  }
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(2);
  auto shown = sys::run_process({"ctest", "--test-dir", dir, "--show-only=json-v1"}, options);
  if (!shown) return fail(shown.error());
  if (shown->exit_code != 0) {
    const std::string& said = shown->stderr_text.empty() ? shown->stdout_text : shown->stderr_text;
    const std::string first_line = said.substr(0, said.find('\n')).substr(0, 200);
    return fail(make_error(ErrorCode::io_error, dir, "ctest --show-only failed: " + first_line,
                           "pass a configured CMake build directory with tests"));
  }
  auto json = nlohmann::json::parse(shown->stdout_text, nullptr, false);
  if (json.is_discarded() || !json.contains("tests") || !json["tests"].is_array()) {
    return fail(make_error(ErrorCode::parse_error, dir, "ctest --show-only=json-v1 gave no test list",
                           "use CMake 3.14 or newer"));
  }
  std::vector<std::string> binaries;
  std::set<std::string> seen;
  for (const auto& test : json["tests"]) {
    if (!test.contains("command") || !test["command"].is_array()) continue;
    for (const auto& item : test["command"]) {
      if (!item.is_string()) continue;
      std::string path = item.get<std::string>();
      std::error_code ec;
      if (!fs::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0) continue;
      if (!has_heapgate_plugin(path)) continue;
      if (seen.insert(fs::weakly_canonical(path, ec).string()).second) binaries.push_back(path);
      break;
    }
  }
  if (binaries.empty()) {
    return fail(make_error(ErrorCode::invalid_argument, dir,
                           "no ctest test runs a binary with heapgate's GoogleTest plugin",
                           "link the test binaries with heapgate::gtest_main (see README)"));
  }
  return binaries;
}

}  // namespace heapgate::runner
