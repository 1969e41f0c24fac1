// SPDX-License-Identifier: MIT
// RerunExplainer: runs tests again in exact or counters child processes for stacks, call sites,
// live growth, spread samples and re-measurement; summarize_profile(): a profile's top stacks.
#include "explainers.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "call_site_frames.h"
#include "heapgate/diff.h"
#include "heapgate/gate.h"
#include "heapgate/journal.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/report.h"
#include "heapgate/symbols_sidecar.h"
#include "heapgate/sys.h"
#include "plugin_run.h"

namespace heapgate::harness {

NormalizeOptions with_lines() {
  NormalizeOptions options;
  options.with_lines = true;
  return options;
}

std::vector<StackSample> summarize_profile(const std::string& profile_path, ProfileNormalizer& normalizer,
                                           std::size_t limit, std::vector<CallSite>* all_call_sites) {
  auto profile = read_profile(profile_path);
  if (!profile) return {};
  // The profile is kept beside the report: keep what its addresses mean now,
  // so a later `heapgate diff` after a rebuild still reads it right.
  // Best effort: without a sidecar the profile still reads until the binary is
  // rebuilt, and after that is refused with the fix (prepare_symbols(),
  // heapgate/symbols_sidecar.h), never misread.
  (void)write_symbols_sidecar(profile_path, *profile, normalizer.symbolizer());
  return summarize_profile(*profile, normalizer, limit, all_call_sites);
}

std::vector<StackSample> summarize_profile(const Profile& profile, ProfileNormalizer& normalizer, std::size_t limit,
                                           std::vector<CallSite>* all_call_sites) {
  NormalizedProfile normalized = normalizer.normalize(profile);
  if (all_call_sites != nullptr) {
    // Each stack as far as its call site is decided: a test with a million
    // distinct stacks (a task tree built at any depth) copied them all, every
    // frame as a string, three times over.
    std::vector<StackSample> stacks;
    stacks.reserve(normalized.stacks.size());
    for (const NormalizedStack& n : normalized.stacks) {
      // As top_stacks() leaves them out: nothing to charge.
      if (counts_unchanged(ScaledCounts{}, n.scaled)) continue;
      StackSample& s = stacks.emplace_back();
      const std::size_t used = frames_deciding_call_site(n.frames);
      s.frames.reserve(used);
      for (std::size_t i = 0; i < used; ++i) s.frames.push_back(n.frames[i].str());
      s.counts = n.scaled;
    }
    constexpr std::size_t kAll = static_cast<std::size_t>(-1);
    *all_call_sites = call_sites_of(without_framework_stacks(std::move(stacks)), kAll);
  }
  // Keep the top stacks by live bytes and by allocations: the gate picks per verdict.
  return top_stacks(normalized, limit);
}

std::vector<StackSample> without_framework_stacks(std::vector<StackSample> stacks) {
  const Face* face = current_face();
  if (face == nullptr) return stacks;
  stacks.erase(std::remove_if(stacks.begin(), stacks.end(),
                              [face](const StackSample& stack) { return face->is_framework_stack(stack); }),
               stacks.end());
  return stacks;
}

RerunExplainer::~RerunExplainer() {
  for (const auto& dir : child_dirs_) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // best effort: what is left is in $TMPDIR, named heapgate-rerun.*
  }
}

Result<Explanation> RerunExplainer::explain(const std::string& test) {
  Explanation e;
  if (!own_profile_.empty()) {
    std::vector<CallSite> all;
    ProfileNormalizer normalizer(symbolizer_, with_lines());
    e.stacks = summarize_profile(own_profile_, normalizer, options_.top_stacks * 2, &all);
    e.call_sites_complete = keeps_all_call_sites(gate_call_sites_, all);
    if (e.call_sites_complete) e.call_sites = std::move(all);
    e.source = "this run";
    return e;
  }
  // The second run in the child is recorded, as a confirmation counts it:
  // the first pays for what a process sets up once, which the suite run (and
  // the baseline's call sites, recorded in one child running the whole
  // suite) had paid before; counted, it would show as call sites that changed.
  // The process's first test paid it there too: its first run is recorded,
  // unless its confirmations counted the warm one (remeasure()).
  const bool cold = first_in_process_ && cold_run_counts_.value_or(true);
  auto child = cold ? run_child(test, Mode::exact, 1, "--heapgate_internal_child=1")
                    : run_child(test, Mode::exact, 2, "--heapgate_internal_child=2");
  if (!child) return fail(child.error());
  e.metrics = child->metrics;
  e.call_sites = std::move(child->call_sites);
  e.call_sites_complete = child->call_sites_complete;
  e.stacks = std::move(child->stacks);
  e.profiles = std::move(child->profiles);
  e.source = "exact re-run";
  return e;
}

