// SPDX-License-Identifier: MIT
// The two ways the engine explains a test (heapgate/explain.h):
// from a heap profile this process wrote (the test ran in exact mode), or by
// running the test again alone in exact mode in a child process.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <vector>
#include <string>

#include "heapgate/explain.h"
#include "heapgate/face.h"
#include "heapgate/harness.h"
#include "heapgate/normalize.h"
#include "heapgate/symbolizer.h"
#include "heapgate/sys.h"

namespace heapgate::harness {

/// How long recording a baseline may spend on its call sites (one exact run
/// of the recorded tests): this many times the suite run's own time, and at
/// least kCallSitesMinimumSeconds. An exact run with its symbolizing costs
/// 2-3x the suite's time on the suites measured (bench/real_suites); the
/// budget only stops a child that hangs.
inline constexpr int kCallSitesBudgetFactor = 10;
inline constexpr int kCallSitesMinimumSeconds = 60;

/// Normalizing with file and line where DWARF has them: an explanation names
/// the line. One ProfileNormalizer a process (PluginRun::normalizer()) names
/// each frame once.
NormalizeOptions with_lines();

/// The stacks of one exact-mode heap profile, as report summaries: the top
/// `limit` stacks by live bytes and by allocations, each with its own counts.
/// With `all_call_sites`, also every call site of all its stacks but the
/// framework's own (call_sites_of() with no limit of
/// without_framework_stacks(), for a test whose call sites are gated), from
/// the same reading of the profile.
/// The profile file also gets its symbols sidecar.
std::vector<StackSample> summarize_profile(const std::string& profile_path, ProfileNormalizer& normalizer,
                                           std::size_t limit, std::vector<CallSite>* all_call_sites = nullptr);
/// The same of a profile in memory (ScopeOptions::profile_in_memory).
std::vector<StackSample> summarize_profile(const Profile& profile, ProfileNormalizer& normalizer, std::size_t limit,
                                           std::vector<CallSite>* all_call_sites = nullptr);

/// A test with at most this many call sites keeps all of them (and says its
/// list is complete), so a change at a line that allocates once is named by
/// its line; one with more keeps its top sites, as gated tests keep all.
inline constexpr std::size_t kAllCallSitesUpTo = 32;

/// Whether `all` (every call site of a test) is kept whole: when the test
/// gates its call sites (`gated`) or has at most kAllCallSitesUpTo of them.
inline bool keeps_all_call_sites(bool gated, const std::vector<CallSite>& all) {
  return gated || all.size() <= kAllCallSitesUpTo;
}

/// `stacks` without those the face's Face::is_framework_stack() holds, in their order.
std::vector<StackSample> without_framework_stacks(std::vector<StackSample> stacks);

/// Re-runs one test of this binary in a child process (exact mode, the
/// face's Face::child_arguments() for that test and N runs, e.g.
/// `--gtest_filter=NAME --gtest_repeat=N`; then `--heapgate_internal_child=N`) and
/// reads the record the child writes. When the test already ran in exact
/// mode in this process (`own_profile`), explain() reads that profile instead.
///
/// Each child writes its report and heap profiles into a private directory
/// under $TMPDIR that this explainer removes when it is destroyed: move the
/// profiles an explanation names elsewhere first to keep them.
class RerunExplainer : public Explainer {
 public:
  RerunExplainer(const Options& options, std::string binary_path, Symbolizer& symbolizer)
      : options_(options), binary_path_(std::move(binary_path)), symbolizer_(symbolizer) {}
  ~RerunExplainer() override;
  RerunExplainer(const RerunExplainer&) = delete;
  RerunExplainer& operator=(const RerunExplainer&) = delete;

  /// The profile of the current test's own exact-mode run, or "".
  void set_own_profile(std::string path) { own_profile_ = std::move(path); }
  /// The test was the first of its process, judged against `baseline`
  /// (none: no baseline): see remeasure().
  void set_first_in_process(bool first, const BaselineEntry* baseline) {
    first_in_process_ = first;
    first_test_baseline_ = baseline;
    cold_run_counts_.reset();
  }
  /// The current test gates its call sites: explain() measures all of them
  /// from the test's own profile (a child measures them by itself).
  void set_gate_call_sites(bool gated) { gate_call_sites_ = gated; }
  /// Each child gets a temporary directory of its own (TMPDIR and
  /// TEST_TMPDIR), as `heapgate run` gives each shard: for children that run
  /// beside another child of the same tests.
  void use_own_temp_dirs() { own_temp_dirs_ = true; }

