// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The GoogleTest listener: one ProfileScope per test, then budgets, leaks and
// the baseline decide a verdict; a failing test is re-run alone in exact mode
// in a child process so its failure names the call sites.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/diff.h"
#include "heapgate/gtest.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "heapgate/report.h"
#include "heapgate/symbolizer.h"
#include "heapgate/verdict.h"
#include "alloc_hooks.h"
#include "sys/sys.h"

namespace heapgate::gtest {
namespace {

constexpr std::size_t kMetricCount = 5;

// What the current test asked for through the HEAPGATE_* macros. Plain data,
// so setting a budget never allocates inside the measured scope.
struct TestRequests {
  std::array<std::uint64_t, kMetricCount> limits{};
  std::array<bool, kMetricCount> limited{};
  int leak_check = -1;  // -1: the run's default; 0: leaks allowed; 1: leaks are failures
};
TestRequests g_requests;

std::string base_name(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string full_name(const ::testing::TestInfo& info) {
  return std::string(info.test_suite_name()) + "." + info.name();
}

// `leak:<pattern>` lines; '#' starts a comment.
Result<std::vector<std::string>> read_suppressions(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) return fail(text.error());
  std::vector<std::string> patterns;
  std::istringstream lines(*text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
    if (line.rfind("leak:", 0) != 0 || line.size() == 5) {
      return fail(make_error(ErrorCode::parse_error, path + ":" + std::to_string(number),
                             "expected \"leak:<pattern>\", got \"" + line + "\"",
                             "write one leak:<function or file pattern> per line"));
    }
    patterns.push_back(line.substr(5));
  }
  return patterns;
}

bool suppressed(const StackSummary& stack, const std::vector<std::string>& patterns) {
  for (const auto& frame : stack.frames) {
    for (const auto& pattern : patterns) {
      if (frame.find(pattern) != std::string::npos) return true;
    }
  }
  return false;
}

std::string format_count(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

// A stack made by GoogleTest for every test rather than by the test: the
// fixture object itself ("[framework]") or the flag saver built by the
// generated test class's constructor (after std:: library frames).
bool is_gtest_overhead(const StackSummary& stack) {
  bool seen_own = false;
  for (const auto& frame : stack.frames) {
    if (frame.rfind("std::", 0) == 0 && !seen_own) continue;
    seen_own = true;
    const bool generated_ctor = frame.size() > 7 && frame.compare(frame.size() - 7, 7, "_Test()") == 0 &&
                                frame.find("_Test::") != std::string::npos;
    if (frame != "[framework]" && !generated_ctor) return false;
  }
  return true;
}

// The stacks that explain `verdict`, most important first, at most `limit`.
std::vector<StackSummary> explaining_stacks(std::vector<StackSummary> stacks, Verdict verdict, std::size_t limit) {
  stacks.erase(std::remove_if(stacks.begin(), stacks.end(), is_gtest_overhead), stacks.end());
  if (verdict == Verdict::leaked) {
    stacks.erase(std::remove_if(stacks.begin(), stacks.end(),
                                [](const StackSummary& s) { return s.delta_live_objects <= 0; }),
                 stacks.end());
    std::stable_sort(stacks.begin(), stacks.end(), [](const StackSummary& a, const StackSummary& b) {
      return a.delta_live_bytes > b.delta_live_bytes;
    });
  } else {
    std::stable_sort(stacks.begin(), stacks.end(), [](const StackSummary& a, const StackSummary& b) {
      return a.delta_accum_objects > b.delta_accum_objects;
    });
  }
  if (stacks.size() > limit) stacks.resize(limit);
  return stacks;
}

// A C++ name without template arguments, for messages: "std::map<…>::find(int const&)".
std::string compact_name(const std::string& name) {
  std::string out;
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    // "operator<", "operator<<", "operator<=" are names, not template brackets.
    if (c == '<' && i >= 8 && name.compare(i - 8, 8, "operator") == 0) {
      out += c;
      continue;
    }
    if (c == '<') {
      if (depth++ == 0) out += "<\u2026";
      continue;
    }
    if (c == '>' && depth > 0) {
      if (--depth == 0) out += '>';
      continue;
    }
    if (depth == 0) out += c;
  }
  return out;
}

std::string render_stacks(const std::vector<StackSummary>& stacks, Verdict verdict) {
  std::string out;
  for (const auto& s : stacks) {
    if (verdict == Verdict::leaked) {
      out += "    " + format_count(s.delta_live_objects) + " blocks, " + format_count(s.delta_live_bytes) +
             " B still live, allocated at:\n";
    } else {
      out += "    " + format_count(s.delta_accum_objects) + " allocations, " + format_count(s.delta_accum_bytes) +
             " B, at:\n";
    }
    for (const auto& frame : s.frames) out += "      " + compact_name(frame) + "\n";
  }
  return out;
}

// Stacks of one exact-mode scope, as report summaries: every stack with its
// own counts (a diff against nothing), so leaks and allocations both show.
std::vector<StackSummary> summarize_profile(const std::string& profile_path, Symbolizer& symbolizer,
                                            std::size_t limit) {
  std::vector<StackSummary> out;
  auto profile = read_profile(profile_path);
  if (!profile) return out;
  NormalizedProfile normalized = normalize_profile(*profile, symbolizer);
  ProfileDiff all = diff_profiles(NormalizedProfile{}, normalized);
  // Keep the top stacks by live bytes and by allocations: callers pick per verdict.
  std::vector<StackDelta> by_live = all.entries;
  std::vector<StackDelta> by_count = all.entries;
  std::stable_sort(by_count.begin(), by_count.end(), [](const StackDelta& a, const StackDelta& b) {
    return a.delta.accum_objects > b.delta.accum_objects;
  });
  std::set<const StackDelta*> chosen;
  auto take = [&](const std::vector<StackDelta>& from) {
    for (std::size_t i = 0; i < from.size() && i < limit; ++i) {
      StackSummary s;
      for (const auto& f : from[i].frames) s.frames.push_back(f.str());
      s.delta_live_objects = from[i].delta.live_objects;
      s.delta_live_bytes = from[i].delta.live_bytes;
      s.delta_accum_objects = from[i].delta.accum_objects;
      s.delta_accum_bytes = from[i].delta.accum_bytes;
      bool duplicate = std::any_of(out.begin(), out.end(), [&](const StackSummary& o) { return o.frames == s.frames; });
      if (!duplicate) out.push_back(std::move(s));
    }
  };
  take(by_live);
  take(by_count);
  return out;
}

// The --gtest_internal_run_death_test flag, set in a death test's child process.
std::string death_test_flag() {
#ifdef GTEST_FLAG_GET
  return GTEST_FLAG_GET(internal_run_death_test);
#else
  return ::testing::GTEST_FLAG(internal_run_death_test);
#endif
}

// GoogleTest's own cost per test: testing::Test's constructor saves every
// gtest flag (one allocation, plus a copy of each flag string too long for
// the small-string buffer — so it depends on e.g. the --gtest_filter text) and
// its destructor frees them. A Probe built on the stack costs exactly that.
struct Probe : ::testing::Test {
  void TestBody() override {}
};

Metrics measure_gtest_overhead(Mode mode) {
  if (mode == Mode::off) return {};
  ProfileScope scope{"heapgate.gtest-overhead", ScopeOptions{Mode::counters}};
  { Probe probe; }
  auto r = scope.finish();
  return r ? from_scope(*r) : Metrics{};
}

std::uint64_t minus(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

class Listener : public ::testing::EmptyTestEventListener {
 public:
  explicit Listener(Options options) : options_(std::move(options)) {}

  void OnTestProgramStart(const ::testing::UnitTest&) override {
    child_ = options_.child_iteration > 0;
    // A death test's child process runs this binary's tests too; it must
    // neither write reports nor touch baselines.
    death_test_child_ = !death_test_flag().empty();
    binary_path_ = sys::self_exe_path().value_or("");
    binary_name_ = base_name(binary_path_);
    if (options_.mode != Mode::off) {
      if (auto usable = allocator_status().check(options_.mode); !usable) {
        unavailable_reason_ = usable.error().message();
        effective_mode_ = Mode::off;
      } else {
        effective_mode_ = options_.mode;
      }
    } else {
      unavailable_reason_ = "heapgate is switched off (--heapgate_mode=off)";
    }
    gtest_overhead_ = measure_gtest_overhead(effective_mode_);
    if (!options_.suppressions_path.empty()) {
      auto patterns = read_suppressions(options_.suppressions_path);
      if (!patterns) {
        setup_error_ = patterns.error().message();
      } else {
        suppressions_ = std::move(*patterns);
      }
    }
    if (!options_.baselines_dir.empty() && !child_ && !death_test_child_) {
      baseline_path_ = options_.baselines_dir + "/" + binary_name_ + ".json";
      auto loaded = read_baseline(baseline_path_);
      if (!loaded) {
        setup_error_ = loaded.error().message();
      } else {
        baseline_ = std::move(*loaded);
        baseline_.binary = binary_name_;
      }
    }
    if (!options_.report_dir.empty() && !death_test_child_) {
      RunInfo run;
      run.binary = binary_name_;
      run.mode = std::string(to_string(effective_mode_));
      run.jemalloc_version = allocator_status().version;
      run.strict = options_.strict;
      run.unavailable_reason = effective_mode_ == Mode::off ? unavailable_reason_ : "";
      const char* total = std::getenv("GTEST_TOTAL_SHARDS");
      const char* index = std::getenv("GTEST_SHARD_INDEX");
      std::string stem = binary_name_;
      if (total != nullptr && index != nullptr) {
        run.total_shards = std::atoi(total);
        run.shard_index = std::atoi(index);
        stem += ".shard-" + std::string(index) + "-of-" + std::string(total);
      }
      writer_.emplace(options_.report_dir, stem, run);
    }
  }

  void OnTestIterationStart(const ::testing::UnitTest&, int iteration) override { iteration_ = iteration; }

  void OnTestStart(const ::testing::TestInfo& info) override {
    g_requests = TestRequests{};
    if (effective_mode_ == Mode::off || !recording()) return;
    // The name is built before the scope opens, so its allocation is not the test's.
    scope_.emplace(full_name(info), ScopeOptions{effective_mode_});
    // GoogleTest's next step is `new` of the fixture object: its allocation, not the test's.
    detail::skip_next_allocation();
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    std::optional<Result<ScopeResult>> measured;
    std::uint64_t fixture_bytes = 0;
    if (scope_) {
      measured.emplace(scope_->finish());
      scope_.reset();
      fixture_bytes = detail::take_skipped_bytes();
    }
    if (!recording() || death_test_child_) return;
    const ::testing::TestResult& result = *info.result();
    if (result.Skipped()) return;

    TestRecord record;
    record.name = full_name(info);
    record.suite = info.test_suite_name();
    record.test = info.name();
    record.file = info.file() != nullptr ? info.file() : "";
    record.line = info.line();
    record.mode = effective_mode_;
    record.duration_ms = static_cast<double>(result.elapsed_time());
    record.gtest_failed = result.Failed();
    for (std::size_t i = 0; i < kMetricCount; ++i) {
      if (g_requests.limited[i]) record.budgets[std::string(to_string(static_cast<MetricName>(i)))] = g_requests.limits[i];
    }

    if (!setup_error_.empty()) {
      ADD_FAILURE() << "heapgate: " << setup_error_;
      record.verdict = Verdict::unavailable;
      record.message = setup_error_;
      finish_record(std::move(record));
      return;
    }
    if (!measured || !*measured) {
      record.verdict = Verdict::unavailable;
      record.message = measured ? measured->error().message() : unavailable_reason_;
      if (options_.strict) ADD_FAILURE() << "heapgate (strict): " << record.message;
      finish_record(std::move(record));
      return;
    }
    const ScopeResult& scope = **measured;
    record.metrics = from_scope(scope);
    // GoogleTest's own per-test allocations are not the test's (docs/design.md §6).
    record.metrics.allocations = minus(record.metrics.allocations, gtest_overhead_.allocations);
    record.metrics.allocated_bytes = minus(record.metrics.allocated_bytes, gtest_overhead_.allocated_bytes);
    record.metrics.peak_bytes = minus(record.metrics.peak_bytes, gtest_overhead_.allocated_bytes);
    if (scope.profile_path.empty() == false && fixture_bytes > 0) {
      // The hooks skipped the fixture object; the heap profile recorded it.
      record.metrics.allocations = minus(record.metrics.allocations, 1);
      record.metrics.allocated_bytes = minus(record.metrics.allocated_bytes, fixture_bytes);
    }
    record.estimated = scope.estimated;
    if (!scope.profile_path.empty()) record.profiles.push_back(scope.profile_path);

    if (child_) {
      // A re-run child only collects the stacks its parent will show.
      if (!scope.profile_path.empty()) {
        record.stacks = summarize_profile(scope.profile_path, symbolizer(), options_.top_stacks * 2);
      }
      finish_record(std::move(record));
      return;
    }

    decide(record);
    finish_record(std::move(record));
  }

  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    if (death_test_child_) return;
    if (writer_ && !child_ && !baseline_path_.empty() && baseline_.exists && whole_suite_ran()) {
      // Baseline entries of tests that no longer exist: reported, not failed,
      // so a removed test is noticed and its entry can be dropped on review.
      for (const auto& [name, entry] : baseline_.tests) {
        if (seen_.count(name) != 0) continue;
        TestRecord missing;
        missing.name = name;
        missing.suite = name.substr(0, name.find('.'));
        missing.test = name.find('.') == std::string::npos ? "" : name.substr(name.find('.') + 1);
        missing.mode = entry.mode;
        missing.baseline = entry.metrics;
        missing.verdict = Verdict::missing;
        missing.message = "in " + baseline_path_ + " but not run by this binary";
        (void)writer_->add(std::move(missing));
      }
    }
    if (writer_) {
      if (auto done = writer_->finish(); !done) {
        std::fprintf(stderr, "heapgate: %s\n", done.error().message().c_str());
      }
    }
    if (child_ || baseline_path_.empty()) return;
    const bool create = !baseline_.exists;
    if ((options_.update_baselines || create) && !updates_.empty() && std::getenv("GTEST_TOTAL_SHARDS") != nullptr) {
      // Shards write one baseline file concurrently, each with its own tests:
      // the last rename would win and drop the others' entries.
      std::fprintf(stderr,
                   "heapgate: sharded run: %s not %s; accept the merged report with "
                   "`heapgate accept` (heapgate run does this for a new baseline)\n",
                   baseline_path_.c_str(), create ? "created" : "updated");
      return;
    }
    if ((options_.update_baselines || create) && !updates_.empty()) {
      for (auto& [name, entry] : updates_) baseline_.tests[name] = entry;
      if (auto written = write_baseline(baseline_path_, baseline_); !written) {
        std::fprintf(stderr, "heapgate: %s\n", written.error().message().c_str());
      } else {
        std::fprintf(stderr, "heapgate: %s %s (%zu tests)\n", create ? "created" : "updated",
                     baseline_path_.c_str(), updates_.size());
      }
    }
  }

 private:
  // Only an unfiltered, unsharded run can tell that a test is missing.
  static bool whole_suite_ran() {
#ifdef GTEST_FLAG_GET
    const std::string filter = GTEST_FLAG_GET(filter);
#else
    const std::string filter = ::testing::GTEST_FLAG(filter);
#endif
    return filter == "*" && std::getenv("GTEST_TOTAL_SHARDS") == nullptr;
  }

  // The parent records gtest's first iteration; a re-run child the one it was asked for.
  bool recording() const {
    if (options_.child_iteration > 0) return iteration_ + 1 == options_.child_iteration;
    return iteration_ == 0;
  }

  Symbolizer& symbolizer() {
    if (!symbolizer_) symbolizer_.emplace();
    return *symbolizer_;
  }

  // Budgets, leaks, then the baseline; the first failing check gives the verdict.
  void decide(TestRecord& record) {
    const Metrics& m = record.metrics;
    if (record.gtest_failed) {
      // GoogleTest keeps a failed assertion's message and result records until
      // the test's results are printed: they would read as the test's leak.
      // The test has failed already; heapgate records its numbers but judges nothing.
      record.verdict = Verdict::pass;
      record.message = "not gated: the test failed its own assertions\n";
      return;
    }
    std::string problems;
    Verdict verdict = Verdict::pass;
    for (std::size_t i = 0; i < kMetricCount; ++i) {
      if (!g_requests.limited[i]) continue;
      auto metric = static_cast<MetricName>(i);
      std::uint64_t value = get(m, metric);
      if (value > g_requests.limits[i]) {
        verdict = Verdict::over_budget;
        problems += std::string(to_string(metric)) + " " + std::to_string(value) + " is over the budget of " +
                    std::to_string(g_requests.limits[i]) + "\n";
      }
    }
    const bool check_leaks = g_requests.leak_check == -1 ? options_.check_leaks : g_requests.leak_check == 1;
    bool leaked = check_leaks && m.live_allocations > 0;

    const BaselineEntry* base = nullptr;
    if (!baseline_path_.empty()) {
      auto it = baseline_.tests.find(record.name);
      if (it != baseline_.tests.end()) base = &it->second;
    }
    Comparison comparison;  // pass, when no baselines are in use
    if (!baseline_path_.empty()) comparison = compare_to_baseline(m, base, Tolerances::for_mode(record.mode), record.mode);
    record.deltas = comparison.deltas;
    if (base != nullptr) record.baseline = base->metrics;

    // A leak is what recurs: a re-run that runs the test twice tells a real
    // leak from a lazily initialised static, which allocates only once.
    std::vector<StackSummary> leak_stacks;
    std::vector<std::string> explain_profiles;  // the exact re-run's heap profiles
    if (leaked) {
      auto child = rerun(record.name, /*iteration=*/2);
      if (child) {
        if (child->metrics.live_allocations == 0) {
          leaked = false;
          record.message += "one-time initialization: " + std::to_string(m.live_allocations) + " blocks (" +
                            std::to_string(m.live_bytes) + " B) stay allocated after the first run only; not a leak\n";
        } else {
          leak_stacks = child->stacks;
          explain_profiles = child->profiles;
          bool all_suppressed = !suppressions_.empty() && !leak_stacks.empty();
          for (const auto& s : explaining_stacks(leak_stacks, Verdict::leaked, SIZE_MAX)) {
            if (!suppressed(s, suppressions_)) all_suppressed = false;
          }
          if (all_suppressed) {
            leaked = false;
            record.message += "leak suppressed by " + options_.suppressions_path + "\n";
          }
        }
      }
    }
    if (leaked && verdict == Verdict::pass) {
      verdict = Verdict::leaked;
    } else if (leaked) {
      problems += "";
    }
    if (leaked) {
      problems += "leaked " + std::to_string(m.live_allocations) + " blocks (" + std::to_string(m.live_bytes) +
                  " B) still allocated when the test ended\n";
    }
    if (verdict == Verdict::pass) {
      verdict = comparison.verdict;
      if (verdict == Verdict::regressed) problems += comparison.explanation + "\n";
    }
    record.verdict = verdict;

    // Updating baselines: from tests that passed their own assertions only.
    if ((options_.update_baselines || !baseline_.exists) && !record.gtest_failed && !baseline_path_.empty()) {
      BaselineEntry entry;
      entry.metrics = m;
      entry.mode = record.mode;
      if (base != nullptr) entry.tolerance = base->tolerance;
      updates_[record.name] = entry;
      if (record.verdict == Verdict::regressed || record.verdict == Verdict::improved) record.verdict = Verdict::pass;
      // "new" replaces only a baseline verdict: a leak or a budget fails a new test too.
      if (base == nullptr && record.verdict == Verdict::pass) record.verdict = Verdict::new_test;
      if (record.verdict == Verdict::pass && verdict == Verdict::regressed) problems.clear();
    }

    if (!is_failure(record.verdict, options_.strict)) {
      if (record.verdict == Verdict::improved) record.message += comparison.explanation;
      return;
    }

    // Explain: stacks from this process (exact mode) or from an exact re-run.
    std::vector<StackSummary> stacks;
    if (record.verdict == Verdict::leaked && !leak_stacks.empty()) {
      stacks = leak_stacks;
    } else if (!record.profiles.empty()) {
      stacks = summarize_profile(record.profiles.front(), symbolizer(), options_.top_stacks * 2);
    } else {
      auto child = rerun(record.name, /*iteration=*/1);
      if (child) {
        stacks = child->stacks;
        explain_profiles = child->profiles;
      }
    }
    record.stacks = explaining_stacks(stacks, record.verdict, options_.top_stacks);
    const bool from_rerun = record.profiles.empty();
    record.profiles.insert(record.profiles.end(), explain_profiles.begin(), explain_profiles.end());
    std::string message = "heapgate: " + record.name + " " + std::string(to_string(record.verdict)) + " (" +
                          std::string(to_string(record.mode)) + " mode)\n" + problems;
    if (!record.stacks.empty()) {
      message += "  top stacks (" + std::string(from_rerun ? "exact re-run" : "this run") + "):\n" +
                 render_stacks(record.stacks, record.verdict);
    } else if (options_.explain) {
      message += "  (no stacks: " + rerun_problem_ + ")\n";
    }
    record.message = message + record.message;
    ADD_FAILURE_AT(record.file.empty() ? "unknown" : record.file.c_str(), record.line) << message;
  }

  // Runs this one test again in a child process in exact mode (iteration
  // `iteration` of `--gtest_repeat=iteration`) and returns its record.
  std::optional<TestRecord> rerun(const std::string& name, int iteration) {
    rerun_problem_.clear();
    if (!options_.explain) {
      rerun_problem_ = "--heapgate_explain=false";
      return std::nullopt;
    }
    if (binary_path_.empty()) {
      rerun_problem_ = "cannot find this executable's path";
      return std::nullopt;
    }
    auto dir = sys::make_private_dir("heapgate-rerun.");
    if (!dir) {
      rerun_problem_ = dir.error().message();
      return std::nullopt;
    }
    sys::ProcessOptions process;
    process.extra_env = {std::string("MALLOC_CONF=") + kExactMallocConf};
    process.unset_env = {"GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX", "HEAPGATE_MODE", "HEAPGATE_REPORT",
                         "HEAPGATE_BASELINES", "HEAPGATE_UPDATE_BASELINES", "GTEST_OUTPUT"};
    process.timeout = std::chrono::minutes(10);
    std::vector<std::string> argv = {binary_path_,
                                     "--gtest_filter=" + name,
                                     "--gtest_repeat=" + std::to_string(iteration),
                                     "--gtest_also_run_disabled_tests",
                                     "--heapgate_mode=exact",
                                     "--heapgate_report=" + *dir,
                                     "--heapgate_internal_child=" + std::to_string(iteration),
                                     "--heapgate_top_stacks=" + std::to_string(options_.top_stacks)};
    auto ran = sys::run_process(argv, process);
    if (!ran) {
      rerun_problem_ = ran.error().message();
      return std::nullopt;
    }
    auto report = read_report(*dir + "/" + binary_name_ + ".json");
    if (!report) {
      rerun_problem_ = "the exact re-run wrote no report (exit " + std::to_string(ran->exit_code) + "): " +
                       ran->stderr_text.substr(0, 500);
      return std::nullopt;
    }
    for (auto& t : report->tests) {
      if (t.name == name) return std::move(t);
    }
    rerun_problem_ = "the exact re-run did not run " + name;
    return std::nullopt;
  }

  void finish_record(TestRecord record) {
    seen_.insert(record.name);
    // Metrics become <testcase> attributes in gtest's own XML (style.md fact 1).
    if (record.verdict != Verdict::unavailable) {
      for (std::size_t i = 0; i < kMetricCount; ++i) {
        auto metric = static_cast<MetricName>(i);
        ::testing::Test::RecordProperty("heapgate." + std::string(to_string(metric)),
                                        std::to_string(get(record.metrics, metric)));
      }
    }
    ::testing::Test::RecordProperty("heapgate.verdict", std::string(to_string(record.verdict)));
    if (writer_) {
      if (auto added = writer_->add(std::move(record)); !added) {
        std::fprintf(stderr, "heapgate: %s\n", added.error().message().c_str());
      }
    }
  }

  Options options_;
  Mode effective_mode_ = Mode::off;
  std::string unavailable_reason_;
  std::string setup_error_;
  bool child_ = false;
  bool death_test_child_ = false;
  std::string binary_path_;
  std::string binary_name_;
  std::string baseline_path_;
  Baseline baseline_;
  std::map<std::string, BaselineEntry> updates_;
  std::vector<std::string> suppressions_;
  std::optional<ReportWriter> writer_;
  std::optional<ProfileScope> scope_;
  std::optional<Symbolizer> symbolizer_;
  std::string rerun_problem_;
  int iteration_ = 0;
  Metrics gtest_overhead_;
  std::set<std::string> seen_;  // tests recorded in this run
};

}  // namespace

void install_listener(const Options& options) {
  // Appended last: GoogleTest calls OnTestEnd in reverse order, so heapgate's
  // runs before the printer's and a heapgate failure shows as the test's.
  ::testing::UnitTest::GetInstance()->listeners().Append(new Listener(options));
}

void limit(MetricName metric, std::uint64_t value) noexcept {
  auto i = static_cast<std::size_t>(metric);
  if (i >= kMetricCount) return;
  g_requests.limits[i] = value;
  g_requests.limited[i] = true;
}

void check_leaks(bool enabled) noexcept { g_requests.leak_check = enabled ? 1 : 0; }

}  // namespace heapgate::gtest