namespace {

// The flags of the exact child that records call sites.
constexpr const char* kCallSitesChildFlag = "--heapgate_internal_child=1";
const std::vector<std::string> kCallSitesMoreFlags = {"--heapgate_internal_call_sites=1"};

RerunExplainer::RecordedCallSites recorded_call_sites(Report& report, const sys::ProcessResult& outcome,
                                                      std::chrono::seconds budget) {
  RerunExplainer::RecordedCallSites out;
  for (auto& t : report.tests) {
    RerunExplainer::MeasuredCallSites& measured = out.tests[t.name];
    measured.complete = t.call_sites_complete;
    // The child named them (--heapgate_internal_call_sites).
    measured.sites = std::move(t.call_sites);
    if (!t.gtest_failed && t.verdict != Verdict::unavailable && t.interrupted == Interruption::none) {
      measured.metrics = Measurement{t.metrics, t.other_threads};
    }
  }
  if (outcome.timed_out) {
    out.cut_short = "stopped after its budget of " + std::to_string(budget.count()) + " s";
  } else if (outcome.term_signal != 0) {
    out.cut_short = "crashed (signal " + std::to_string(outcome.term_signal) + ")";
  } else if (!report.run.complete) {
    out.cut_short = "ended before its last test (exit " + std::to_string(outcome.exit_code) + ")";
  }
  return out;
}

}  // namespace

Result<RerunExplainer::RecordedCallSites> RerunExplainer::call_sites(const TestSelection& selection, bool keep_shard,
                                                                     std::chrono::seconds budget) {
  // The tests it finished within the budget (its report journal) get their
  // call sites; the suite run names the others.
  sys::ProcessResult outcome;
  auto report = run_children_report(selection, Mode::exact, 1, kCallSitesChildFlag, keep_shard, budget, &outcome,
                                    kCallSitesMoreFlags);
  if (!report) return fail(report.error());
  return recorded_call_sites(*report, outcome, budget);
}

Result<RerunExplainer::StartedCallSites> RerunExplainer::start_call_sites(const TestSelection& selection,
                                                                          bool keep_shard) {
  auto run = prepare_children(selection, Mode::exact, 1, kCallSitesChildFlag, keep_shard, kCallSitesMoreFlags);
  if (!run) return fail(run.error());
  // It dies with this process: a run that crashes or exits early leaves no
  // orphan re-running the suite.
  run->process.extra_env.push_back(std::string(kDieWithParentVariable) + "=" + std::to_string(::getpid()));
  auto started = sys::start_process(run->argv, run->process, run->dir + "/stderr.txt");
  if (!started) return fail(started.error());
  return StartedCallSites{std::move(*run), *started};
}

Result<RerunExplainer::RecordedCallSites> RerunExplainer::finish_call_sites(const StartedCallSites& started,
                                                                            std::chrono::seconds budget) {
  const sys::ProcessResult outcome = sys::wait_for_process(started.process, budget);
  auto report = read_children_report(started.run, outcome);
  if (!report) return fail(report.error());
  return recorded_call_sites(*report, outcome, budget);
}

Result<Report> RerunExplainer::samples(const TestSelection& selection, bool keep_shard, int runs,
                                       std::chrono::seconds budget, sys::ProcessResult* outcome) {
  // Counters: the counts are the same in every mode that measures exactly,
  // and the samples need no stacks.
  return run_children_report(selection, Mode::counters, runs, "--heapgate_internal_samples=" + std::to_string(runs),
                             keep_shard, budget, outcome);
}

Result<LiveGrowth> RerunExplainer::growth(const std::string& test, int repetitions) {
  // Counters only: cheap enough to ask for every test that ends with live blocks.
  auto child =
      run_child(test, Mode::counters, repetitions, "--heapgate_internal_growth=" + std::to_string(repetitions));
  if (!child) return fail(child.error());
  // A child may stop once a run left no more than the one before (the
  // series cannot grow at every step any more): fewer runs, same verdict.
  const std::size_t measured = child->growth.live_allocations.size();
  const bool stopped_level = measured >= 2 && measured < static_cast<std::size_t>(repetitions) && !grows(child->growth);
  if (measured != static_cast<std::size_t>(repetitions) && !stopped_level) {
    return fail(make_error(ErrorCode::unavailable, "repeated run of " + test,
                           "the child measured " + std::to_string(child->growth.live_allocations.size()) + " of " +
                               std::to_string(repetitions) + " runs",
                           ""));
  }
  return std::move(child->growth);
}

