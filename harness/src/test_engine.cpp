// SPDX-License-Identifier: MIT
// The per-test engine every face drives (heapgate/face.h): one ProfileScope
// per test, its record handed to the role this process plays (plugin_run.h):
// the suite run judges it (suite_run.cpp), an exact re-run child adds its
// stacks (rerun_child.cpp), a growth child keeps one scope across runs
// (growth_child.cpp).
#include <chrono>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "growth_child.h"
#include "heapgate/face.h"
#include "heapgate/allocator.h"
#include "heapgate/gate.h"
#include "heapgate/integration.h"
#include "heapgate/profile_scope.h"
#include "measured_test.h"
#include "plugin_run.h"
#include "rerun_child.h"
#include "suite_run.h"
#include "test_requests.h"

namespace heapgate::harness {
namespace {

Face*& face_slot() noexcept {
  static Face* face = nullptr;
  return face;
}

void no_exit_work() noexcept {}

// The C library keeps exit handlers (a static's destructor, atexit()) in
// blocks of 32 and allocates a block when one fills. How full the current
// block is when the tests start depends on what ran before: heapgate
// registers handlers of its own in some roles and modes and not in others,
// so a test whose static registered its destructor made one more allocation
// (1,280 bytes) in a re-run child than in the suite, and every suite's first
// test was recorded as varying. Registering no-op handlers until one takes a
// new block starts every process's tests with the same room (31 handlers).
// Without jemalloc's per-thread counter nothing is done.
void make_room_for_exit_handlers() {
  for (int i = 0; i < 40; ++i) {
    const auto before = jemalloc::thread_allocated();
    if (!before || std::atexit(no_exit_work) != 0) return;
    const auto after = jemalloc::thread_allocated();
    if (!after || *after != *before) return;
  }
}

}  // namespace

Face* current_face() noexcept { return face_slot(); }

struct TestEngine::State {
  State(Options options, Face& face) : options_(std::move(options)), face_(face) {}

  void program_start() {
    run_.emplace(std::move(options_), face_);
    if (run_->role() == ProcessRole::suite_run) suite_.emplace(*run_);
    if (run_->role() == ProcessRole::growth_child) {
      growth_.emplace(run_->options().growth_child, /*stop_when_level=*/run_->mode() == Mode::counters);
    }
    run_->open_report(suite_ && suite_->accepting());
    if (suite_) suite_->guard();
  }

  void iteration_start(int iteration) { iteration_ = iteration; }

  void iteration_end(int iteration) {
    if (suite_ && iteration == 0) suite_->iteration_end();
  }

  void test_start(const TestCase& test) {
    test_started_ = std::chrono::steady_clock::now();
    test_requests() = TestRequests{};
    if (suite_) suite_->test_started(test.name);
    if (run_->mode() == Mode::off || !run_->records_iteration(iteration_)) return;
    if (!made_room_for_exit_handlers_) {
      make_room_for_exit_handlers();
      made_room_for_exit_handlers_ = true;
    }
    threads_at_start_ = process_threads();
    if (growth_ && !GrowthChild::opens_scope(iteration_)) return;
    // The name and the dump's path are built before the scope opens, so their
    // allocations are not the test's. Without a directory to keep it in, the
    // dump goes to ProfileScope's own temp directory, removed at exit.
    ScopeOptions scope_options{run_->mode()};
    const bool dumps = run_->mode() == Mode::exact || run_->mode() == Mode::sampled;
    if (run_->options().call_sites_only && run_->mode() == Mode::exact) {
      // Nothing reads its file: the stacks are read once, in memory.
      scope_options.profile_in_memory = true;
    } else if (dumps && run_->keeper().ready()) {
      scope_options.profile_path = run_->keeper().new_path(file_stem_of(test.name));
    }
    switches_at_start_ = context_switches();
    scope_.emplace(test.name, std::move(scope_options));
    face_.window_opened();
    // The clock starts after heapgate's own setup, which is not the test's time.
    test_started_ = std::chrono::steady_clock::now();
  }

