// SPDX-License-Identifier: MIT
// The gate policy, in one place: what fails, in which order, what a failure
// says, what a run writes back to its baseline, and the exit code of a run.
// The GoogleTest listener, the benchmark gate and `heapgate run/compare/accept`
// turn what they saw into an Observation and ask judge(); none decides alone.
// docs/design.md §6a states the rules and why.
//
// Implemented in lib/gate/src/, one file per job: judge.cpp (judge() and its
// rules), comparison.cpp (compare_to_baseline(), compare_alone(),
// sampling_tolerance()), noise_band.cpp (the noise band), growth.cpp (the leak rule, grows()),
// call_sites.cpp, failure_text.cpp (explaining_stacks(), failure_text()),
// judge_run.cpp (a saved run judged again), baseline_merge.cpp
// (baseline_entries()), calibration.cpp (calibrated_entries()) and
// exit_status.cpp (fails_run(), count_verdicts(), gate_exit()).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/allocator.h"
#include "heapgate/baseline.h"
#include "heapgate/metrics.h"
#include "heapgate/report.h"
#include "heapgate/verdict.h"
#include "heapgate/vocabulary.h"

namespace heapgate {

/// How a gate decides; the same rules for every face.
struct GatePolicy {
  /// Blocks a test allocated and left live are a leak (unless the test says
  /// otherwise, Observation::check_leaks).
  bool check_leaks = true;
  /// `unavailable` (nothing measured) is a failure.
  bool strict = false;
  /// The run is being recorded as the new baseline (--heapgate_update_baselines,
  /// the first run of a binary, `accept`): a change against the old entry is
  /// not a failure, and a test without an entry is `new`. Leaks and budgets
  /// still fail: recording a baseline never hides them.
  bool accepting = false;
  /// Compare with a baseline at all; false (no baselines directory): budgets
  /// and leaks only, and a test passes without being `new`.
  bool compare_baseline = true;
  /// describe_fingerprint_change() of the baseline's and this run's
  /// fingerprints (heapgate/fingerprint.h), "" when they agree: every
  /// regression and improvement says it.
  std::string environment_change;
};

/// What was learned about blocks a test left live, by running it again.
enum class LeakResidue {
  /// Not examined (no re-run possible): live blocks count as a leak.
  unknown,
  /// Live blocks grow with the repetitions: the test leaks every time.
  grows,
  /// Live blocks stay level across repetitions: one-time setup (a lazily
  /// built table, a replaced global such as std::locale, a cache filled
  /// once, a background thread's buffers), not a leak.
  constant,
};

/// The leak rule: live blocks *grow* when, after each further run, no fewer
/// blocks and more blocks or more bytes are live than after the run before
/// (every step, so a background thread's fluctuating buffers and a bounded
/// store that frees as it fills do not read as growth). One run alone grows
/// when anything is live. Empty: false.
bool grows(const LiveGrowth& growth) noexcept;

/// The evidence about a test's live blocks, gathered by the face before judging.
struct LeakEvidence {
  LeakResidue residue = LeakResidue::unknown;
  /// Live blocks after each repetition (the residue's evidence), for the explanation.
  LiveGrowth growth;
  /// Every growing block is matched by a suppression (suppressions.h); its
  /// blocks have been taken out of the observed metrics.
  bool suppressed = false;
  /// The live blocks and bytes the suppression took out, for the note.
  std::uint64_t suppressed_allocations = 0;
  std::uint64_t suppressed_bytes = 0;
  /// Where the matching suppressions come from, for the note ("suppressions.txt").
  std::string suppressions_source;
  /// Where the live blocks were counted, for the explanation.
  std::string where = "at the end of the test";
  /// The residue is `constant` because the baseline recorded it as setup and
  /// this run left no more (setup_residue_known()); the test was not repeated.
  bool from_baseline = false;
  /// The residue is `constant` because later tests of the same run freed
  /// every block of it (TestRecord::released_later); the test was not repeated.
  bool released_later = false;
};

/// What a face observed of one test (or benchmark).
struct Observation {
  Mode mode = Mode::off;
  /// The measured metrics; nullopt when nothing could be measured.
  std::optional<Metrics> metrics;
  /// `sampled`: the standard errors of the estimated metrics (TestRecord::standard_errors).
  std::optional<Metrics> standard_errors;
  /// Metrics that were not measured (TestRecord::not_measured): never compared nor budgeted.
  std::vector<MetricName> not_measured;
  /// Why nothing was measured (metrics is nullopt).
  std::string unavailable_reason;
  /// The test failed its own assertions (or the benchmark reported an error).
  bool own_failure = false;
  /// HEAPGATE_LIMIT_* budgets.
  std::map<MetricName, std::uint64_t> budgets;
  /// The test's own leak setting (HEAPGATE_EXPECT_NO_LEAKS / HEAPGATE_ALLOW_LEAKS);
  /// nullopt: GatePolicy::check_leaks.
  std::optional<bool> check_leaks;
  /// What a repeated run said about live blocks (see leak_suspected()).
  LeakEvidence leak;
  /// The test's call sites are gated too (HEAPGATE_GATE_CALL_SITES(),
  /// --heapgate_gate_call_sites): one site growing beyond the test's
  /// tolerance regresses it even when its totals stay within.
  bool gate_call_sites = false;
  /// Every call site of this run (call_sites_of() with no limit), when they
  /// were measured for gating; nullopt: not measured.
  std::optional<std::vector<CallSite>> call_sites;
  /// What other threads made of `metrics` (TestRecord::other_threads).
  ThreadShare other_threads = {};
  /// Fresh runs of the test (a process each, `counters`) made to confirm a
  /// regression, in order: the first that confirmation_clears() makes the
  /// regression not reproducible; or one, to confirm the improvement of a
  /// test with company (improvement_clears()).
  std::vector<Measurement> confirmations;
};

/// One verdict and one explanation for a test.
struct Judgement {
  Verdict verdict = Verdict::pass;
  /// Why, readable on one screen: one line per problem, failures first
  /// (budgets, then the leak, then the baseline), then notes (a one-time
  /// initialization, a suppressed leak, an improvement). "" for a plain pass.
  std::string explanation;
  /// Per-metric comparison with the baseline entry (empty without one).
  std::vector<MetricDelta> deltas;
  /// The baseline entry's metrics, when there is an entry.
  std::optional<Metrics> baseline;
  /// Its noise band, when it has one.
  std::optional<NoiseBand> baseline_noise;
  /// A threaded test judged in parts: what was gated how (Comparison::parts).
  std::optional<ThreadPartsJudged> thread_parts;
  /// An improvement of a test with company was not taken for want of a
  /// fresh run (improvement_clears()): one would decide it.
  bool improvement_unconfirmed = false;
};

/// Blocks were left live and leaks are checked for this test: the face
/// should gather LeakEvidence (re-run the test) before judge().
bool leak_suspected(const Observation& observation, const GatePolicy& policy) noexcept;

/// The baseline already tells what the live blocks are: its entry recorded
/// them as one-time setup (BaselineEntry::setup_residue) and this run left no
/// more live blocks and no more live bytes than it did. Repeating the test
/// would only say `constant` again; a leak added since shows as more blocks.
bool setup_residue_known(const Observation& observation, const BaselineEntry* baseline) noexcept;

/// The confirmation rule: a fresh run of a test that regressed (`regression`,
/// compare_to_baseline()'s explanation) clears it when it is within the
/// baseline (timing noise), or when alone it grew nothing beyond the entry's
/// `alone` band (compare_alone(): what earlier tests left behind). Returns the
/// note that says so, or nullopt when the fresh run regresses too. Pure.
std::optional<std::string> confirmation_clears(const Measurement& fresh, const BaselineEntry* baseline, Mode mode,
                                               const std::string& regression);

/// The same for an improvement of a test with company (other threads, or its
/// own thread's waits): a fresh run that does not improve too clears it
/// (`improvement`, compare_to_baseline()'s explanation). Returns the note that
/// says so, or nullopt when the fresh run improves too. Pure.
std::optional<std::string> improvement_clears(const Measurement& fresh, const BaselineEntry& baseline, Mode mode,
                                              const std::string& improvement);

/// The variation rule: a regressed test whose fresh runs (`fresh`, its
/// confirmations, at least two) disagree with each other varies by itself
/// (a buffer sized by timing, a random name), which its baseline may not
/// have seen. It clears when the lowest of them and the run, metric by
/// metric, is within the
/// baseline's limits (compare_to_baseline()) with each metric's tolerance
/// widened by how far they were apart; a change beyond that still
/// regresses. A threaded test judged in parts (compare_to_baseline()) must
/// also clear in each part: the lowest own-thread and other-threads parts,
/// each against its band widened by how far that part was apart in the
/// fresh runs, so the totals' wider band lets no part's change through.
/// Returns the note that says so, or nullopt when the runs agree or the
/// lowest regresses too. Pure.
std::optional<std::string> variation_clears(const Measurement& run, const std::vector<Measurement>& fresh,
                                            const BaselineEntry& baseline, Mode mode);

/// Decides one test. The rules, in order:
/// 1. nothing measured → `unavailable` (a failure only when strict);
/// 2. the test failed its own assertions → `pass`, "not gated": its numbers
///    are recorded, but a failed test's leftovers (gtest keeps the failure
///    messages) are not judged; the run fails anyway (run_fails());
/// 3. a budget exceeded → `over_budget`; else
/// 4. a leak (live blocks, checked, residue not one-time, not suppressed) → `leaked`; else
/// 5. the baseline comparison: `regressed`, `improved`, `pass`, or `new`
///    without an entry; a regression that one of the observation's
///    confirmations clears (confirmation_clears()), or that they show to vary
///    by itself within its widened band (variation_clears()), passes with a
///    note, and so does an improvement of a test with company that the first of them does
///    not repeat (improvement_clears()) or that none confirmed; when
///    accepting, regressed/improved become `pass`;
/// 6. for a test that gates its call sites and whose totals did not regress:
///    a call site that grew beyond the test's tolerance (call_sites_beyond())
///    → `regressed`, naming the site. It needs the baseline's complete list
///    of call sites (BaselineEntry::call_sites_complete); without one, a note
///    says how to record it.
/// Every problem found is explained, not just the first. Tolerances are the
/// entry's own, else Tolerances::for_mode(observation.mode). Pure.
Judgement judge(const Observation& observation, const BaselineEntry* baseline, const GatePolicy& policy);

struct Comparison {
  /// pass, regressed, improved or new_test.
  Verdict verdict = Verdict::pass;
  /// One entry per metric, in kMetricNames order; empty for new_test.
  std::vector<MetricDelta> deltas;
  /// One readable paragraph, e.g. "regressed: allocations 120 → 180 (+60,
  /// +50.0%), limit +0." Names every metric beyond tolerance, growths first.
  std::string explanation;
  /// For a test with a noise band, whatever the verdict: "noisy: counts
  /// varied over the 5 runs recorded: allocations 27701–29736 (this run
  /// 28112); …", so a team sees which tests vary, by how much, and where this
  /// run fell. Empty otherwise.
  std::string note;
  /// The other threads' part grew beyond its band (a threaded test judged in
  /// parts): work on a pool's workers or a background thread, whose
  /// scheduling may vary, so the regression earns more fresh runs.
  bool other_threads_grew = false;
  /// A test judged in parts: each part's count, band and limit.
  std::optional<ThreadPartsJudged> parts = std::nullopt;
};
/// Compares `current` with `baseline` (a null baseline: the test is new), for
/// step 5 of judge(). The tolerances are the entry's own override if it has
/// one, else `tolerances`. Any metric that grew beyond tolerance → regressed;
/// otherwise any that shrank beyond it → improved; otherwise pass. When
/// exactly one of `current_mode` and the baseline's mode is `sampled`, the
/// explanation says the two are measured differently. When both are
/// `sampled` and standard errors are known (`current_errors`, the entry's
/// own), each estimated metric's tolerance is sampling_tolerance() instead
/// of the fixed one, unless the entry has its own tolerances. Pure.
/// Metrics in `not_measured` (either side's TestRecord/BaselineEntry
/// not_measured) are not compared and have no delta.
/// A threaded test (the entry has `other_threads`) whose entry knows its own
/// thread's band (`own_thread`) and whose run says what its other threads
/// made (`current_other_threads`) is gated in allocations and
/// allocated_bytes in two parts: its own thread's against that band, exactly
/// (within the tolerance) when it repeated, or widened as a noise band and by
/// scheduling_allowance() when it varied; its other threads' against theirs
/// (`other_threads_band`), widened when it varied and always allowed
/// scheduling_allowance(), in growth only (work that lands outside the test
/// is scheduling). Otherwise
/// the totals are judged with scheduling_allowance() (docs/design.md §6a).
Comparison compare_to_baseline(const Metrics& current, const BaselineEntry* baseline, const Tolerances& tolerances,
                               std::optional<Mode> current_mode = std::nullopt,
                               const std::optional<Metrics>& current_errors = std::nullopt,
                               const std::vector<MetricName>& not_measured = {},
                               const ThreadShare* current_other_threads = nullptr);

/// What of other threads' activity during a test run in the middle of a
/// suite counts as the test's company: their switches only when its own
/// thread waited or another thread allocated in it. Threads that merely ran
/// beside a test that never waited (an earlier test's detached threads
/// finishing, on a loaded machine) cannot have changed what its own thread
/// allocated, and their allowance let a planted +1 through. A fresh run of
/// the test alone (a confirmation) keeps all of its switches: whatever ran
/// there is the test's own company. Pure.
ThreadShare company_in_suite(const ThreadShare& run) noexcept;

/// Compares a fresh run of the test alone with the entry's `alone` band (null
/// when it has none): the same rules as compare_to_baseline(), with the band's
/// low values as the reference and its spread, if any, as noise; a metric
/// that varied in the suite (the entry's `noise`) may also move by
/// kNoisyMinimumWidening of its value alone. A pass means the test alone
/// measures as it did when the baseline was recorded. Pure.
std::optional<Comparison> compare_alone(const Metrics& fresh, const BaselineEntry& baseline, Mode mode);

/// How far a sampled estimate may move from a sampled baseline by chance:
/// kSamplingConfidenceZ standard errors of the difference of two independent
/// estimates, ceil(z * sqrt(baseline_error^2 + current_error^2)), in the
/// metric's unit (docs/design.md §6b). Pure.
std::uint64_t sampling_tolerance(double baseline_error, double current_error) noexcept;

/// "leaked 3 allocations (96 bytes) still live at the end of the test", or ""
/// when nothing is live. `where` replaces "at the end of the test".
std::string explain_leak(const Metrics& metrics, std::string_view where = "at the end of the test");

/// ", allocated at f() (file.cpp:12)": where the first of a leaked test's
/// stacks (its largest) was allocated, as its call site; "" without stacks.
/// A leak's message and reports append it to explain_leak()'s sentence.
std::string leak_site(const TestRecord& record);

/// "allocations 180 over the budget of 150 (+30)", or "" when within it.
std::string explain_over_budget(MetricName metric, std::uint64_t limit, const Metrics& metrics);

/// The record of a judged observation: verdict, message, deltas, baseline.
void apply(const Judgement& judgement, TestRecord& record);

/// The Observation a saved record stands for (for judging a report again):
/// its metrics unless unavailable, its budgets, its own failure, and the
/// evidence it keeps (leak setting, growth or setup residue, suppression,
/// confirmations), so that judge() gives the verdict the run gave. A record
/// of a version 1 report (legacy_evidence) keeps a leak a leak and its other
/// live blocks out of the leak rule.
Observation observation_of(const TestRecord& record);

/// The console/JUnit text of a failing record: a headline
/// ("heapgate: Suite.Test regressed (counters mode)"), the record's message,
/// and its top stacks (innermost frame first, names without template
/// arguments). `stacks_source` says where the stacks come from ("exact
/// re-run", "this run"); `no_stacks_reason` replaces them when there are none.
std::string failure_text(const TestRecord& record, const std::string& stacks_source,
                         const std::string& no_stacks_reason = {});

/// The stacks that explain `verdict`, most important first, at most `limit`:
/// for a leak, the stacks with live blocks by live bytes; otherwise by
/// allocations. Stacks a test framework makes for every test are the
/// caller's to leave out first (gate_test() asks Explainer::is_framework_stack()).
std::vector<StackSample> explaining_stacks(std::vector<StackSample> stacks, Verdict verdict, std::size_t limit);

/// The call sites of a test from its stacks (innermost first, frames as
/// "function at file:line" or "function", heapgate/frame_text.h): each stack
/// is charged to its innermost frame outside the standard library (std::,
/// __gnu_cxx::, operator new), so a std::vector growing in parse() is
/// parse()'s; a site is that frame's line (file:line), named by
/// elide_template_arguments() of its function. Sites are summed, and the top `limit` by allocations plus the top
/// `limit` by bytes are kept, by allocations descending. Stacks without frames count for nothing; stacks a test
/// framework makes for every test are the caller's to leave out (the GoogleTest plugin does).
std::vector<CallSite> call_sites_of(const std::vector<StackSample>& stacks, std::size_t limit = 8);
/// A frame's function that call_sites_of() looks through (std::, __gnu_cxx::,
/// operator new and delete, __cxx, the C allocation functions).
bool is_library_frame(const std::string& function);

/// How one call site changed between a baseline and this run.
struct CallSiteChange {
  /// CallSite::function.
  std::string function;
  /// This run's line, else the baseline's; "" when neither has one.
  std::string location;
  /// What the site allocated in the baseline and now (0 for a new or gone site).
  std::uint64_t allocations_before = 0;
  std::uint64_t allocations_after = 0;
  std::uint64_t bytes_before = 0;
  std::uint64_t bytes_after = 0;