Result<Explanation> RerunExplainer::growing(const std::string& test, int repetitions) {
  // Two exact children, one run and K runs in one scope each: their
  // difference is what the further runs left live, by call site.
  auto once = run_child(test, Mode::exact, 1, "--heapgate_internal_growth=1");
  if (!once) return fail(once.error());
  Explanation e;
  e.source = "exact re-runs";
  if (repetitions <= 1) {
    e.stacks = std::move(once->stacks);
    e.profiles = std::move(once->profiles);
    return e;
  }
  auto many = run_child(test, Mode::exact, repetitions, "--heapgate_internal_growth=" + std::to_string(repetitions));
  if (!many) return fail(many.error());
  if (once->profiles.empty() || many->profiles.empty()) {
    return fail(
        make_error(ErrorCode::unavailable, "exact re-runs of " + test, "the children wrote no heap profile", ""));
  }
  auto first = read_profile(once->profiles.front());
  if (!first) return fail(first.error());
  auto last = read_profile(many->profiles.front());
  if (!last) return fail(last.error());
  // With file and line, as every explanation names them: a leak's line first.
  ProfileNormalizer normalizer(symbolizer_, with_lines());
  ProfileDiff diff = diff_profiles(normalizer.normalize(*first), normalizer.normalize(*last));
  const double further_runs = static_cast<double>(repetitions - 1);
  for (const StackDelta& d : diff.entries) {
    if (d.delta.live_objects <= 0 && d.delta.live_bytes <= 0) continue;
    StackSample s;
    for (const auto& f : d.frames) s.frames.push_back(f.str());
    // Per further run: for a plain leak, what one run of the test leaves.
    s.counts.live_objects = d.delta.live_objects / further_runs;
    s.counts.live_bytes = d.delta.live_bytes / further_runs;
    s.counts.accum_objects = d.delta.accum_objects / further_runs;
    s.counts.accum_bytes = d.delta.accum_bytes / further_runs;
    e.stacks.push_back(std::move(s));
  }
  e.profiles = {many->profiles.front()};
  e.source = "exact re-runs: growth per run";
  return e;
}

bool RerunExplainer::is_framework_stack(const StackSample& stack) const {
  const Face* face = current_face();
  return face != nullptr && face->is_framework_stack(stack);
}

Result<Measurement> RerunExplainer::remeasure(const std::string& test) {
  // Twice in one fresh process, the second run counted: the first pays for
  // what a process sets up once (name service modules, locale, a library's
  // tables), which the test did not pay in the suite, where earlier tests had.
  // A change in the test's code shows in both runs. The first test of the
  // process paid that setup in the suite, and in its baseline too when it
  // ran first there (not when the baseline came from a run of more tests):
  // its warm run speaks for it when it measures within the baseline, and
  // when it measures less, the cold run does, which paid the same (the warm
  // run alone cleared a planted +1 in a suite's first test as noise; the
  // cold run alone failed a test run first by a filter, recorded warm).
  auto report = run_children_report(TestSelection{{test}, false}, Mode::counters, 2, "--heapgate_internal_samples=2");
  if (!report) return fail(report.error());
  const TestRecord* first = nullptr;
  const TestRecord* second = nullptr;
  for (const TestRecord& t : report->tests) {
    if (t.name != test || t.verdict == Verdict::unavailable || t.interrupted != Interruption::none) continue;
    (first == nullptr ? first : second) = &t;
  }
  // A test that cannot run twice in one process (it fails the second time)
  // is measured by its first run.
  const TestRecord* measured = second != nullptr && !second->gtest_failed ? second : first;
  if (first_in_process_ && measured == second && first != nullptr && !first->gtest_failed &&
      first_test_baseline_ != nullptr) {
    const Comparison warm =
        compare_to_baseline(second->metrics, first_test_baseline_, Tolerances::for_mode(Mode::counters), Mode::counters,
                            std::nullopt, {}, &second->other_threads);
    if (warm.verdict == Verdict::improved) measured = first;
    cold_run_counts_ = measured == first;
  }
  if (measured == nullptr) {
    return fail(make_error(ErrorCode::unavailable, "re-run of " + test, "the re-run measured nothing", ""));
  }
  return Measurement{measured->metrics, measured->other_threads};
}

