// SPDX-License-Identifier: MIT
// The seam between heapgate's per-test engine and a test framework. A face
// (GoogleTest, Catch2, doctest) is the framework's own listener, which calls
// TestEngine as tests start and end, plus a Face that answers what only the
// framework knows: how a child process selects one test, how a test fails,
// which stacks are the framework's own. Everything else (windows, children,
// the growth check, explanations, the suite run, reports, baselines) is the
// engine's, the same for every framework.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "heapgate/harness.h"
#include "heapgate/metrics.h"
#include "heapgate/stack_sample.h"

namespace heapgate::harness {

/// The tests a child process of a gated run runs: `names` (full names, as
/// TestCase::name), or, when `whole_run` is set, whatever the run itself
/// selected (its own filter or test spec).
struct TestSelection {
  std::vector<std::string> names;
  bool whole_run = false;
};

/// One test case as its framework announces it. `name` is the record's and
/// the baseline's key: it must be the same in every run of the binary and
/// select this test alone in Face::child_arguments().
struct TestCase {
  std::string name;
  /// The grouping the framework has (GoogleTest's suite, doctest's
  /// TEST_SUITE, Catch2's fixture class), "" when none.
  std::string suite;
  /// The test's own name within `suite`.
  std::string test;
  std::string file;
  int line = 0;
};

/// How a test case ended, as its framework tells it.
struct TestEnd {
  /// The framework's own assertions failed.
  bool failed = false;
  /// The test skipped itself: it is reported, never judged.
  bool skipped = false;
  /// How, in the framework's words ("the test skipped itself (GTEST_SKIP())").
  std::string skip_reason;
  /// The test's own reason, "" when it gave none.
  std::string skip_message;
  /// Blocks the framework allocated inside the window on its own behalf,
  /// known to the face (Catch2's TestCaseStats, built for its reporters
  /// after the test's code): taken off the test's allocations. Usable sizes,
  /// as the window counts them.
  std::uint64_t framework_allocations = 0;
  std::uint64_t framework_bytes = 0;
  /// Of those, the blocks still live when the window closed (freed right
  /// after the listeners return): taken off what the test left live.
  std::uint64_t framework_live_allocations = 0;
  std::uint64_t framework_live_bytes = 0;
  /// Of those, the bytes live from early in the window to its end (a stack
  /// the framework grew as the test's first section opened), and so in its
  /// peak: taken off the peak.
  std::uint64_t framework_peak_bytes = 0;
};

/// A shard of a sharded run: tests `index` of `total`.
struct Shard {
  int index = 0;
  int total = 1;
};

/// The shard `heapgate run -j N` (or CTest, or any runner that speaks
/// GoogleTest's sharding protocol) gave this process: GTEST_SHARD_INDEX of
/// GTEST_TOTAL_SHARDS, when both are set and make sense. Every face reads
/// the same variables, so one runner shards suites of any framework.
std::optional<Shard> shard_from_environment();

/// The variables shard_from_environment() reads.
inline std::vector<std::string> shard_environment_names() { return {"GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"}; }

/// The failures of a framework that cannot fail a test after it ended
/// (Catch2, doctest): Face::add_failure() prints each where a compiler puts
/// one ("file:line: FAILED (heapgate) <test>:"), and the run's exit status
/// counts them.
class PrintedFailures {
 public:
  /// The test failures are charged to. An assignment, not a fresh string:
  /// called inside a window, a name that fits the kept buffer allocates nothing.
  void set_current(const std::string& name) { current_ = name; }
  /// No test is current; the buffer is kept for the next name.
  void clear_current() noexcept { current_.clear(); }
  void add(const std::string& file, int line, const std::string& text);
  int count() const noexcept { return count_; }

