// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The GoogleTest listener: one ProfileScope per test, then budgets, leaks and
// the baseline decide a verdict; a failing test is re-run alone in exact mode
// in a child process so its failure names the call sites.
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "explainers.h"
#include "gtest_flags.h"
#include "run_guard.h"
#include "heapgate/baseline.h"
#include "heapgate/baseline_writer.h"
#include "heapgate/explain.h"
#include "heapgate/gate.h"
#include "heapgate/gtest.h"
#include "heapgate/integration.h"
#include "heapgate/journal.h"
#include "heapgate/profile_scope.h"
#include "heapgate/report_files.h"
#include "heapgate/suppressions.h"
#include "heapgate/symbolizer.h"
#include "heapgate/symbols_sidecar.h"
#include "heapgate/sys.h"

namespace heapgate::gtest {
namespace {

constexpr std::size_t kMetricCount = 5;

// What the current test asked for through the HEAPGATE_* macros. Plain data,
// so setting a budget never allocates inside the measured scope.
struct TestRequests {
  std::array<std::uint64_t, kMetricCount> limits{};
  std::array<bool, kMetricCount> limited{};
  int leak_check = -1;  // -1: the run's default; 0: leaks allowed; 1: leaks are failures
  bool gate_call_sites = false;
};
TestRequests g_requests;

std::string base_name(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string full_name(const ::testing::TestInfo& info) {
  return std::string(info.test_suite_name()) + "." + info.name();
}

// A test's name as a file name: parameterized names hold '/'.
std::string file_stem_of(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 100)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? std::string("test") : out;
}

// Moves a file, across file systems too ($TMPDIR to a report directory).
bool move_file(const std::string& from, const std::string& to, std::string& why) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (!ec) return true;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    why = ec.message();
    return false;
  }
  std::filesystem::remove(from, ec);
  return true;
}

