// SPDX-License-Identifier: MIT
// The Catch2 face: a Catch2 v2 event listener that drives the engine
// (heapgate/face.h), and the Face that answers for Catch2.
//
// The window of a test case opens at its first section (the test case's own,
// which RunContext starts after it built the test case's tracker) and closes
// at testCaseEnded(), before any reporter prints. Listeners get every event
// before the reporter does (ListeningReporter).
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "heapgate/catch2.h"
#include "heapgate/face.h"

namespace heapgate::catch2 {
namespace {

// Catch2's test spec: a quoted name is matched whole; `\` escapes the next
// character, and `,` separates alternatives even inside quotes.
std::string quoted_test_spec(const std::string& name) {
  std::string spec = "\"";
  for (const char c : name) {
    if (c == '\\' || c == '"' || c == ',') spec += '\\';
    spec += c;
  }
  return spec + "\"";
}

class Catch2Face final : public harness::Face {
 public:
  const char* framework() const noexcept override { return "Catch2"; }

  // Catch2 offers no way to fail a test case after it ended.
  void add_failure(const std::string& file, int line, const std::string& text) override {
    failures_.add(file, line, text);
  }

  std::vector<std::string> child_arguments(const harness::TestSelection& selection, int runs) const override {
    std::vector<std::string> arguments;
    if (selection.whole_run) {
      arguments = tests_or_tags_;
    } else {
      std::string spec;
      for (const std::string& name : selection.names) spec += (spec.empty() ? "" : ",") + quoted_test_spec(name);
      arguments.push_back(spec);
    }
    arguments.push_back("--heapgate_internal_runs=" + std::to_string(runs));
    return arguments;
  }

  bool runs_whole_suite() const override { return tests_or_tags_.empty(); }

  bool is_framework_stack(const StackSample& stack) const override { return harness::is_framework_only_stack(stack); }

  std::optional<harness::Shard> shard() const override { return harness::shard_from_environment(); }
  std::vector<std::string> shard_env() const override { return harness::shard_environment_names(); }

  /// The run's selection, for the children; once kept (a shard's process
  /// runs its share by another), that one stays.
  void set_tests_or_tags(std::vector<std::string> specs) {
    if (!selection_kept_) tests_or_tags_ = std::move(specs);
  }
  void keep_tests_or_tags(std::vector<std::string> specs) {
    tests_or_tags_ = std::move(specs);
    selection_kept_ = true;
  }
  void set_current(const std::string& name) { failures_.set_current(name); }
  void clear_current() noexcept { failures_.clear_current(); }
  int failures() const noexcept { return failures_.count(); }

 private:
  std::vector<std::string> tests_or_tags_;
  bool selection_kept_ = false;
  harness::PrintedFailures failures_;
};

// What outlives each Session::run(): Catch2 makes its listeners anew for
// every run, and a re-run child runs the session several times.
struct Catch2Run {
  Catch2Face face;
  std::optional<harness::TestEngine> engine;
  std::optional<harness::TestCase> current;
  bool window_pending = false;
  // Sections open now, the test case's own included.
  std::size_t depth = 0;
  // Catch2 keeps these stacks for a whole run and pushes onto them as
  // sections open: the first test case of a run to nest that deep grows
  // them inside its window. The run's reporter derives from
  // StreamingReporterBase, whose stack of open sections is one.
  bool streaming_reporter = false;
  harness::FrameworkVector reporter_sections{sizeof(Catch::SectionInfo)};
  // RunContext's stack of open SECTIONs (the test case's own is not on it).
  harness::FrameworkVector active_sections{sizeof(void*)};  // ITracker pointers
  // Test cases of this Session::run() that passed Catch2's assertions and
  // failed heapgate's gate.
  std::uint64_t gate_failed_cases = 0;
};

// A test case that failed heapgate's gate counts as failed in Catch2's own
// totals, with one failed assertion (the gate): listeners hear of a test
// case's end and of the run's before the reporter does, and both stats are
// temporaries RunContext builds for the call, so the reporter's line for it,
// its JUnit attributes and the run's summary agree with the exit status.
void count_gate_failures(Catch::Totals& totals, std::uint64_t test_cases) {
  const std::size_t n = static_cast<std::size_t>(test_cases);
  totals.testCases.passed -= std::min(totals.testCases.passed, n);
  totals.testCases.failed += n;
  totals.assertions.failed += n;
}

// Catch2's reporters that derive from StreamingReporterBase (its own
// console, compact, xml, tap, teamcity and automake).
bool streams(const std::string& reporter) {
  for (const char* name : {"console", "compact", "xml", "tap", "teamcity", "automake"}) {
    if (reporter == name) return true;
  }
  return false;
}

Catch2Run& gated_run() {
  static Catch2Run run;
  return run;
}

// The blocks of the stats Catch2 hands to testCaseEnded(): built after the
// test's last section, inside its window, and freed right after the
// listeners return, so they are live when the window closes but are not the
// test's. Their usable sizes, as the window counts them.
struct HeldBlocks {
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;
  void add_block(std::size_t usable) {
    ++allocations;
    bytes += usable;
  }
  void add_string(const std::string& s) {
    if (s.capacity() <= 15) return;  // libstdc++'s small-string buffer: no block
    add_block(::malloc_usable_size(const_cast<char*>(s.data())));
  }
  template <typename T>
  void add_vector(const std::vector<T>& v) {
    if (v.capacity() == 0) return;
    add_block(::malloc_usable_size(const_cast<T*>(v.data())));
  }
};

HeldBlocks held_by(const Catch::TestCaseStats& stats) {
  HeldBlocks held;
  const Catch::TestCaseInfo& info = stats.testInfo;
  for (const std::string* s : {&info.name, &info.className, &info.description, &stats.stdOut, &stats.stdErr}) {
    held.add_string(*s);
  }
  held.add_vector(info.tags);
  held.add_vector(info.lcaseTags);
  for (const std::string& tag : info.tags) held.add_string(tag);
  for (const std::string& tag : info.lcaseTags) held.add_string(tag);
  return held;
}

class Listener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testRunStarting(Catch::TestRunInfo const& info) override {
    TestEventListenerBase::testRunStarting(info);
    Catch2Run& run = gated_run();
    run.face.set_tests_or_tags(m_config->getTestsOrTags());
    const auto* config = dynamic_cast<const Catch::Config*>(m_config.get());
    run.streaming_reporter = config != nullptr && streams(config->getReporterName());
    run.reporter_sections.reset();
    run.active_sections.reset();
    run.gate_failed_cases = 0;
  }

