// SPDX-License-Identifier: MIT
// The doctest face: a doctest listener that drives the engine
// (heapgate/face.h), and the Face that answers for doctest. The window of a
// test case opens at test_case_start() and closes at test_case_end();
// doctest calls its listeners before its reporters, so nothing it prints is
// inside.
#include <doctest/doctest.h>

#include <cstdio>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "heapgate/doctest.h"
#include "heapgate/face.h"

namespace heapgate {
namespace doctest_face {
namespace {

// A name as one doctest filter: `,` and `\` are escaped with `\`; `*` and `?`
// cannot be, so each becomes `?` (any one character), which still matches
// the name; whatever else it matches is run but not read.
std::string filter_of(const std::string& name) {
  std::string filter;
  for (const char c : name) {
    if (c == ',' || c == '\\') filter += '\\';
    filter += (c == '*' || c == '?') ? '?' : c;
  }
  return filter;
}

// doctest's options that select tests, in any of its spellings (`-tc=`,
// `--tc=`, `--dt-test-case=`): a child that runs the run's own selection
// gets these and nothing else of the command line (not its reporters or
// output files).
// An option's name as doctest reads it: without its dashes, its `dt-`
// prefix and its `=value`; "" for what is not an option.
std::string_view option_name(std::string_view argument) {
  if (argument.empty() || argument.front() != '-') return {};
  while (!argument.empty() && argument.front() == '-') argument.remove_prefix(1);
  if (argument.rfind("dt-", 0) == 0) argument.remove_prefix(3);
  return argument.substr(0, argument.find('='));
}

bool named_one_of(std::string_view argument, std::initializer_list<const char*> names) {
  const std::string_view name = option_name(argument);
  for (const char* one : names) {
    if (name == one) return true;
  }
  return false;
}

bool selects_tests(std::string_view argument) {
  return argument.find('=') != std::string_view::npos &&
         named_one_of(argument,
                      {"test-case", "tc", "test-case-exclude", "tce", "test-suite", "ts", "test-suite-exclude", "tse",
                       "source-file", "sf", "source-file-exclude", "sfe", "subcase", "sc", "subcase-exclude", "sce"});
}

// Options after which doctest runs no test (it lists, counts or says its
// version): no warm-up run for them.
bool runs_no_test(std::string_view argument) {
  return named_one_of(argument, {"help", "h", "?", "version", "v", "count", "c", "list-test-cases", "ltc",
                                 "list-test-suites", "lts", "list-reporters", "lr", "no-run", "nr"});
}

class DoctestFace final : public harness::Face {
 public:
  const char* framework() const noexcept override { return "doctest"; }

  // doctest counts a test's failures while it runs, not after it ended.
  void add_failure(const std::string& file, int line, const std::string& text) override {
    failures_.add(file, line, text);
  }

  std::vector<std::string> child_arguments(const harness::TestSelection& selection, int runs) const override {
    std::vector<std::string> arguments;
    if (selection.whole_run) {
      arguments = selecting_arguments_;
    } else {
      std::string cases;
      std::string suites;
      for (const std::string& name : selection.names) {
        const auto it = names_.find(name);
        const std::string& test = it != names_.end() ? it->second.second : name;
        cases += (cases.empty() ? "" : ",") + filter_of(test);
        if (it != names_.end() && !it->second.first.empty()) {
          suites += (suites.empty() ? "" : ",") + filter_of(it->second.first);
        }
      }
      arguments.push_back("--test-case=" + cases);
      if (!suites.empty()) arguments.push_back("--test-suite=" + suites);
    }
    arguments.push_back("--heapgate_internal_runs=" + std::to_string(runs));
    return arguments;
  }

  bool runs_whole_suite() const override { return selecting_arguments_.empty(); }

  std::optional<harness::Shard> shard() const override { return harness::shard_from_environment(); }
  std::vector<std::string> shard_env() const override { return harness::shard_environment_names(); }

