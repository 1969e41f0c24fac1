// SPDX-License-Identifier: MIT
// merge_run_into() and merge_runs_into() (heapgate/baseline_merge.h): which of a run's records each
// BaselineAuthor may write, learned bands from samples, and describe_baseline_write().
#include "heapgate/baseline_merge.h"

#include <algorithm>
#include <map>
#include <optional>

#include "heapgate/gate.h"

namespace heapgate {
namespace {

// Why a record is not written, or "" when it may be.
std::string refusal_of(const TestRecord& record, BaselineAuthor author) {
  if (record.interrupted != Interruption::none) return "it did not finish";
  if (record.gtest_failed) return "it failed its own assertions";
  if (record.verdict == Verdict::unavailable || record.mode == Mode::off) return "nothing was measured";
  if (author == BaselineAuthor::ratchet && record.verdict != Verdict::improved) {
    return record.verdict == Verdict::regressed ? "it regressed, and a ratchet writes improvements only" : "";
  }
  return {};
}

// The entries `candidates` may write, by the rules; fills `write`.
void apply(Baseline& baseline, std::map<std::string, BaselineEntry> candidates, const Report& run,
           const BaselineMergeRules& rules, BaselineMerge& write) {
  if (!run.run.complete) {
    write.blocked = "the run did not finish (it crashed, hung, exited or was killed)";
    write.blocked_fix = "fix that and run again; its report names the test that did not finish";
    return;
  }
  std::vector<std::string> sampled_over_exact;
  for (const TestRecord& record : run.tests) {
    if (!rules.select.empty() && rules.select.count(record.name) == 0) {
      candidates.erase(record.name);
      continue;
    }
    if (record.verdict == Verdict::missing || record.verdict == Verdict::skipped) continue;
    const std::string why = refusal_of(record, rules.author);
    if (!why.empty()) write.refused.push_back({record.name, why});
    if (!why.empty() || (rules.author == BaselineAuthor::ratchet && record.verdict != Verdict::improved)) {
      candidates.erase(record.name);
      continue;
    }
    auto old = baseline.tests.find(record.name);
    auto entry = candidates.find(record.name);
    if (old != baseline.tests.end() && entry != candidates.end() && entry->second.mode == Mode::sampled &&
        old->second.mode != Mode::sampled && !rules.force) {
      sampled_over_exact.push_back(record.name);
    }
  }
  if (!sampled_over_exact.empty()) {
    std::string names;
    for (const auto& name : sampled_over_exact) names += (names.empty() ? "" : ", ") + name;
    write.blocked = "the run was sampled (estimates) but the baseline of " + names + " is exact";
    write.blocked_fix = "re-run in counters or exact mode, or pass --force to accept estimates";
    return;
  }
  // The numbers now come from this run's environment.
  if (!candidates.empty() && !run.run.fingerprint.empty()) baseline.fingerprint = run.run.fingerprint;
  write.update = update_entries(baseline, candidates);
}

}  // namespace

namespace {

// The band a recording run's samples span with its own measurement; none
// when they all agree (the test is exact after all).
std::optional<NoiseBand> learned_band(const Metrics& measured, const std::vector<Measurement>& samples) {
  NoiseBand band{static_cast<std::uint32_t>(samples.size() + 1), measured, measured};
  bool varies = false;
  for (const Measurement& sample : samples) {
    for (MetricName m : kMetricNames) {
      get(band.low, m) = std::min(get(band.low, m), get(sample.metrics, m));
      get(band.high, m) = std::max(get(band.high, m), get(sample.metrics, m));
      varies = varies || get(sample.metrics, m) != get(measured, m);
    }
  }
  return varies ? std::optional<NoiseBand>(band) : std::nullopt;
}

}  // namespace

std::map<std::string, BaselineEntry> baseline_entries(const Report& report) {
  std::map<std::string, BaselineEntry> out;
  for (const auto& t : report.tests) {
    if (t.verdict == Verdict::unavailable || t.verdict == Verdict::missing || t.verdict == Verdict::skipped ||
        t.mode == Mode::off || t.gtest_failed) {
      continue;
    }
    BaselineEntry e;
    e.metrics = t.metrics;
    e.not_measured = t.not_measured;
    e.mode = t.mode;
    for (const auto& s : t.stacks) e.top_stacks.push_back(join_stack(s.frames));
    e.call_sites = t.call_sites;
    e.call_sites_complete = t.call_sites_complete && !t.call_sites.empty();
    // Over the run and its samples: the most other threads made, and the
    // bands of what the test's own thread and its other threads made. Not
    // how often they ran or the test waited: that follows the machine's
    // load, not the code.
    e.other_threads = allocated_part(t.other_threads);
    for (const Measurement& sample : t.samples) keep_most(e.other_threads, allocated_part(sample.other_threads));
    if (!e.other_threads.empty()) {
      const AllocationCount own = own_thread_part(t.metrics, t.other_threads);
      ThreadPartBand band{own, own};
      for (const Measurement& sample : t.samples) widen(band, own_thread_part(sample.metrics, sample.other_threads));
      e.own_thread = band;
      ThreadPartBand others{other_threads_part(t.other_threads), other_threads_part(t.other_threads)};
      for (const Measurement& sample : t.samples) widen(others, other_threads_part(sample.other_threads));
      e.other_threads_band = others;
    }
    e.setup_residue = t.setup_residue && t.metrics.live_allocations > 0;
    if (t.mode == Mode::sampled) e.standard_errors = t.standard_errors;
    if (t.alone) e.alone = NoiseBand{1, *t.alone, *t.alone};
    if (!t.samples.empty()) e.noise = learned_band(t.metrics, t.samples);
    out[t.name] = std::move(e);
  }
  return out;
}

bool run_records_baseline(bool baseline_exists, bool update_requested) noexcept {
  return update_requested || !baseline_exists;
}

BaselineMerge merge_run_into(Baseline& baseline, const Report& run, const BaselineMergeRules& rules) {
  BaselineMerge write;
  apply(baseline, baseline_entries(run), run, rules, write);
  return write;
}

BaselineMerge merge_runs_into(Baseline& baseline, const std::vector<Report>& runs, const BaselineMergeRules& rules) {
  BaselineMerge write;
  if (runs.empty()) return write;
  Report first = runs.front();
  for (const Report& r : runs) first.run.complete = first.run.complete && r.run.complete;
  apply(baseline, calibrated_entries(runs), first, rules, write);
  return write;
}

std::string describe_baseline_write(const std::string& path, bool existed, const BaselineMerge& write) {
  if (!write.blocked.empty()) return path + ": not written: " + write.blocked + "; fix: " + write.blocked_fix;
  const BaselineUpdate& u = write.update;
  if (!existed) return "created " + path + " (" + std::to_string(u.added) + " tests)";
  return "updated " + path + " (" + std::to_string(u.added) + " added, " + std::to_string(u.changed) + " changed, " +
         std::to_string(u.unchanged) + " unchanged)";
}

}  // namespace heapgate
