// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The doctest face: a doctest listener that drives the engine
// (heapgate/face.h), and the Face that answers for doctest. The window of a
// test case opens at test_case_start() and closes at test_case_end();
// doctest calls its listeners before its reporters, so nothing it prints is
// inside.
#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "heapgate/doctest.h"
#include "heapgate/face.h"

namespace heapgate::doctest {
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
bool selects_tests(std::string_view argument) {
  static const char* const kSelecting[] = {
      "test-case",   "tc", "test-case-exclude",   "tce", "test-suite", "ts", "test-suite-exclude", "tse",
      "source-file", "sf", "source-file-exclude", "sfe", "subcase",    "sc", "subcase-exclude",    "sce"};
  while (!argument.empty() && argument.front() == '-') argument.remove_prefix(1);
  if (argument.rfind("dt-", 0) == 0) argument.remove_prefix(3);
  const std::size_t equals = argument.find('=');
  if (equals == std::string_view::npos) return false;
  argument = argument.substr(0, equals);
  for (const char* name : kSelecting) {
    if (argument == name) return true;
  }
  return false;
}

class DoctestFace final : public harness::Face {
 public:
  const char* framework() const noexcept override { return "doctest"; }

  // doctest counts a test's failures while it runs, not after it ended: the
  // failure is printed where a compiler would put it, and run()'s exit
  // status says it.
  void add_failure(const std::string& file, int line, const std::string& text) override {
    ++failures_;
    if (file.empty()) {
      std::fprintf(stderr, "heapgate: %s%s\n", current_.empty() ? "" : (current_ + ": ").c_str(), text.c_str());
    } else {
      std::fprintf(stderr, "%s:%d: FAILED (heapgate) %s:\n%s\n", file.c_str(), line, current_.c_str(), text.c_str());
    }
    std::fflush(stderr);
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

  bool is_framework_stack(const StackSample& stack) const override { return harness::is_framework_only_stack(stack); }

  void set_selecting_arguments(std::vector<std::string> arguments) { selecting_arguments_ = std::move(arguments); }
  // The names are the run's, kept for its children. A test seen before
  // (a growth child's repetitions, inside its window) allocates nothing:
  // its name fits the buffer ended() kept, and try_emplace() finds it.
  void started(const harness::TestCase& test) {
    current_ = test.name;
    names_.try_emplace(test.name, test.suite, test.test);
  }
  void ended() { current_.clear(); }
  int failures() const noexcept { return failures_; }

 private:
  std::vector<std::string> selecting_arguments_;
  std::map<std::string, std::pair<std::string, std::string>> names_;  // name -> (suite, test case)
  std::string current_;
  int failures_ = 0;
};

// What outlives each Context::run(): doctest makes its listeners anew for
// every run, and a re-run child runs the suite several times.
struct DoctestRun {
  DoctestFace face;
  std::optional<harness::TestEngine> engine;
  std::optional<harness::TestCase> current;
  const ::doctest::TestCaseData* current_data = nullptr;  // whose name `current` is
};

DoctestRun& gated_run() {
  static DoctestRun run;
  return run;
}

struct Listener : ::doctest::IReporter {
  explicit Listener(const ::doctest::ContextOptions&) {}

  void report_query(const ::doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const ::doctest::TestRunStats&) override {}

  void test_case_start(const ::doctest::TestCaseData& data) override {
    DoctestRun& run = gated_run();
    if (!run.engine) return;
    // Kept while the same test case repeats: a growth child's one window
    // spans the runs, and a new name each time would be blocks live in it.
    if (run.current_data == &data && run.current) {
      run.face.started(*run.current);
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
    run.engine->test_start(*run.current);
  }

  void test_case_reenter(const ::doctest::TestCaseData&) override {}

  void test_case_end(const ::doctest::CurrentTestCaseStats& stats) override {
    DoctestRun& run = gated_run();
    if (!run.engine || !run.current) return;
    harness::TestEnd end;
    end.failed = !stats.testCaseSuccess;
    run.engine->test_end(*run.current, end);
    run.face.ended();
  }

  void test_case_exception(const ::doctest::TestCaseException&) override {}
  void subcase_start(const ::doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const ::doctest::AssertData&) override {}
  void log_message(const ::doctest::MessageData&) override {}
  void test_case_skipped(const ::doctest::TestCaseData&) override {}
};

}  // namespace

int run(int argc, char** argv) {
  const harness::Options options = harness::init(&argc, argv);
  // Registered here rather than by REGISTER_LISTENER in this file: a static
  // library's object that nothing references is dropped by the linker, and
  // its registration with it.
  static const int registered = ::doctest::registerReporter<Listener>("heapgate", 0, /*isReporter=*/false);
  (void)registered;
  DoctestRun& gated = gated_run();
  std::vector<std::string> selecting;
  for (int i = 1; i < argc; ++i) {
    if (selects_tests(argv[i])) selecting.emplace_back(argv[i]);
  }
  gated.face.set_selecting_arguments(std::move(selecting));
  ::doctest::Context context(argc, argv);
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

}  // namespace heapgate::doctest