Result<TestRecord> RerunExplainer::run_child(const std::string& test, Mode mode, int repeat,
                                             const std::string& child_flag) {
  auto report = run_children_report(TestSelection{{test}, false}, mode, repeat, child_flag);
  if (!report) return fail(report.error());
  for (auto& t : report->tests) {
    if (t.name == test) return std::move(t);
  }
  return fail(make_error(ErrorCode::unavailable, "re-run", "the re-run did not run " + test, ""));
}

Result<RerunExplainer::ChildRun> RerunExplainer::prepare_children(const TestSelection& selection, Mode mode, int repeat,
                                                                  const std::string& child_flag, bool keep_shard,
                                                                  const std::vector<std::string>& more_flags) {
  auto problem = [](std::string what) {
    return fail(make_error(ErrorCode::unavailable, "re-run", std::move(what), ""));
  };
  if (binary_path_.empty()) return problem("cannot find this executable's path");
  const Face* face = current_face();
  if (face == nullptr) return problem("no test framework face runs in this process");
  auto dir = sys::make_private_dir("heapgate-rerun.");
  if (!dir) return fail(dir.error());
  child_dirs_.push_back(*dir);
  ChildRun run;
  run.dir = *dir;
  run.mode = mode;
  sys::ProcessOptions& process = run.process;
  if (mode == Mode::exact) process.extra_env = {std::string("MALLOC_CONF=") + kExactMallocConf};
  process.unset_env = {"HEAPGATE_MODE", "HEAPGATE_REPORT", "HEAPGATE_BASELINES", "HEAPGATE_UPDATE_BASELINES",
                       "HEAPGATE_PROFILES"};
  for (std::string& name : face->child_unset_env()) process.unset_env.push_back(std::move(name));
  if (!keep_shard) {
    for (std::string& name : face->shard_env()) process.unset_env.push_back(std::move(name));
  }
  if (own_temp_dirs_) {
    const std::string temp = *dir + "/tmp";
    std::error_code ec;
    std::filesystem::create_directory(temp, ec);
    if (ec) return problem("cannot create " + temp + ": " + ec.message());
    process.extra_env.push_back("TMPDIR=" + temp);
    process.extra_env.push_back("TEST_TMPDIR=" + temp);
  }
  run.argv = {binary_path_};
  for (std::string& argument : face->child_arguments(selection, repeat)) run.argv.push_back(std::move(argument));
  for (std::string flag :
       {"--heapgate_mode=" + std::string(to_string(mode)), "--heapgate_report=" + *dir,
        // Its dumps too: the child's own temp directory goes when it exits.
        "--heapgate_profiles=" + *dir, child_flag, "--heapgate_top_stacks=" + std::to_string(options_.top_stacks)}) {
    run.argv.push_back(std::move(flag));
  }
  run.argv.insert(run.argv.end(), more_flags.begin(), more_flags.end());
  if (!options_.gate_call_sites.empty()) run.argv.push_back("--heapgate_gate_call_sites=" + options_.gate_call_sites);
  const std::string binary_name = binary_path_.substr(binary_path_.rfind('/') + 1);
  std::string stem = binary_name;
  if (const std::optional<Shard> shard = face->shard(); keep_shard && shard) {
    stem = report_stem(binary_name, shard->index, shard->total);
  }
  run.report_path = *dir + "/" + stem + ".json";
  return run;
}

Result<Report> RerunExplainer::read_children_report(const ChildRun& run, const sys::ProcessResult& ran) {
  auto report = read_report(run.report_path);
  if (!report) {
    return fail(make_error(ErrorCode::unavailable, "re-run",
                           "the " + std::string(to_string(run.mode)) + " re-run wrote no report (exit " +
                               std::to_string(ran.exit_code) + "): " + ran.stderr_text.substr(0, 500),
                           ""));
  }
  return std::move(*report);
}

Result<Report> RerunExplainer::run_children_report(const TestSelection& selection, Mode mode, int repeat,
                                                   const std::string& child_flag, bool keep_shard,
                                                   std::chrono::seconds timeout, sys::ProcessResult* outcome,
                                                   const std::vector<std::string>& more_flags) {
  auto run = prepare_children(selection, mode, repeat, child_flag, keep_shard, more_flags);
  if (!run) return fail(run.error());
  run->process.timeout = timeout;
  auto ran = sys::run_process(run->argv, run->process);
  if (!ran) return fail(ran.error());
  if (outcome != nullptr) *outcome = *ran;
  return read_children_report(*run, *ran);
}

}  // namespace heapgate::harness