  void test_end(const TestCase& test, const TestEnd& end) {
    // Frameworks count whole milliseconds (GoogleTest's elapsed_time()), 0
    // for most unit tests; the report wants their time.
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - test_started_;
    if (suite_) suite_->test_ended();
    // Taken before any wait below, whose sleeps are heapgate's, not the test's.
    const ContextSwitches now = context_switches();
    if (scope_) finish_started_threads();
    if (growth_ && scope_ && !growth_->after_run(*scope_, iteration_)) return;
    std::optional<Result<ScopeResult>> measured;
    std::uint64_t fixture_bytes = 0;
    ContextSwitches switches;
    if (scope_) {
      measured.emplace(scope_->finish());
      auto grew = [](std::uint64_t before, std::uint64_t after) { return after > before ? after - before : 0; };
      switches = ContextSwitches{grew(switches_at_start_.other_threads, now.other_threads),
                                 grew(switches_at_start_.own_waits, now.own_waits)};
      scope_.reset();
      fixture_bytes = detail::take_skipped_bytes();
    }
    if (!run_->records_iteration(iteration_)) return;
    TestRecord record = test_record_of(test, end, run_->mode(), elapsed.count());
    if (end.skipped) {
      // In the report, so a reader sees every test the binary has; the
      // children re-run tests for the suite run, which has the record already.
      if (suite_) suite_->add(skipped_record(end, std::move(record)));
      return;
    }

    if (!measured || !*measured) {
      Observation nothing;
      nothing.unavailable_reason = measured ? measured->error().message() : run_->unavailable_reason();
      GatePolicy policy;
      policy.strict = run_->options().strict;
      apply(judge(nothing, nullptr, policy), record);
      if (is_failure(record.verdict, policy.strict)) face_.add_failure("", 0, failure_text(record, {}));
      finish(std::move(record));
      return;
    }
    add_measurement(record, **measured, run_->framework_overhead(), fixture_bytes);
    take_framework_blocks(record, end);
    record.other_threads.switches = switches.other_threads;
    record.other_threads.own_waits = switches.own_waits;
    if (growth_) record.growth = growth_->take();
    if (suite_) {
      suite_->judge(std::move(record), (*measured)->counting_window);
      return;
    }
    // Both children report to the suite run; in exact mode they bring their stacks.
    collect_stacks(record, *run_, (*measured)->profile.get());
    finish(std::move(record));
    if (growth_ && growth_->stopped_early(iteration_)) end_growth_child_now();
  }

  void program_end() {
    if (suite_) {
      suite_->end();
      return;
    }
    if (ReportWriter* report = run_->report()) {
      if (auto done = report->finish(); !done) run_->say_report_error(done.error().message());
    }
  }

  // Threads the test started and detached may still be running, and free
  // what they hold as they end: waited for (bounded), so their blocks are
  // not read as the test's leak. Only when something is live and the
  // process has more threads than when the test started.
  void finish_started_threads() {
    if (threads_at_start_ <= 0 || process_threads() <= threads_at_start_) return;
    {
      detail::HookSuppressor suppress;
      const ProfileScope::Live live = scope_->live();
      if (live.allocations == 0 && live.bytes == 0) return;
    }
    wait_for_started_threads(threads_at_start_);
  }

  // The growth check's answer is known (the blocks stopped growing): the
  // report is written now, and the framework's remaining runs, which
  // would only run the test again unmeasured, do not run.
  void end_growth_child_now() {
    if (ReportWriter* report = run_->report()) {
      if (auto done = report->finish(); !done) run_->say_report_error(done.error().message());
    }
    std::fflush(nullptr);
    std::_Exit(0);
  }

  void finish(TestRecord record) {
    if (suite_) {
      suite_->add(std::move(record));
    } else {
      run_->add_record(std::move(record));
    }
  }

  Options options_;  // until the program starts: the framework's flags are parsed by then
  Face& face_;
  std::optional<PluginRun> run_;
  std::optional<SuiteRun> suite_;
  std::optional<GrowthChild> growth_;
  std::optional<ProfileScope> scope_;
  std::chrono::steady_clock::time_point test_started_{};
  ContextSwitches switches_at_start_;
  int threads_at_start_ = 0;
  int iteration_ = 0;
  bool made_room_for_exit_handlers_ = false;
};

TestEngine::TestEngine(Options options, Face& face) : state_(std::make_unique<State>(std::move(options), face)) {
  face_slot() = &face;
}

TestEngine::~TestEngine() {
  if (face_slot() == &state_->face_) face_slot() = nullptr;
}

void TestEngine::program_start() { state_->program_start(); }
void TestEngine::iteration_start(int iteration) { state_->iteration_start(iteration); }
void TestEngine::iteration_end(int iteration) { state_->iteration_end(iteration); }
void TestEngine::test_start(const TestCase& test) { state_->test_start(test); }
void TestEngine::test_end(const TestCase& test, const TestEnd& end) { state_->test_end(test, end); }
void TestEngine::program_end() { state_->program_end(); }
bool TestEngine::cannot_measure() const noexcept { return state_->run_ && state_->run_->cannot_measure(); }

}  // namespace heapgate::harness
