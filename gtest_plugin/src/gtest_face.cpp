// SPDX-License-Identifier: MIT
// GoogleTestFace: what the engine asks of GoogleTest (a child's --gtest_filter and --gtest_repeat,
// failures, XML properties, shards, death-test children, the flag saver's cost per test).
#include "gtest_face.h"

#include <cstdlib>

#include "gtest_flags.h"
#include "gtest_frames.h"
#include "heapgate/integration.h"
#include "heapgate/profile_scope.h"

namespace heapgate::gtest {
namespace {

// GoogleTest's own cost per test: testing::Test's constructor saves every
// gtest flag (one allocation, plus a copy of each flag string too long for
// the small-string buffer — so it depends on e.g. the --gtest_filter text) and
// its destructor frees them. A Probe built on the stack costs exactly that.
struct Probe : ::testing::Test {
  void TestBody() override {}
};

}  // namespace

harness::TestCase test_case_of(const ::testing::TestInfo& info) {
  harness::TestCase test;
  test.suite = info.test_suite_name();
  test.test = info.name();
  test.name = test.suite + "." + test.test;
  test.file = info.file() != nullptr ? info.file() : "";
  test.line = info.line();
  return test;
}

harness::TestEnd test_end_of(const ::testing::TestInfo& info) {
  harness::TestEnd end;
  const ::testing::TestResult& result = *info.result();
  end.failed = result.Failed();
  end.skipped = result.Skipped();
  if (!end.skipped) return end;
  end.skip_reason = "the test skipped itself (GTEST_SKIP())";
  for (int i = 0; i < result.total_part_count(); ++i) {
    const ::testing::TestPartResult& part = result.GetTestPartResult(i);
    if (part.skipped() && part.message() != nullptr && *part.message() != '\0') {
      end.skip_message = part.message();
      break;
    }
  }
  return end;
}

void GoogleTestFace::add_failure(const std::string& file, int line, const std::string& text) {
  if (file.empty()) {
    ADD_FAILURE() << text;
  } else {
    ADD_FAILURE_AT(file.c_str(), line) << text;
  }
}

void GoogleTestFace::record_property(const std::string& key, const std::string& value) {
  ::testing::Test::RecordProperty(key, value);
}

std::vector<std::string> GoogleTestFace::child_arguments(const harness::TestSelection& selection, int runs) const {
  std::string filter;
  if (selection.whole_run) {
    filter = HEAPGATE_GTEST_FLAG(filter);
  } else {
    for (const std::string& name : selection.names) filter += (filter.empty() ? "" : ":") + name;
  }
  std::vector<std::string> arguments = {"--gtest_filter=" + filter, "--gtest_repeat=" + std::to_string(runs)};
  if (HEAPGATE_GTEST_FLAG(also_run_disabled_tests)) arguments.push_back("--gtest_also_run_disabled_tests");
  return arguments;
}

std::optional<harness::Shard> GoogleTestFace::shard() const { return harness::shard_from_environment(); }

bool GoogleTestFace::runs_whole_suite() const { return std::string(HEAPGATE_GTEST_FLAG(filter)) == "*"; }

bool GoogleTestFace::is_framework_child() const {
  return !std::string(HEAPGATE_GTEST_FLAG(internal_run_death_test)).empty();
}

Metrics GoogleTestFace::per_test_overhead(Mode mode) const {
  if (mode == Mode::off) return {};
  ProfileScope scope{"heapgate.gtest-overhead", ScopeOptions{Mode::counters}};
  { Probe probe; }
  auto r = scope.finish();
  return r ? from_scope(*r) : Metrics{};
}

void GoogleTestFace::window_opened() { detail::skip_next_allocation(); }

bool GoogleTestFace::is_framework_stack(const StackSample& stack) const { return is_gtest_overhead(stack); }

}  // namespace heapgate::gtest