  std::int64_t allocations_delta() const noexcept {
    return static_cast<std::int64_t>(allocations_after) - static_cast<std::int64_t>(allocations_before);
  }
  std::int64_t bytes_delta() const noexcept {
    return static_cast<std::int64_t>(bytes_after) - static_cast<std::int64_t>(bytes_before);
  }
};

/// The call sites that changed between `before` and `after` (lines matched
/// within a function by location, else by equal counts, so a function that
/// moved keeps its sites; unchanged ones left out), largest change in allocations first,
/// then in bytes, then by function. Pure.
std::vector<CallSiteChange> call_site_changes(const std::vector<CallSite>& before, const std::vector<CallSite>& after);

/// Which threads made a threaded test's growth, where its two parts tell
/// (call sites carry no thread): a site that grew by more allocations than
/// the other part could have added (`more_than`) grew on `threads`.
struct GrowthThreads {
  std::string threads;  ///< "on other threads", "on its own thread"; "" when not known
  std::uint64_t more_than = 0;
};

/// The change between a baseline's call sites and this run's, one line per
/// changed site, largest change first, at most `limit`:
/// "+56 allocations (+1792 B) at strcache::Lru::join_all() (lru.cpp:42)";
/// a site that is new or gone counts from or to zero. "" when nothing changed.
/// With `threads` known, the sites that grew on them say so before "at":
/// "+40 allocations (+1280 B) on other threads at handle(int) (server.cc:512)".
std::string explain_call_site_changes(const std::vector<CallSite>& before, const std::vector<CallSite>& after,
                                      const GrowthThreads& threads = {}, std::size_t limit = 5);

/// The functions whose call sites grew beyond `tolerances` (allocations or
/// bytes, each function's lines summed against its baseline value; a new
/// function from zero) between a complete list `before` and `after`, largest
/// growth first, each named at its line that grew most: "+500 allocations
/// (+16000 B) at hot() (x.cpp:42), a new line, limit +0 allocations". Empty
/// when none did. Pure.
std::vector<std::string> call_sites_beyond(const std::vector<CallSite>& before, const std::vector<CallSite>& after,
                                           const Tolerances& tolerances);

/// Judges a saved run against `baseline` again, as the face would have: each
/// record through observation_of() and judge(); records of a test that is
/// neither run nor in the baseline any more (`missing` ones) are dropped;
/// when `whole_run` (an unfiltered run of every shard), every baseline entry
/// without a record is added as `missing`. Sorted by name. Pure.
void judge_run(Report& report, const Baseline& baseline, const GatePolicy& policy, bool whole_run);

/// A `missing` record for every baseline entry with no record in `report`,
/// sorted by name.
std::vector<TestRecord> missing_tests(const Report& report, const Baseline& baseline);

/// Adds a `missing` record for every baseline entry with no record in
/// `report`, then sorts by name. Meaningful only for a complete, unfiltered
/// run (a merged report of all shards).
void add_missing_tests(Report& report, const Baseline& baseline);

/// The baseline entries a report's tests would record: one per test that
/// was measured (not `unavailable` or `missing`, mode not `off`) and did not
/// fail its own assertions. top_stacks come from TestRecord::stacks.
std::map<std::string, BaselineEntry> baseline_entries(const Report& report);

/// (Writing a run into a baseline: heapgate/baseline_merge.h.)

/// The baseline entries of several runs of one build (calibration): for each
/// test measured in every run, `metrics` is the per-metric median (the lower
/// one for an even count) and, when the runs disagree, `noise` holds their
/// lowest and highest values; call sites and top stacks come from the first
/// run that has them; setup_residue when a run judged its live blocks one-time
/// setup and no run left live blocks judged otherwise; `alone` spans the
/// runs that measured the test alone. A test
/// missing from a run, or failing its own assertions in one, is left out.
/// With one run, the same as baseline_entries(). Pure.
std::map<std::string, BaselineEntry> calibrated_entries(const std::vector<Report>& runs);

/// A record fails the run: its verdict is a failure (is_failure with
/// `strict`), the test failed its own assertions, or it never finished
/// (TestRecord::interrupted).
bool fails_run(const TestRecord& record, bool strict) noexcept;

/// How many tests got each verdict.
struct VerdictCounts {
  /// Indexed by Verdict (kVerdicts order).
  std::array<std::size_t, kVerdicts.size()> by_verdict{};
  std::size_t total = 0;
  /// Tests that fail the run (fails_run with the run's strict flag).
  std::size_t failures = 0;
  /// Tests that failed their own assertions.
  std::size_t own_failures = 0;