  // The base class's own bookkeeping of test cases and sections copies
  // their names: not called, so nothing of it lands in a window.
  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    Catch2Run& run = gated_run();
    // Kept while the same test case repeats: a growth child's one window
    // spans the runs, and a new name each time would be blocks live in it.
    if (!run.current || run.current->name != info.name) {
      harness::TestCase test;
      test.name = info.name;
      // Catch2's own JUnit reporter's class for a TEST_CASE without a fixture.
      test.suite = info.className.empty() ? "global" : info.className;
      test.test = info.name;
      test.file = info.lineInfo.file != nullptr ? info.lineInfo.file : "";
      test.line = static_cast<int>(info.lineInfo.line);
      run.current = std::move(test);
      run.face.set_current(info.name);
    }
    run.window_pending = true;
    run.depth = 0;
  }

  // RunContext pushed a SECTION onto its stack before this; the reporter
  // pushes it onto its own after this (listeners go first).
  void sectionStarting(Catch::SectionInfo const&) override {
    Catch2Run& run = gated_run();
    if (run.window_pending && run.engine && run.current) {
      run.window_pending = false;
      run.reporter_sections.window_opened();
      run.active_sections.window_opened();
      run.engine->test_start(*run.current);
    }
    ++run.depth;
    if (run.streaming_reporter) run.reporter_sections.pushed(run.depth);
    if (run.depth >= 2) run.active_sections.pushed(run.depth - 1);
  }

  void sectionEnded(Catch::SectionStats const&) override {
    Catch2Run& run = gated_run();
    if (run.depth > 0) --run.depth;
  }

  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    Catch2Run& run = gated_run();
    if (!run.engine || !run.current || run.window_pending) return;
    // testCaseStarting() set window_pending for this test case; a test case
    // never reaching its section (it could not start) opened no window.
    harness::TestEnd end;
    end.failed = stats.totals.assertions.failed > 0 || stats.totals.testCases.failed > 0;
    HeldBlocks held = held_by(stats);
    end.framework_allocations = held.allocations;
    end.framework_bytes = held.bytes;
    end.framework_live_allocations = held.allocations;
    end.framework_live_bytes = held.bytes;
    run.reporter_sections.take_off(end);
    run.active_sections.take_off(end);
    const int failures_before = run.face.failures();
    run.engine->test_end(*run.current, end);
    if (run.face.failures() > failures_before && !end.failed) {
      ++run.gate_failed_cases;
      count_gate_failures(const_cast<Catch::Totals&>(stats.totals), 1);
    }
  }

  void testRunEnded(Catch::TestRunStats const& stats) override {
    TestEventListenerBase::testRunEnded(stats);
    count_gate_failures(const_cast<Catch::Totals&>(stats.totals), gated_run().gate_failed_cases);
  }
};

}  // namespace

namespace detail {

int start(int* argc, char** argv) {
  const harness::Options options = harness::init(argc, argv);
  Catch2Run& run = gated_run();
  // Registered here rather than by CATCH_REGISTER_LISTENER in this file: a
  // static library's object that nothing references is dropped by the
  // linker, and its registration with it.
  static const Catch::ListenerRegistrar<Listener> registered;
  run.engine.emplace(options, run.face);
  run.engine->program_start();
  return options.suite_runs;
}

void iteration_start(int iteration) {
  if (gated_run().engine) gated_run().engine->iteration_start(iteration);
}

void iteration_end(int iteration) {
  Catch2Run& run = gated_run();
  run.face.clear_current();
  if (run.engine) run.engine->iteration_end(iteration);
}

bool shard(int* index, int* total) {
  const std::optional<harness::Shard> shard = harness::shard_from_environment();
  if (!shard) return false;
  *index = shard->index;
  *total = shard->total;
  return true;
}

std::string test_spec_of(const std::string& name) { return quoted_test_spec(name); }

void keep_selection(const std::vector<std::string>& tests_or_tags) {
  gated_run().face.keep_tests_or_tags(tests_or_tags);
}

int finish(int catch_status) {
  Catch2Run& run = gated_run();
  if (run.engine) run.engine->program_end();
  if (catch_status != 0) return catch_status;
  return run.face.failures() > 0 ? 1 : 0;
}

}  // namespace detail
}  // namespace heapgate::catch2