  bool is_framework_stack(const StackSample& stack) const override { return harness::is_framework_only_stack(stack); }

  void set_selecting_arguments(std::vector<std::string> arguments) { selecting_arguments_ = std::move(arguments); }
  // The names are the run's, kept for its children. A test seen before
  // (a growth child's repetitions, inside its window) allocates nothing:
  // its name fits the buffer ended() kept, and try_emplace() finds it.
  void started(const harness::TestCase& test) {
    failures_.set_current(test.name);
    names_.try_emplace(test.name, test.suite, test.test);
  }
  void ended() noexcept { failures_.clear_current(); }
  int failures() const noexcept { return failures_.count(); }

 private:
  std::vector<std::string> selecting_arguments_;
  std::map<std::string, std::pair<std::string, std::string>> names_;  // name -> (suite, test case)
  harness::PrintedFailures failures_;
};

// What outlives each Context::run(): doctest makes its listeners anew for
// every run, and a re-run child runs the suite several times.
struct DoctestRun {
  DoctestFace face;
  std::optional<harness::TestEngine> engine;
  std::optional<harness::TestCase> current;
  const ::doctest::TestCaseData* current_data = nullptr;  // whose name `current` is
  // doctest's console reporter (a new one each run) keeps the subcases
  // entered since the test case started or re-entered, and grows that
  // stack inside the window of the first test case to enter that many.
  bool console_reporter = true;
  std::size_t subcases_entered = 0;
  harness::FrameworkVector console_subcases{sizeof(::doctest::SubcaseSignature)};
  // Test cases of this Context::run() that passed doctest's assertions and
  // failed heapgate's gate.
  unsigned gate_failed_cases = 0;
  // heapgate's warm-up test case is registered: doctest counts it among the
  // test cases its filters skipped.
  bool warm_up_registered = false;
  // How many test cases the filters pass, from doctest's answer to --count.
  unsigned counted_test_cases = 0;
  // Test cases this Context::run() started: a shard runs a range of those
  // its filters pass, and doctest counts all of them as passed.
  unsigned test_cases_started = 0;
};

DoctestRun& gated_run() {
  static DoctestRun run;
  return run;
}

struct Listener : ::doctest::IReporter {
  explicit Listener(const ::doctest::ContextOptions&) {}

  void report_query(const ::doctest::QueryData& query) override {
    if (query.run_stats != nullptr) gated_run().counted_test_cases = query.run_stats->numTestCasesPassingFilters;
  }
  void test_run_start() override {
    gated_run().console_subcases.reset();
    gated_run().gate_failed_cases = 0;
    gated_run().test_cases_started = 0;
  }

  // Listeners hear of the run's end before the reporters, from the stats
  // doctest keeps for the run (a non-const object): a test case that failed
  // the gate counts as failed, with one failed assertion (the gate), so the
  // summary, its status and doctest's exit code agree with heapgate's; the
  // warm-up is not one of the suite's test cases.
  void test_run_end(const ::doctest::TestRunStats& stats) override {
    auto& totals = const_cast<::doctest::TestRunStats&>(stats);
    DoctestRun& run = gated_run();
    totals.numTestCasesFailed += run.gate_failed_cases;
    totals.numAsserts += static_cast<int>(run.gate_failed_cases);
    totals.numAssertsFailed += static_cast<int>(run.gate_failed_cases);
    if (run.warm_up_registered && totals.numTestCases > 0) --totals.numTestCases;
    // A shard's summary: the test cases it ran, the others' among the skipped.
    if (harness::shard_from_environment()) totals.numTestCasesPassingFilters = run.test_cases_started;
  }