  Result<Explanation> explain(const std::string& test) override;
  Result<LiveGrowth> growth(const std::string& test, int repetitions) override;
  Result<Explanation> growing(const std::string& test, int repetitions) override;
  Result<Measurement> remeasure(const std::string& test) override;
  /// The framework's own stacks (Face::is_framework_stack()).
  bool is_framework_stack(const StackSample& stack) const override;
  /// What call_sites() measured of one test.
  struct MeasuredCallSites {
    std::vector<CallSite> sites;
    /// All of them (the test gates its call sites), not only the top few.
    bool complete = false;
    /// The counts of that run, when it measured the test whole (it did not
    /// fail, nor was it cut short): exact counts are the counters' counts, so
    /// a baseline being recorded takes them as one more run of the test.
    std::optional<Measurement> metrics;
  };
  /// What call_sites() measured of a whole run.
  struct RecordedCallSites {
    std::map<std::string, MeasuredCallSites> tests;
    /// Why the child ended before its last test ("stopped after its budget
    /// of 600 s", "crashed (signal 11)"), "" when it ran them all.
    std::string cut_short;
  };
  /// Every test `selection` selects, run once in exact mode in one child: the
  /// call sites of each (for a baseline being recorded). The child is stopped
  /// after `budget`; the tests it finished by then have their call sites.
  /// `keep_shard` as for samples().
  Result<RecordedCallSites> call_sites(const TestSelection& selection, bool keep_shard, std::chrono::seconds budget);

  /// A child's command line, environment and directory, before it starts.
  struct ChildRun {
    std::vector<std::string> argv;
    sys::ProcessOptions process;
    std::string dir;
    std::string report_path;
    Mode mode = Mode::exact;
  };
  /// call_sites()'s child, started now and taken by finish_call_sites():
  /// it runs beside this process's own tests, and no thread of this process
  /// waits for it meanwhile (sys::start_process()).
  struct StartedCallSites {
    ChildRun run;
    sys::StartedProcess process;
  };
  Result<StartedCallSites> start_call_sites(const TestSelection& selection, bool keep_shard);
  /// Waits at most `budget` more for a started call-sites child.
  Result<RecordedCallSites> finish_call_sites(const StartedCallSites& started, std::chrono::seconds budget);
  /// Every test `selection` selects, run `runs` times more in one child,
  /// counting: the child's records, `runs` a test (fewer when it was cut
  /// short: `outcome` says how it ended). `keep_shard`: the child runs this
  /// shard's share of `selection`, as this process does.
  Result<Report> samples(const TestSelection& selection, bool keep_shard, int runs, std::chrono::seconds budget,
                         sys::ProcessResult* outcome);

 private:
  // Runs the child and returns its record of `test`. `child_flag` is
  // --heapgate_internal_child=N or --heapgate_internal_growth=N.
  Result<TestRecord> run_child(const std::string& test, Mode mode, int repeat, const std::string& child_flag);
  Result<ChildRun> prepare_children(const TestSelection& selection, Mode mode, int repeat,
                                    const std::string& child_flag, bool keep_shard,
                                    const std::vector<std::string>& more_flags);
  static Result<Report> read_children_report(const ChildRun& run, const sys::ProcessResult& ran);
  // `outcome`, when given, says how the child ended.
  Result<Report> run_children_report(const TestSelection& selection, Mode mode, int repeat,
                                     const std::string& child_flag, bool keep_shard = false,
                                     std::chrono::seconds timeout = std::chrono::seconds(600),
                                     sys::ProcessResult* outcome = nullptr,
                                     const std::vector<std::string>& more_flags = {});

  const Options& options_;
  std::string binary_path_;
  Symbolizer& symbolizer_;
  std::string own_profile_;
  bool first_in_process_ = false;
  const BaselineEntry* first_test_baseline_ = nullptr;
  // For a first test: which fresh run remeasure() counted (the cold one or
  // the warm), so explain() records the same; unset before it decided.
  std::optional<bool> cold_run_counts_;
  bool gate_call_sites_ = false;
  bool own_temp_dirs_ = false;
  std::vector<std::string> child_dirs_;  // removed by the destructor
};

}  // namespace heapgate::harness