  std::size_t operator[](Verdict v) const noexcept { return by_verdict[static_cast<std::size_t>(v)]; }
};

/// Counts the verdicts of `report`. Pure.
VerdictCounts count_verdicts(const Report& report);

/// The exit codes of heapgate: every verb of the CLI, a test binary's setup
/// errors, `bench compare`, ci/gate.sh. Declared here once; README.md and
/// `heapgate --help` list them.
enum class GateExit {
  ok = 0,
  /// A test regressed, leaked, went over budget or failed its own assertions.
  failed = 1,
  /// Bad usage or input: a flag, a file that cannot be read or parsed, a
  /// report or baseline that cannot be written (the CLI's own and a test
  /// binary's setup; never from gate_exit()).
  usage = 2,
  /// Nothing could be measured, and that is not allowed (strict).
  unavailable = 3,
  /// The gate passed and --ratchet wrote improvements into a baseline: the
  /// pipeline should commit it (the CLI's own; never from gate_exit()).
  baseline_changed = 4,
  /// A test binary did not finish: it crashed, hung (a timeout stopped it),
  /// exited in the middle or was killed. The report holds every test that
  /// finished and names the one that did not; no baseline is written.
  incomplete = 5,
};

/// The process exit status of `code`.
constexpr int exit_status(GateExit code) noexcept { return static_cast<int>(code); }

/// Every exit code's meaning, as the command line's help says it: the one
/// text the help of `heapgate` and its verbs is made of (exit_codes_text()).
inline constexpr Vocabulary<GateExit, 6> kGateExitMeanings{{
    {GateExit::ok, "pass"},
    {GateExit::failed, "the gate failed (a regression, leak or budget, or a test's own failure)"},
    {GateExit::usage, "bad usage or input"},
    {GateExit::unavailable, "nothing measured (no jemalloc or no profiling)"},
    {GateExit::baseline_changed, "--ratchet wrote improvements into a baseline (commit it)"},
    {GateExit::incomplete, "a test binary did not finish (crashed, hung, exited or was killed)"},
}};

/// "Exit codes:" and a line for each of `codes`, in that order ("  0 pass"),
/// from kGateExitMeanings.
std::string exit_codes_text(std::initializer_list<GateExit> codes);

/// The exit code of a run over its reports: `incomplete` when a report is
/// incomplete or names a test that never finished; else `failed` when any
/// record fails the run (fails_run); else `unavailable` when some test was
/// not measured (a gate that measured nothing must not pass silently) unless
/// `allow_unmeasured` and the run is not strict; else `ok`.
GateExit gate_exit(const std::vector<Report>& reports, bool allow_unmeasured = false);

}  // namespace heapgate