  void test_case_start(const ::doctest::TestCaseData& data) override {
    DoctestRun& run = gated_run();
    ++run.test_cases_started;
    if (!run.engine) return;
    // Kept while the same test case repeats: a growth child's one window
    // spans the runs, and a new name each time would be blocks live in it.
    run.subcases_entered = 0;
    if (run.current_data == &data && run.current) {
      run.face.started(*run.current);
      run.console_subcases.window_opened();
      run.engine->test_start(*run.current);
      return;
    }
    harness::TestCase test;
    test.suite = data.m_test_suite != nullptr ? data.m_test_suite : "";
    test.test = data.m_name != nullptr ? data.m_name : "";
    // "Suite.Name" as GoogleTest's records are named, or the name alone
    // outside a TEST_SUITE.
    test.name = test.suite.empty() ? test.test : test.suite + "." + test.test;
    test.file = data.m_file.c_str();
    test.line = static_cast<int>(data.m_line);
    run.face.started(test);
    run.current = std::move(test);
    run.current_data = &data;
    run.console_subcases.window_opened();
    run.engine->test_start(*run.current);
  }

  void test_case_reenter(const ::doctest::TestCaseData&) override { gated_run().subcases_entered = 0; }

  void test_case_end(const ::doctest::CurrentTestCaseStats& stats) override {
    DoctestRun& run = gated_run();
    if (!run.engine || !run.current) return;
    harness::TestEnd end;
    end.failed = !stats.testCaseSuccess;
    if (run.console_reporter) run.console_subcases.take_off(end);
    const int failures_before = run.face.failures();
    run.engine->test_end(*run.current, end);
    run.face.ended();
    if (run.face.failures() > failures_before && !end.failed) {
      // The reporters hear of this test case after the listeners.
      auto& current = const_cast<::doctest::CurrentTestCaseStats&>(stats);
      current.testCaseSuccess = false;
      current.failure_flags |= ::doctest::TestCaseFailureReason::AssertFailure;
      ++run.gate_failed_cases;
    }
  }

