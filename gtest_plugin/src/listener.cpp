// SPDX-License-Identifier: MIT
// The GoogleTest listener: GoogleTest's events, handed to the per-test
// engine (heapgate/face.h) with GoogleTestFace answering for GoogleTest.
#include <utility>

#include "gtest_face.h"
#include "gtest_flags.h"
#include "heapgate/face.h"
#include "heapgate/gtest.h"

namespace heapgate::gtest {
namespace {

class Listener : public ::testing::EmptyTestEventListener {
 public:
  explicit Listener(Options options) : engine_(std::move(options), face_) {}

  void OnTestProgramStart(const ::testing::UnitTest&) override { engine_.program_start(); }
  void OnTestIterationStart(const ::testing::UnitTest&, int iteration) override { engine_.iteration_start(iteration); }
  void OnTestIterationEnd(const ::testing::UnitTest&, int iteration) override { engine_.iteration_end(iteration); }

  void OnTestStart(const ::testing::TestInfo& info) override {
    // Named before the window opens: its strings are not the test's. Kept
    // while the same test repeats (--gtest_repeat): a growth child's one
    // window spans the repetitions, and a new name each time would be
    // blocks that stay live in it.
    if (current_info_ != &info) {
      current_ = test_case_of(info);
      current_info_ = &info;
    }
    engine_.test_start(current_);
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    // The name made at the start is passed as it is: a copy would allocate
    // inside the window. test_end_of() allocates only for a skipped test,
    // which is not measured.
    if (current_info_ != &info) {
      current_ = test_case_of(info);
      current_info_ = &info;
    }
    engine_.test_end(current_, test_end_of(info));
  }

  void OnTestProgramEnd(const ::testing::UnitTest&) override { engine_.program_end(); }

 private:
  GoogleTestFace face_;  // before engine_, which holds it
  harness::TestEngine engine_;
  harness::TestCase current_;
  const ::testing::TestInfo* current_info_ = nullptr;
};

}  // namespace

void install_listener(const Options& options) {
  // GoogleTest's random seed is the clock's unless one is given
  // (--gtest_random_seed, GTEST_RANDOM_SEED), and suites seed their test data
  // from it (UnitTest::random_seed(): randomized tests write different keys
  // each run, and allocate differently). A measured run pins
  // it, so the same binary makes the same calls every run; RUN_ALL_TESTS
  // reads the flag after this, and the re-run children pin the same seed.
  if (options.mode != Mode::off && HEAPGATE_GTEST_FLAG(random_seed) == 0) {
    HEAPGATE_GTEST_FLAG_SET(random_seed, kPinnedRandomSeed);
  }
  // Appended last: GoogleTest calls OnTestEnd in reverse order, so heapgate's
  // runs before the printer's and a heapgate failure shows as the test's.
  ::testing::UnitTest::GetInstance()->listeners().Append(new Listener(options));
}

}  // namespace heapgate::gtest
