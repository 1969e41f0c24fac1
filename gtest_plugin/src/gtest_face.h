// SPDX-License-Identifier: MIT
// What the engine asks of GoogleTest (heapgate/face.h), answered from
// GoogleTest's flags, its XML properties and its own stacks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/face.h"

namespace heapgate::gtest {

/// "Suite.Test", as GoogleTest's filter names it, with the test's place.
harness::TestCase test_case_of(const ::testing::TestInfo& info);

/// How GoogleTest says the test ended (failed, or skipped with GTEST_SKIP()).
harness::TestEnd test_end_of(const ::testing::TestInfo& info);

class GoogleTestFace final : public harness::Face {
 public:
  const char* framework() const noexcept override { return "GoogleTest"; }
  /// ADD_FAILURE_AT: GoogleTest decides the exit status after each
  /// iteration, so a failure outside any test fails the run too.
  void add_failure(const std::string& file, int line, const std::string& text) override;
  /// A <property> of the <testcase> in GoogleTest's own XML.
  void record_property(const std::string& key, const std::string& value) override;
  /// `--gtest_filter=A:B --gtest_repeat=N` (the run's own filter for the
  /// whole run), and `--gtest_also_run_disabled_tests` only if this run had
  /// it: a re-run of the whole suite must not start a DISABLED_ test the
  /// user never runs, such as snappy's 4 GB one.
  std::vector<std::string> child_arguments(const harness::TestSelection& selection, int runs) const override;
  std::vector<std::string> child_unset_env() const override { return {"GTEST_OUTPUT"}; }
  /// GTEST_SHARD_INDEX of GTEST_TOTAL_SHARDS.
  std::optional<harness::Shard> shard() const override;
  std::vector<std::string> shard_env() const override { return harness::shard_environment_names(); }
  bool runs_whole_suite() const override;
  /// A death test's child (--gtest_internal_run_death_test).
  bool is_framework_child() const override;
  /// testing::Test's flag saver (docs/design.md §6).
  Metrics per_test_overhead(Mode mode) const override;
  /// GoogleTest's next step is `new` of the fixture object: its allocation, not the test's.
  void window_opened() override;
  /// is_gtest_overhead() (gtest_frames.h).
  bool is_framework_stack(const StackSample& stack) const override;
};

}  // namespace heapgate::gtest