  void test_case_exception(const ::doctest::TestCaseException&) override {}
  void subcase_start(const ::doctest::SubcaseSignature&) override {
    DoctestRun& run = gated_run();
    run.console_subcases.pushed(++run.subcases_entered);
  }
  void subcase_end() override {}
  void log_assert(const ::doctest::AssertData&) override {}
  void log_message(const ::doctest::MessageData&) override {}
  void test_case_skipped(const ::doctest::TestCaseData&) override {}
};

// doctest keeps, for a whole process, the stacks and set it follows subcases
// with and the stack of INFO() scopes, growing them inside the window of
// the first test case that nests them that deep: that test would count
// more when it runs first (alone, in a child, or filtered) than in a full
// run. One unmeasured run of this test case, before any of the suite's,
// grows them first: subcases eight deep, two at each level, under INFO()s.
constexpr const char* kWarmUpName = "heapgate: doctest warm-up";

void nest_subcases(int depth) {
  if (depth == 0) return;
  DOCTEST_INFO("heapgate");
  for (int i = 0; i < 2; ++i) {
    const ::doctest::detail::Subcase subcase(i == 0 ? "a" : "b", "heapgate", depth * 2 + i);
    if (subcase) nest_subcases(depth - 1);
  }
}

void warm_up() { nest_subcases(8); }

// The warm-up run's reporter: it says nothing.
struct Quiet : ::doctest::IReporter {
  explicit Quiet(const ::doctest::ContextOptions&) {}
  void report_query(const ::doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const ::doctest::TestRunStats&) override {}
  void test_case_start(const ::doctest::TestCaseData&) override {}
  void test_case_reenter(const ::doctest::TestCaseData&) override {}
  void test_case_end(const ::doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const ::doctest::TestCaseException&) override {}
  void subcase_start(const ::doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const ::doctest::AssertData&) override {}
  void log_message(const ::doctest::MessageData&) override {}
  void test_case_skipped(const ::doctest::TestCaseData&) override {}
};

// Runs the warm-up test case alone in `context`, quietly, then gives the
// context back the command line's own options.
void run_warm_up(::doctest::Context& context, int argc, char** argv) {
  context.clearFilters();
  context.setOption("reporters", "heapgate-quiet");
  context.setOption("test-case", kWarmUpName);
  (void)context.run();  // the warm-up's own result is nobody's: it is never reported
  context.clearFilters();
  context.applyCommandLine(argc, argv);
}

// doctest runs a range of the test cases its filters pass (--first/--last,
// from 1, in its run order): a shard of `heapgate run -j N` runs its
// contiguous share of them, counted first by a quiet --count in a context of
// its own (--count is a flag a context cannot unset).
void select_shard(::doctest::Context& context, int argc, char** argv) {
  const std::optional<harness::Shard> shard = harness::shard_from_environment();
  if (!shard || shard->total <= 1) return;
  {
    ::doctest::Context counter(argc, argv);
    counter.setOption("test-case-exclude", kWarmUpName);
    const char* count[] = {"heapgate", "--count"};
    counter.applyCommandLine(2, count);
    counter.setOption("quiet", true);
    (void)counter.run();
  }
  const unsigned n = gated_run().counted_test_cases;
  const auto index = static_cast<unsigned>(shard->index);
  const auto total = static_cast<unsigned>(shard->total);
  const unsigned first = n * index / total + 1;
  const unsigned last = n * (index + 1) / total;
  if (first > last) {
    context.setOption("first", static_cast<int>(n + 1));  // past the last: none of them
    return;
  }
  context.setOption("first", static_cast<int>(first));
  context.setOption("last", static_cast<int>(last));
}

int run(int argc, char** argv) {
  const harness::Options options = harness::init(&argc, argv);
  // Registered here rather than by REGISTER_LISTENER and TEST_CASE in this
  // file: a static library's object that nothing references is dropped by
  // the linker, and its registrations with it.
  static const bool registered = [] {
    ::doctest::registerReporter<Listener>("heapgate", 0, /*isReporter=*/false);
    ::doctest::registerReporter<Quiet>("heapgate-quiet", 0, /*isReporter=*/true);
    ::doctest::detail::TestSuite suite;
    suite * "";
    ::doctest::detail::regTest(::doctest::detail::TestCase(&warm_up, "", 0, suite) * kWarmUpName);
    return true;
  }();
  (void)registered;
  DoctestRun& gated = gated_run();
  gated.warm_up_registered = true;
  std::vector<std::string> selecting;
  for (int i = 1; i < argc; ++i) {
    if (selects_tests(argv[i])) selecting.emplace_back(argv[i]);
  }
  gated.face.set_selecting_arguments(std::move(selecting));
  // doctest's console reporter is the default; another named alone replaces it.
  for (int i = 1; i < argc; ++i) {
    if (named_one_of(argv[i], {"reporters", "r"})) {
      gated.console_reporter = std::string_view(argv[i]).find("console") != std::string_view::npos;
    }
  }
  ::doctest::Context context(argc, argv);
  bool runs_tests = true;
  for (int i = 1; i < argc; ++i) runs_tests = runs_tests && !runs_no_test(argv[i]);
  if (runs_tests && options.mode != Mode::off) run_warm_up(context, argc, argv);
  // Never one of the suite's tests: not run, listed nor counted.
  context.setOption("test-case-exclude", kWarmUpName);
  if (runs_tests) select_shard(context, argc, argv);
  gated.engine.emplace(options, gated.face);
  gated.engine->program_start();
  int status = 0;
  for (int i = 0; i < options.suite_runs; ++i) {
    gated.engine->iteration_start(i);
    const int ran = context.run();
    if (ran > status) status = ran;
    gated.engine->iteration_end(i);
    // --help, --list-test-cases and the like: doctest ran nothing.
    if (context.shouldExit()) break;
  }
  gated.engine->program_end();
  if (status != 0) return status;
  return gated.face.failures() > 0 ? 1 : 0;
}

}  // namespace
}  // namespace doctest_face

int run_doctest(int argc, char** argv) { return doctest_face::run(argc, argv); }

}  // namespace heapgate