// The --gtest_internal_run_death_test flag, set in a death test's child process.
std::string death_test_flag() {
  return HEAPGATE_GTEST_FLAG(internal_run_death_test);
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
    child_ = options_.child_iteration > 0 || options_.growth_child > 0;
    // A death test's child process runs this binary's tests too; it must
    // neither write reports nor touch baselines.
    death_test_child_ = !death_test_flag().empty();
    binary_path_ = sys::self_exe_path().value_or("");
    binary_name_ = base_name(binary_path_);
    if (!death_test_child_) {
      keep_dir_ = !options_.profiles_dir.empty() ? options_.profiles_dir
                  : !options_.report_dir.empty() ? options_.report_dir + "/profiles/" + binary_name_
                                                 : std::string();
    }
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
    if (cannot_measure()) std::fprintf(stderr, "heapgate: nothing is measured: %s\n", unavailable_reason_.c_str());
    // A setup error stops the run before any test: a gate that cannot read its
    // suppressions or baseline must not pass or fail tests for the wrong reason.
    if (!options_.suppressions_path.empty()) {
      auto suppressions = read_suppressions(options_.suppressions_path);
      if (!suppressions) setup_failed(suppressions.error());
      suppressions_ = std::move(*suppressions);
    }
    if (!options_.baselines_dir.empty() && !child_ && !death_test_child_) {
      baseline_path_ = options_.baselines_dir + "/" + binary_name_ + ".json";
      auto loaded = read_baseline(baseline_path_);
      if (!loaded) setup_failed(loaded.error());
      baseline_ = std::move(*loaded);
      baseline_.binary = binary_name_;
    }
    fingerprint_ = runtime_fingerprint();
    HEAPGATE_ADD_BUILD_FINGERPRINT(fingerprint_);
    run_.run.fingerprint = fingerprint_;
    if (baseline_.exists && options_.fingerprint != FingerprintCheck::ignore) {
      environment_change_ = describe_fingerprint_change(fingerprint_differences(baseline_.fingerprint, fingerprint_));
      if (!environment_change_.empty()) {
        std::fprintf(stderr, "heapgate: %s: %s (--heapgate_fingerprint=%s)\n", baseline_path_.c_str(),
                     environment_change_.c_str(), std::string(to_string(options_.fingerprint)).c_str());
      }
    }
    if (!options_.report_dir.empty() && !death_test_child_) {
      RunInfo run;
      run.binary = binary_name_;
      run.mode = effective_mode_;
      run.jemalloc_version = allocator_status().version;
      run.fingerprint = fingerprint_;
      run.strict = options_.strict;
      run.unavailable_reason = effective_mode_ == Mode::off ? unavailable_reason_ : "";
      run.accepting = accepting();
      const char* total = std::getenv("GTEST_TOTAL_SHARDS");
      const char* index = std::getenv("GTEST_SHARD_INDEX");
      if (total != nullptr && index != nullptr) {
        run.total_shards = std::atoi(total);
        run.shard_index = std::atoi(index);
      }
      writer_.emplace(options_.report_dir, report_stem(binary_name_, run.shard_index, run.total_shards), run);
      // A CI job that asked for a report must not pass without one.
      if (writer_->error()) report_error_ = writer_->error()->message();
    }
    // A test that crashes, hangs, exits or is killed ends the run, never its record.
    if (!child_ && !death_test_child_) {
      RunGuardOptions guard;
      guard.journal_fd = writer_ ? writer_->journal_fd() : -1;
      guard.timeout = std::chrono::seconds(options_.test_timeout_seconds);
      guard.finish_interrupted = [this](TestRecord record) { finish_interrupted(std::move(record)); };
      start_run_guard(std::move(guard));
    }
  }

  void OnTestIterationStart(const ::testing::UnitTest&, int iteration) override { iteration_ = iteration; }

  // GoogleTest decides the exit status after each iteration: a failure added
  // here, outside any test, fails the run.
  void OnTestIterationEnd(const ::testing::UnitTest&, int iteration) override {
    if (iteration != 0 || child_ || death_test_child_) return;
    if (!report_error_.empty()) {
      ADD_FAILURE() << "heapgate: no report: " << report_error_;
      // Also where `heapgate run` and a reader of stderr look for it.
      std::fprintf(stderr, "heapgate: no report: %s\n", report_error_.c_str());
    }
    if (options_.fingerprint == FingerprintCheck::strict && !environment_change_.empty()) {
      ADD_FAILURE() << "heapgate: " << environment_change_
                    << "; fix: record the baselines in this environment (--heapgate_update_baselines or heapgate "
                       "accept), or run with --heapgate_fingerprint=warn";
    }
  }

  void OnTestStart(const ::testing::TestInfo& info) override {
    test_started_ = std::chrono::steady_clock::now();
    g_requests = TestRequests{};
    if (!child_ && !death_test_child_) guard_test_started(full_name(info));
    if (effective_mode_ == Mode::off || !recording()) return;
    // A growth child keeps one scope open across every run of the test.
    if (options_.growth_child > 0 && iteration_ > 0) return;
    // The name and the dump's path are built before the scope opens, so their
    // allocations are not the test's. Without a directory to keep it in, the
    // dump goes to ProfileScope's own temp directory, removed at exit.
    ScopeOptions scope_options{effective_mode_};
    const bool dumps = effective_mode_ == Mode::exact || effective_mode_ == Mode::sampled;
    if (dumps && !death_test_child_ && keep_dir_ready()) {
      scope_options.profile_path = new_profile_path(file_stem_of(full_name(info)));
    }
    scope_.emplace(full_name(info), std::move(scope_options));
    // GoogleTest's next step is `new` of the fixture object: its allocation, not the test's.
    detail::skip_next_allocation();
    // The clock starts after heapgate's own setup, which is not the test's time.
    test_started_ = std::chrono::steady_clock::now();
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    // TestResult::elapsed_time() counts whole milliseconds, 0 for most unit
    // tests; the report wants their time.
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - test_started_;
    if (!child_ && !death_test_child_) guard_test_ended();
    std::optional<Result<ScopeResult>> measured;
    std::uint64_t fixture_bytes = 0;
    if (options_.growth_child > 0 && scope_) {
      // What all runs so far left live; heapgate's own bookkeeping stays out.
      detail::HookSuppressor suppress;
      const ProfileScope::Live live = scope_->live();
      growth_.live_allocations.push_back(live.allocations);
      growth_.live_bytes.push_back(live.bytes);
      if (iteration_ + 1 < options_.growth_child) return;
    }
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
    record.duration_ms = elapsed.count();
    record.gtest_failed = result.Failed();
    for (std::size_t i = 0; i < kMetricCount; ++i) {
      if (g_requests.limited[i]) record.budgets[std::string(to_string(static_cast<MetricName>(i)))] = g_requests.limits[i];
    }

    if (!measured || !*measured) {
      Observation nothing;
      nothing.unavailable_reason = measured ? measured->error().message() : unavailable_reason_;
      GatePolicy policy;
      policy.strict = options_.strict;
      apply(judge(nothing, nullptr, policy), record);
      if (is_failure(record.verdict, options_.strict)) ADD_FAILURE() << failure_text(record, {});
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
    record.other_threads = ThreadShare{scope.other_thread_allocations, scope.other_thread_bytes};
    record.standard_errors = standard_errors_of(scope);
    if (!scope.profile_path.empty()) record.profiles.push_back(scope.profile_path);
    record.growth = std::move(growth_);
    growth_ = {};

    if (child_) {
      // A re-run child only collects the stacks its parent will show, and
      // every call site of a test that gates them.
      if (!scope.profile_path.empty()) {
        record.call_sites_complete = gates_call_sites(record.name);
        record.stacks = summarize_profile(scope.profile_path, symbolizer(), options_.top_stacks * 2,
                                          record.call_sites_complete ? &record.call_sites : nullptr);
      }
      finish_record(std::move(record));
      return;
    }

    decide(record);
    finish_record(std::move(record));
  }

  // The run guard's end of a run whose test never finished: that test's
  // record, then the report as it stands, incomplete. Baselines stay as they are.
  void finish_interrupted(TestRecord record) {
    std::fprintf(stderr, "heapgate: %s: %s\n", record.name.c_str(), record.message.c_str());
    if (!writer_) return;
    (void)writer_->add(std::move(record));
    if (auto done = writer_->finish(/*complete=*/false); !done) say_report_error(done.error().message());
  }

  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    if (death_test_child_) return;
    // Said again last, where a reader of the log looks for the verdict.
    if (cannot_measure()) std::fprintf(stderr, "heapgate: nothing was measured: %s\n", unavailable_reason_.c_str());
    if (writer_ && !child_ && !baseline_path_.empty() && baseline_.exists && whole_suite_ran()) {
      // Baseline entries of tests that no longer exist: reported, not failed,
      // so a removed test is noticed and its entry can be dropped on review.
      for (TestRecord& missing : missing_tests(run_, baseline_)) (void)writer_->add(std::move(missing));
    }
    const bool recording_baseline =
        !child_ && !baseline_path_.empty() && (options_.update_baselines || !baseline_.exists);
    if (recording_baseline) {
      // Also when sharded: the shards' reports then carry the call sites into
      // the baseline `heapgate run` or `heapgate accept` writes from them.
      record_call_sites();
      if (writer_) {
        std::map<std::string, const TestRecord*> by_name;
        for (const auto& t : run_.tests) by_name[t.name] = &t;
        for (auto& t : writer_->records()) {
          auto it = by_name.find(t.name);
          if (it != by_name.end() && t.call_sites.empty()) {
            t.call_sites = it->second->call_sites;
            t.call_sites_complete = it->second->call_sites_complete;
          }
        }
      }
    }
    if (writer_) {
      if (auto done = writer_->finish(); !done) {
        say_report_error(done.error().message());
        // A run that asked for a report must not pass without one.
        if (!child_) guard_exit_status(exit_status(GateExit::usage));
      }
    }
    if (!child_ && kept_profiles_ > 0) {
      std::fprintf(stderr, "heapgate: kept %zu heap profile%s (named in the report) in %s\n", kept_profiles_,
                   kept_profiles_ == 1 ? "" : "s", keep_dir_.c_str());
    }
    if (child_ || baseline_path_.empty() || !accepting()) return;
    const bool existed = baseline_.exists;
    if (baseline_entries(run_).empty()) return;
    if (std::getenv("GTEST_TOTAL_SHARDS") != nullptr) {
      // Shards write one baseline file concurrently, each with its own tests:
      // the last rename would win and drop the others' entries.
      std::fprintf(stderr,
                   "heapgate: sharded run: %s not %s; accept the merged report with "
                   "`heapgate accept` (heapgate run does this for a new baseline)\n",
                   baseline_path_.c_str(), existed ? "updated" : "created");
      return;
    }
    BaselineWriteRules rules;
    rules.writer = existed ? BaselineWriter::update : BaselineWriter::first_run;
    const BaselineWrite write = write_run_into(baseline_, run_, rules);
    if (!write.blocked.empty()) {
      std::fprintf(stderr, "heapgate: %s\n", describe_baseline_write(baseline_path_, existed, write).c_str());
    } else if (auto written = write_baseline(baseline_path_, baseline_); !written) {
      std::fprintf(stderr, "heapgate: %s\n", written.error().message().c_str());
      guard_exit_status(exit_status(GateExit::usage));
    } else {
      std::fprintf(stderr, "heapgate: %s\n", describe_baseline_write(baseline_path_, existed, write).c_str());
    }
  }

 private:
  // A baseline being recorded keeps each test's call sites, so a later
  // regression is explained as the change at each site: one exact run of the
  // same tests in a child (only when recording, never on an ordinary run).
  void record_call_sites() {
    if (!options_.explain || effective_mode_ == Mode::off) return;
    bool missing = false;
    for (const auto& t : run_.tests) missing = missing || (t.call_sites.empty() && !t.gtest_failed);
    if (!missing) return;
    const std::string filter = HEAPGATE_GTEST_FLAG(filter);
    RerunExplainer explainer(options_, binary_path_, symbolizer());
    auto sites = explainer.call_sites(filter);
    if (!sites) {
      std::fprintf(stderr, "heapgate: the baseline records no call sites: %s\n", sites.error().message().c_str());
      return;
    }
    for (auto& t : run_.tests) {
      auto it = sites->find(t.name);
      if (t.call_sites.empty() && it != sites->end()) {
        t.call_sites = it->second.sites;
        t.call_sites_complete = it->second.complete;
      }
    }
  }

  // Measuring was asked for but is impossible (no jemalloc, no profiling).
  bool cannot_measure() const {
    return options_.mode != Mode::off && effective_mode_ == Mode::off && !child_ && !death_test_child_;
  }

  // Only an unfiltered, unsharded run can tell that a test is missing.
  static bool whole_suite_ran() {
    const std::string filter = HEAPGATE_GTEST_FLAG(filter);
    return filter == "*" && std::getenv("GTEST_TOTAL_SHARDS") == nullptr;
  }

  // The parent records gtest's first iteration; a re-run child the one it was asked for.
  bool recording() const {
    if (options_.growth_child > 0) return iteration_ < options_.growth_child;
    if (options_.child_iteration > 0) return iteration_ + 1 == options_.child_iteration;
    return iteration_ == 0;
  }

  bool gates_call_sites(const std::string& test) const {
    return g_requests.gate_call_sites || matches_test_filter(test, options_.gate_call_sites);
  }

  Symbolizer& symbolizer() {
    if (!symbolizer_) symbolizer_.emplace();
    return *symbolizer_;
  }

  // The gate decides (heapgate/explain.h); the listener only reports it.
  void decide(TestRecord& record) {
    Observation observation;
    observation.mode = record.mode;
    observation.metrics = record.metrics;
    observation.standard_errors = record.standard_errors;
    observation.own_failure = record.gtest_failed;
    for (std::size_t i = 0; i < kMetricCount; ++i) {
      if (g_requests.limited[i]) observation.budgets[static_cast<MetricName>(i)] = g_requests.limits[i];
    }
    if (g_requests.leak_check != -1) observation.check_leaks = g_requests.leak_check == 1;
    observation.gate_call_sites = gates_call_sites(record.name);

    const BaselineEntry* base = nullptr;
    if (!baseline_path_.empty()) {
      auto it = baseline_.tests.find(record.name);
      if (it != baseline_.tests.end()) base = &it->second;
    }
    GatePolicy policy;
    policy.check_leaks = options_.check_leaks;
    policy.strict = options_.strict;
    policy.compare_baseline = !baseline_path_.empty();
    policy.environment_change = environment_change_;
    policy.accepting = accepting();
    RerunExplainer explainer(options_, binary_path_, symbolizer());
    const std::string own_profile = record.profiles.empty() ? std::string() : record.profiles.front();
    if (!own_profile.empty()) explainer.set_own_profile(own_profile);
    explainer.set_gate_call_sites(observation.gate_call_sites);
    const std::string failure = gate_test(record, std::move(observation), base, policy, explainer, suppressions_,
                                          ExplainOptions{options_.top_stacks, options_.explain, options_.leak_repetitions,
                                                         options_.confirm_runs, options_.measure_alone});
    // Before the explainer goes, and its children's directories with it.
    keep_profiles(record, own_profile);
    if (!failure.empty()) ADD_FAILURE_AT(record.file.empty() ? "unknown" : record.file.c_str(), record.line) << failure;
  }

  // The keep directory exists (made on first use). A failure to make it is
  // said once; nothing is kept then.
  bool keep_dir_ready() {
    if (keep_dir_.empty()) return false;
    if (keep_dir_made_) return true;
    std::error_code ec;
    std::filesystem::create_directories(keep_dir_, ec);
    if (!std::filesystem::is_directory(keep_dir_, ec)) {
      std::fprintf(stderr, "heapgate: %s: cannot create the directory for heap profiles; none is kept; fix: pass a "
                   "writable --heapgate_profiles=DIR\n", keep_dir_.c_str());
      keep_dir_.clear();
      return false;
    }
    keep_dir_made_ = true;
    return true;
  }

  // `<keep dir>/<stem>.heap`, or `<stem>.N.heap` when this run used that name
  // already (a test's own profile and its re-runs'). A file of an earlier run
  // of the same name is replaced.
  std::string new_profile_path(const std::string& stem) {
    for (int n = 1;; ++n) {
      std::string name = n == 1 ? stem + ".heap" : stem + "." + std::to_string(n) + ".heap";
      if (used_profile_names_.insert(name).second) return keep_dir_ + "/" + name;
    }
  }

  // The report names only profiles that outlive the run: those in the keep
  // directory. The re-run children's are moved there out of their temp
  // directories; without a keep directory nothing is kept, and the test's
  // own dump (exact mode) is removed now rather than piling up until exit.
  void keep_profiles(TestRecord& record, const std::string& own_profile) {
    if (record.profiles.empty()) return;
    if (!keep_dir_ready()) {
      if (!own_profile.empty()) {
        ::unlink(own_profile.c_str());
        ::unlink(symbols_sidecar_path(own_profile).c_str());
      }
      record.profiles.clear();
      return;
    }
    std::vector<std::string> kept;
    for (const std::string& profile : record.profiles) {
      if (profile.rfind(keep_dir_ + "/", 0) == 0) {
        kept.push_back(profile);  // written there in the first place
        continue;
      }
      std::string stem = std::filesystem::path(profile).filename().string();
      if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".heap") == 0) stem.resize(stem.size() - 5);
      const std::string to = new_profile_path(stem);
      std::string why;
      if (!move_file(profile, to, why)) {
        std::fprintf(stderr, "heapgate: %s: cannot keep the heap profile of %s: %s\n", to.c_str(),
                     record.name.c_str(), why.c_str());
        continue;
      }
      std::error_code ec;
      if (std::filesystem::exists(symbols_sidecar_path(profile), ec)) {
        (void)move_file(symbols_sidecar_path(profile), symbols_sidecar_path(to), why);
      }
      kept.push_back(to);
    }
    kept_profiles_ += kept.size();
    record.profiles = std::move(kept);
  }

  [[noreturn]] static void setup_failed(const Error& error) {
    std::fprintf(stderr, "heapgate: %s\n", error.message().c_str());
    std::fflush(stderr);
    std::exit(2);
  }

  void finish_record(TestRecord record) {
    if (!child_) run_.tests.push_back(record);
    // Metrics become <property> elements of the <testcase> in gtest's own XML
    // (GoogleTest 1.12 on Debian 12; older versions wrote attributes; docs/platform-facts.md §1).
    if (record.verdict != Verdict::unavailable) {
      for (std::size_t i = 0; i < kMetricCount; ++i) {
        auto metric = static_cast<MetricName>(i);
        ::testing::Test::RecordProperty("heapgate." + std::string(to_string(metric)),
                                        std::to_string(get(record.metrics, metric)));
      }
    }
    ::testing::Test::RecordProperty("heapgate.verdict", std::string(to_string(record.verdict)));
    if (writer_) {
      if (auto added = writer_->add(std::move(record)); !added) say_report_error(added.error().message());
    }
  }

  // Once per distinct message: every record would otherwise repeat why the
  // report cannot be written.
  // This run records its tests as the baseline while it judges them.
  bool accepting() const {
    return !baseline_path_.empty() && run_records_baseline(baseline_.exists, options_.update_baselines);
  }

  void say_report_error(const std::string& message) {
    if (!said_report_errors_.insert(message).second) return;
    if (message == report_error_) return;  // the run's failure already says it
    std::fprintf(stderr, "heapgate: %s\n", message.c_str());
  }

  Options options_;
  std::string report_error_;
  std::set<std::string> said_report_errors_;
  Mode effective_mode_ = Mode::off;
  std::string unavailable_reason_;
  bool child_ = false;
  bool death_test_child_ = false;
  std::string binary_path_;
  std::string binary_name_;
  std::string baseline_path_;
  std::string keep_dir_;  // where the profiles the report names go; "" keeps none
  bool keep_dir_made_ = false;
  std::set<std::string> used_profile_names_;
  std::size_t kept_profiles_ = 0;
  Baseline baseline_;
  Report run_;  // this run's records, for the baseline and the missing tests
  Suppressions suppressions_;
  std::optional<ReportWriter> writer_;
  std::optional<ProfileScope> scope_;
  std::chrono::steady_clock::time_point test_started_{};
  std::optional<Symbolizer> symbolizer_;
  int iteration_ = 0;
  LiveGrowth growth_;  // a growth child's live blocks after each run
  Fingerprint fingerprint_;         // this run's environment
  std::string environment_change_;  // how it differs from the baseline's, "" when it does not
  Metrics gtest_overhead_;
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