 private:
  std::string current_;
  int count_ = 0;
};

/// What the engine asks of a test framework. One object a process, owned by
/// the face and alive while its TestEngine is; the engine calls it from the
/// thread that runs the tests.
class Face {
 public:
  virtual ~Face() = default;
  /// "GoogleTest", "Catch2", "doctest": for messages.
  virtual const char* framework() const noexcept = 0;
  /// Fails the current test with `text` at `file`:`line` ("" and 0: no
  /// place), or the run when no test is current (after the suite's last test
  /// ends, a deferred leak check can fail): the binary's exit status must
  /// say so.
  virtual void add_failure(const std::string& file, int line, const std::string& text) = 0;
  /// Attaches `key`=`value` to the current test in the framework's own
  /// report (GoogleTest's XML properties). Frameworks without one ignore it.
  virtual void record_property(const std::string& key, const std::string& value) {
    (void)key;
    (void)value;
  }
  /// The framework's arguments that make a child process of this binary run
  /// `selection`, `runs` times in a row, each run a new iteration of
  /// TestEngine (iteration_start() 0 to runs-1).
  virtual std::vector<std::string> child_arguments(const TestSelection& selection, int runs) const = 0;
  /// Environment variables a child must not inherit: the framework's own
  /// output files, which the child would overwrite.
  virtual std::vector<std::string> child_unset_env() const { return {}; }
  /// The shard this process runs, when the run is sharded.
  virtual std::optional<Shard> shard() const { return std::nullopt; }
  /// The variables that carry the shard into a child: unset for a child that
  /// runs its own selection, whichever shard the test was on.
  virtual std::vector<std::string> shard_env() const { return {}; }
  /// The run selects every test (no filter): only then can a baseline's
  /// test that did not run be called missing.
  virtual bool runs_whole_suite() const = 0;
  /// This process was started by the framework itself to run part of a
  /// test (GoogleTest's death tests): it must neither report nor re-run.
  virtual bool is_framework_child() const { return false; }
  /// What the framework allocates inside every test's window on its own
  /// behalf, measured once per process and taken off each test.
  virtual Metrics per_test_overhead(Mode mode) const {
    (void)mode;
    return {};
  }
  /// Called right after a test's window opened, before the framework goes
  /// on: GoogleTest's next step is `new` of the fixture, not the test's.
  virtual void window_opened() {}
  /// A stack the framework makes for every test rather than the test
  /// itself; it is left out of call sites and explanations.
  virtual bool is_framework_stack(const StackSample& stack) const = 0;
};

/// A stack of the framework's frames only: when a profile is read, the
/// frames of every framework a face covers are dropped (GoogleTest's,
/// Catch2's, doctest's), leaving "[framework]" (after std:: frames) or
/// nothing. A face's Face::is_framework_stack() starts from it.
bool is_framework_only_stack(const StackSample& stack);

/// A std::vector a framework keeps beyond one test case (for a run, or the
/// process) and pushes onto as a test nests sections or subcases. libstdc++
/// doubles a full vector's capacity, so the first test case to nest that
/// deep grows it inside its window, and the block stays: followed here and
/// taken off (TestEnd::framework_*), a test counts the same whether it is
/// the first to get there (alone, in a child, filtered) or not. The blocks'
/// sizes (element size times a power of two, for the frameworks' elements)
/// are jemalloc size classes, so they are also their usable sizes. Not
/// thread-safe: the thread that runs the tests.
class FrameworkVector {
 public:
  explicit FrameworkVector(std::size_t element) : element_(element) {}
  /// A new vector, empty (a new run's reporter).
  void reset() noexcept {
    capacity_ = 0;
    in_window_ = false;
  }
  /// A window opens: the vector's block so far is not the test's.
  void window_opened() noexcept {
    in_window_ = false;
    allocations_ = 0;
    bytes_ = 0;
  }
  /// The vector holds `size` elements now.
  void pushed(std::size_t size) noexcept {
    if (size <= capacity_) return;
    capacity_ = capacity_ == 0 ? 1 : 2 * capacity_;
    ++allocations_;
    bytes_ += capacity_ * element_;
    in_window_ = true;
  }
  /// Adds to `end` every block it allocated in the window, and the one it
  /// holds if the window made it.
  void take_off(TestEnd& end) const noexcept {
    end.framework_allocations += allocations_;
    end.framework_bytes += bytes_;
    if (!in_window_) return;
    end.framework_live_allocations += 1;
    end.framework_live_bytes += capacity_ * element_;
    end.framework_peak_bytes += capacity_ * element_;
  }

 private:
  std::size_t element_;
  std::size_t capacity_ = 0;
  bool in_window_ = false;
  std::uint64_t allocations_ = 0;
  std::uint64_t bytes_ = 0;
};

/// The face of this process (set by TestEngine), or nullptr before one ran.
Face* current_face() noexcept;

/// The per-test engine: a face's listener calls it in this order,
/// program_start(), then for each run of the suite iteration_start(i), per
/// test test_start()/test_end(), iteration_end(i), and last program_end().
/// It plays this process's role (the suite run, or a child the suite run
/// started) and gates each test. One per process, on the tests' thread.
class TestEngine {
 public:
  TestEngine(Options options, Face& face);
  ~TestEngine();
  TestEngine(const TestEngine&) = delete;
  TestEngine& operator=(const TestEngine&) = delete;

  void program_start();
  void iteration_start(int iteration);
  void iteration_end(int iteration);
  /// Opens the test's window: call it as late before the test's own code as
  /// the framework allows.
  void test_start(const TestCase& test);
  /// Closes the window and gates the test: call it as early after the
  /// test's own code as the framework allows, before any printer.
  void test_end(const TestCase& test, const TestEnd& end);
  void program_end();
  /// This process measures nothing (no jemalloc, no profiling, mode off),
  /// though it was asked to: the face may say so in its own words too.
  bool cannot_measure() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace heapgate::harness