void limit(MetricName metric, const char* size) noexcept {
  auto parsed = parse_size(size == nullptr ? "" : size);
  if (parsed) {
    limit(metric, *parsed);
    return;
  }
  // A typo in a budget must not pass silently as "no budget".
  ADD_FAILURE() << "heapgate: budget " << to_string(metric) << ": " << parsed.error().message();
}

void check_leaks(bool enabled) noexcept { g_requests.leak_check = enabled ? 1 : 0; }

void gate_call_sites() noexcept { g_requests.gate_call_sites = true; }

namespace {

// GoogleTest's wildcard match: `*` any run, `?` any one character.
bool matches_pattern(std::string_view name, std::string_view pattern) noexcept {
  std::size_t n = 0, p = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++n;
      ++p;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool matches_any(std::string_view name, std::string_view patterns) noexcept {
  while (true) {
    const std::size_t colon = patterns.find(':');
    if (matches_pattern(name, patterns.substr(0, colon))) return true;
    if (colon == std::string_view::npos) return false;
    patterns.remove_prefix(colon + 1);
  }
}

}  // namespace

bool matches_test_filter(std::string_view name, std::string_view filter) noexcept {
  if (filter.empty()) return false;
  const std::size_t dash = filter.find('-');
  std::string_view positive = filter.substr(0, dash);
  if (positive.empty()) positive = "*";  // "-Slow.*": everything but
  if (!matches_any(name, positive)) return false;
  return dash == std::string_view::npos || !matches_any(name, filter.substr(dash + 1));
}

ScopedLimit::ScopedLimit(MetricName metric, std::uint64_t limit, const char* file, int line) noexcept
    : metric_(metric), limit_(limit), file_(file), line_(line) {
  if (!allocator_status().hooks_available) return;
  scope_.emplace("scoped budget", ScopeOptions{Mode::counters});
}

ScopedLimit::ScopedLimit(MetricName metric, const char* size, const char* file, int line) noexcept
    : metric_(metric), file_(file), line_(line) {
  auto parsed = parse_size(size == nullptr ? "" : size);
  if (!parsed) {
    ADD_FAILURE_AT(file, line) << "heapgate: scoped budget " << to_string(metric) << ": " << parsed.error().message();
    return;
  }
  limit_ = *parsed;
  if (!allocator_status().hooks_available) return;
  scope_.emplace("scoped budget", ScopeOptions{Mode::counters});
}

ScopedLimit::~ScopedLimit() {
  if (!scope_) return;
  auto result = scope_->finish();
  if (!result || result->bytes_only) return;  // nothing counted: nothing to say
  const std::string over = explain_over_budget(metric_, limit_, from_scope(*result));
  if (!over.empty()) ADD_FAILURE_AT(file_, line_) << "heapgate: " << over << " in this block";
}

}  // namespace heapgate::gtest
