// SPDX-License-Identifier: MIT
// Judging one test (judge()): the rules in the order heapgate/gate.h lists
// them (nothing measured, own failure, budgets, the leak, the baseline with
// its confirmation rule, call sites), each problem explained.
#include "heapgate/gate.h"

#include <algorithm>
#include <string>

#include "growth.h"

namespace heapgate {
namespace {

bool any_live(const Metrics& m) { return m.live_allocations > 0 || m.live_bytes > 0; }

// "allocations 2145, allocated_bytes 389872, peak_bytes 37648": what a fresh run measured.
std::string measured_text(const Metrics& m) {
  return "allocations " + std::to_string(m.allocations) + ", allocated_bytes " + std::to_string(m.allocated_bytes) +
         ", peak_bytes " + std::to_string(m.peak_bytes);
}

}  // namespace

std::string explain_leak(const Metrics& metrics, std::string_view where) {
  if (!any_live(metrics)) return {};
  if (metrics.live_allocations == 0) {
    return "leaked " + std::to_string(metrics.live_bytes) + " bytes still live " + std::string(where);
  }
  return "leaked " + std::to_string(metrics.live_allocations) +
         (metrics.live_allocations == 1 ? " allocation (" : " allocations (") + std::to_string(metrics.live_bytes) +
         " bytes) still live " + std::string(where);
}

std::string explain_over_budget(MetricName metric, std::uint64_t limit, const Metrics& metrics) {
  std::uint64_t value = get(metrics, metric);
  if (value <= limit) return {};
  return std::string(to_string(metric)) + " " + std::to_string(value) + " over the budget of " + std::to_string(limit) +
         " (+" + std::to_string(value - limit) + ")";
}

bool leak_suspected(const Observation& observation, const GatePolicy& policy) noexcept {
  if (!observation.metrics || observation.own_failure) return false;
  const bool checked = observation.check_leaks.value_or(policy.check_leaks);
  return checked && any_live(*observation.metrics);
}

bool setup_residue_known(const Observation& observation, const BaselineEntry* baseline) noexcept {
  if (baseline == nullptr || !baseline->setup_residue || !observation.metrics) return false;
  if (baseline->mode != observation.mode) return false;  // sampled estimates are not exact counts
  const Metrics& m = *observation.metrics;
  // A calibrated entry knows the most its setup ever left.
  const Metrics& most = baseline->noise ? baseline->noise->high : baseline->metrics;
  return m.live_allocations <= most.live_allocations && m.live_bytes <= most.live_bytes;
}

std::optional<std::string> improvement_clears(const Measurement& run, const BaselineEntry& baseline, Mode mode,
                                              const std::string& improvement) {
  const Comparison again = compare_to_baseline(run.metrics, &baseline, Tolerances::for_mode(mode), mode, std::nullopt,
                                               {}, &run.other_threads);
  if (again.verdict == Verdict::improved) return std::nullopt;
  return "not reproducible: " + improvement.substr(0, improvement.find(';')) +
         ", but a fresh run of the test measured " + measured_text(run.metrics) +
         ", not below the baseline's limits: scheduling, not a change.";
}

std::optional<std::string> confirmation_clears(const Measurement& run, const BaselineEntry* baseline, Mode mode,
                                               const std::string& regression) {
  const Metrics& fresh = run.metrics;
  const Comparison again =
      compare_to_baseline(fresh, baseline, Tolerances::for_mode(mode), mode, std::nullopt, {}, &run.other_threads);
  const std::optional<Comparison> alone = baseline != nullptr ? compare_alone(fresh, *baseline, mode) : std::nullopt;
  const std::string measured = measured_text(fresh);
  const std::string first_line = regression.substr(0, regression.find('\n'));
  if (again.verdict != Verdict::regressed) {
    return "not reproducible: " + first_line + " But a fresh run of the test measured " + measured +
           ", within the baseline: timing noise, not a change (heapgate run --calibrate learns this test's spread).";
  }
  if (alone && alone->verdict != Verdict::regressed) {
    // Alone, a change in the test's code adds what it adds in the suite. A
    // test that alone grew nothing beyond its recorded band (it may measure
    // less alone, when a background compaction has landed) did not regress
    // itself.
    return "not reproducible: " + first_line + " But the test run alone measured " + measured +
           (alone->verdict == Verdict::pass ? ", as it did alone" : ", no more than it did alone") +
           " when the baseline was recorded: the difference comes from what earlier tests left behind or from "
           "timing, not from a change in this test.";
  }
  return std::nullopt;
}

namespace {

// variation_clears()'s rule for each part of a threaded test: the lowest of
// the run and the fresh runs in each part, against the part's band widened
// on each side by how far the fresh runs' parts were apart.
bool parts_clear(const Measurement& run, const std::vector<Measurement>& fresh, const BaselineEntry& baseline,
                 Mode mode) {
  AllocationCount own_low = own_thread_part(run.metrics, run.other_threads);
  AllocationCount other_low = other_threads_part(run.other_threads);
  const AllocationCount first_own = own_thread_part(fresh.front().metrics, fresh.front().other_threads);
  const AllocationCount first_other = other_threads_part(fresh.front().other_threads);
  ThreadPartBand own_fresh{first_own, first_own};
  ThreadPartBand other_fresh{first_other, first_other};
  for (const Measurement& f : fresh) {
    const AllocationCount own = own_thread_part(f.metrics, f.other_threads);
    const AllocationCount other = other_threads_part(f.other_threads);
    widen(own_fresh, own);
    widen(other_fresh, other);
    own_low = {std::min(own_low.allocations, own.allocations), std::min(own_low.bytes, own.bytes)};
    other_low = {std::min(other_low.allocations, other.allocations), std::min(other_low.bytes, other.bytes)};
  }
  auto widened = [](ThreadPartBand band, const ThreadPartBand& apart) {
    const AllocationCount by{apart.high.allocations - apart.low.allocations, apart.high.bytes - apart.low.bytes};
    band.low = {band.low.allocations - std::min(band.low.allocations, by.allocations),
                band.low.bytes - std::min(band.low.bytes, by.bytes)};
    band.high = {band.high.allocations + by.allocations, band.high.bytes + by.bytes};
    return band;
  };
  BaselineEntry parts = baseline;
  parts.own_thread = widened(*baseline.own_thread, own_fresh);
  parts.other_threads_band = widened(recorded_other_threads_band(baseline), other_fresh);
  Metrics lowest = run.metrics;
  lowest.allocations = own_low.allocations + other_low.allocations;
  lowest.allocated_bytes = own_low.bytes + other_low.bytes;
  ThreadShare others = run.other_threads;
  others.allocations = other_low.allocations;
  others.bytes = other_low.bytes;
  const Comparison again =
      compare_to_baseline(lowest, &parts, Tolerances::for_mode(mode), mode, std::nullopt, {}, &others);
  return again.verdict != Verdict::regressed;
}

}  // namespace

std::optional<std::string> variation_clears(const Measurement& measured, const std::vector<Measurement>& fresh,
                                            const BaselineEntry& baseline, Mode mode) {
  if (fresh.size() < 2) return std::nullopt;
  const Metrics& run = measured.metrics;
  // Per metric: how far apart the fresh runs were, and the lowest of them
  // and the run. The fresh runs are alike (each a process of its own), so
  // their disagreement is the test's own variation; the run in the suite
  // may differ from them by what earlier tests left behind, which is not.
  // A change in the code moves every run.
  Metrics lowest = run;
  Metrics fresh_low = fresh.front().metrics;
  Metrics highest = fresh.front().metrics;
  for (const Measurement& f : fresh) {
    for (MetricName m : kMetricNames) {
      get(lowest, m) = std::min(get(lowest, m), get(f.metrics, m));
      get(fresh_low, m) = std::min(get(fresh_low, m), get(f.metrics, m));
      get(highest, m) = std::max(get(highest, m), get(f.metrics, m));
    }
  }
  BaselineEntry widened = baseline;
  Tolerances tolerances = baseline.tolerance ? *baseline.tolerance : Tolerances::for_mode(mode);
  std::string seen;
  // The recorded runs' spread is evidence of the same variation: a metric
  // the fresh runs happened to agree on may have varied when recorded.
  auto spread_of = [&](MetricName m) {
    const std::uint64_t recorded = baseline.noise ? spread(*baseline.noise, m) : 0;
    return std::max(get(highest, m) - get(fresh_low, m), recorded);
  };
  // Fresh runs that disagree in a count show the test varies by itself, as
  // recorded runs that disagree do: a count they happened to agree on may then
  // move by 2 blocks (compare_to_baseline()'s rule for a test that varied
  // when recorded): a test may repeat its allocations in both recorded runs
  // while its bytes draw alike by chance, then make one more in every fresh
  // run. A test whose fresh runs agree in every count stays exact, so a
  // planted +1 there still fails.
  auto is_volume = [](MetricName m) {
    return std::find(kVolumeMetrics.begin(), kVolumeMetrics.end(), m) != kVolumeMetrics.end();
  };
  const bool fresh_varied = std::any_of(kVolumeMetrics.begin(), kVolumeMetrics.end(),
                                        [&](MetricName m) { return get(highest, m) != get(fresh_low, m); });
  const std::uint64_t block_bytes = mean_block_bytes(baseline.metrics.allocated_bytes, baseline.metrics.allocations);
  std::string repeated;
  for (MetricName m : kMetricNames) {
    const std::uint64_t fresh_apart = get(highest, m) - get(fresh_low, m);
    std::uint64_t apart = spread_of(m);
    if (fresh_varied && is_volume(m) && apart == 0) {
      apart = m == MetricName::allocations ? kSchedulingBlocks : kSchedulingBlocks * block_bytes;
      repeated += (repeated.empty() ? "" : ", ") + std::string(to_string(m));
    }
    // The peak moves by no more than the sizes drawn move the bytes
    // allocated: a size drawn larger at the peak shows in both.
    if (m == MetricName::peak_bytes) {
      apart = std::max(apart, spread_of(MetricName::allocated_bytes));
    }
    if (apart == 0) continue;
    const std::uint64_t allowed = allowed_change(tolerances[m], get(baseline.metrics, m));
    tolerances[m] = Tolerance{saturating_count(static_cast<double>(allowed) + static_cast<double>(apart)), 0.0};
    if (fresh_apart != 0 && is_volume(m)) {
      seen += (seen.empty() ? "" : ", ") + std::string(to_string(m)) + " " + std::to_string(get(fresh_low, m)) + "–" +
              std::to_string(get(highest, m));
    }
  }
  if (seen.empty()) return std::nullopt;
  widened.tolerance = tolerances;
  // Judged on the totals: the fresh runs' parts are theirs, not the lowest's.
  widened.own_thread = std::nullopt;
  const Comparison again = compare_to_baseline(lowest, &widened, tolerances, mode);
  if (again.verdict == Verdict::regressed) return std::nullopt;
  if (baseline.own_thread && !baseline.other_threads.empty() && !parts_clear(measured, fresh, baseline, mode)) {
    return std::nullopt;
  }
  const std::string blocks = repeated.empty() ? ""
                                              : " (" + repeated + ", which they repeated, by " +
                                                    std::to_string(kSchedulingBlocks) + " blocks)";
  return "varies between runs: " + std::to_string(fresh.size()) + " fresh runs of it measured " + seen +
         ", and the lowest of them and this run is within the baseline's limits widened by that spread" + blocks +
         ": the test's own variation, not a change";
}

Judgement judge(const Observation& observation, const BaselineEntry* baseline, const GatePolicy& policy) {
  Judgement j;
  if (!observation.metrics) {
    j.verdict = Verdict::unavailable;
    j.explanation = observation.unavailable_reason.empty() ? "nothing measured" : observation.unavailable_reason;
    return j;
  }
  const Metrics& m = *observation.metrics;
  if (baseline != nullptr) {
    j.baseline = baseline->metrics;
    j.baseline_noise = baseline->noise;
  }
  // The run in the suite; its confirmations are fresh runs alone.
  const ThreadShare in_suite = company_in_suite(observation.other_threads);
  const Comparison comparison =
      compare_to_baseline(m, baseline, Tolerances::for_mode(observation.mode), observation.mode,
                          observation.standard_errors, observation.not_measured, &in_suite);
  j.deltas = comparison.deltas;
  j.thread_parts = comparison.parts;
  if (observation.own_failure) {
    // GoogleTest keeps a failed assertion's message and result records until
    // the test's results are printed: they would read as the test's leak.
    j.verdict = Verdict::pass;
    j.explanation = "not gated: the test failed its own assertions";
    return j;
  }

  std::string failures;
  std::string notes;
  auto line = [](std::string& to, const std::string& text) {
    if (!to.empty()) to += '\n';
    to += text;
  };
  if (!observation.not_measured.empty()) line(notes, describe_not_measured(observation.not_measured));
  for (const auto& [metric, limit] : observation.budgets) {
    if (!is_measured(observation.not_measured, metric)) {
      line(notes, "the budget on " + std::string(to_string(metric)) + " was not checked: it was not measured");
      continue;
    }
    std::string over = explain_over_budget(metric, limit, m);
    if (!over.empty()) {
      if (j.verdict == Verdict::pass) j.verdict = Verdict::over_budget;
      line(failures, over);
    }
  }
  if (observation.leak.suppressed) {
    Metrics taken;
    taken.live_allocations = observation.leak.suppressed_allocations;
    taken.live_bytes = observation.leak.suppressed_bytes;
    line(notes, explain_leak(taken, observation.leak.where) + "; suppressed by " +
                    (observation.leak.suppressions_source.empty() ? std::string("a suppression")
                                                                  : observation.leak.suppressions_source) +
                    ", so not judged");
  }
  if (leak_suspected(observation, policy) && !observation.leak.suppressed) {
    const LiveGrowth& growth = observation.leak.growth;
    if (observation.leak.residue == LeakResidue::constant && observation.leak.released_later) {
      line(notes, "held, not leaked: " + std::to_string(m.live_allocations) + " blocks (" +
                      std::to_string(m.live_bytes) +
                      " bytes) stayed live after the test and later tests of the run freed every one of them");
    } else if (observation.leak.residue == LeakResidue::constant && observation.leak.from_baseline) {
      line(notes, "one-time initialization: " + std::to_string(m.live_allocations) + " blocks (" +
                      std::to_string(m.live_bytes) +
                      " bytes) stay live, no more than the baseline records as setup; not a leak (not repeated)");
    } else if (observation.leak.residue == LeakResidue::constant) {
      line(notes, "one-time initialization: " + std::to_string(m.live_allocations) + " blocks (" +
                      std::to_string(m.live_bytes) + " bytes) stay live but do not grow when the test repeats" +
                      (growth.empty() ? std::string() : " (" + detail::describe_growth(growth) + ")") + "; not a leak");
    } else {
      if (j.verdict == Verdict::pass) j.verdict = Verdict::leaked;
      line(failures, explain_leak(m, observation.leak.where) +
                         (growth.live_allocations.size() > 1
                              ? "; they grow when the test repeats (" + detail::describe_growth(growth) + ")"
                              : std::string()));
    }
  }
  Verdict compared = policy.compare_baseline ? comparison.verdict : Verdict::pass;
  std::string by_site;  // rule 6's explanation, when a call site regressed the test
  if (policy.compare_baseline && observation.gate_call_sites && baseline != nullptr &&
      (compared == Verdict::pass || compared == Verdict::improved)) {
    if (baseline->noise) {
      line(notes,
           "call sites not gated: the test's counts vary between runs (calibrated noise band), and its call "
           "sites have no band of their own");
    } else if (!baseline->call_sites_complete) {
      line(notes,
           "call sites not gated: the baseline does not hold all of this test's call sites; accept a run with "
           "its call sites gated to record them");
    } else if (observation.call_sites) {
      const Tolerances tolerances = baseline->tolerance ? *baseline->tolerance : Tolerances::for_mode(observation.mode);
      std::vector<std::string> grown = call_sites_beyond(baseline->call_sites, *observation.call_sites, tolerances);
      if (!grown.empty()) {
        by_site = "regressed at a call site while the totals stayed within tolerance:";
        for (const auto& g : grown) by_site += "\n" + g;
        compared = Verdict::regressed;
      }
    }
  }
  const std::string& compared_explanation = by_site.empty() ? comparison.explanation : by_site;
  if (compared == Verdict::regressed && by_site.empty() && observation.mode != Mode::sampled && !policy.accepting) {
    // A change in the code regresses every run; timing or what earlier tests
    // left behind does not: one fresh run that does not regress clears it.
    for (const Measurement& fresh : observation.confirmations) {
      if (auto cleared = confirmation_clears(fresh, baseline, observation.mode, comparison.explanation)) {
        line(notes, *cleared);
        compared = Verdict::pass;
        break;
      }
    }
    if (compared == Verdict::regressed && baseline != nullptr) {
      if (auto varied = variation_clears(Measurement{m, observation.other_threads}, observation.confirmations,
                                         *baseline, observation.mode)) {
        line(notes, "not a regression: " + comparison.explanation.substr(0, comparison.explanation.find(';')) +
                        ". It " + *varied + ".");
        compared = Verdict::pass;
      }
    }
  }
  const bool company = baseline != nullptr && (!baseline->other_threads.empty() || !observation.other_threads.empty());
  if (compared == Verdict::improved && company && observation.mode != Mode::sampled && !policy.accepting) {
    // Scheduling moves a test with company both ways (work a pool's other
    // thread took, a compaction that landed elsewhere); a change in the code
    // improves every run: a fresh run that does not improve clears it, and
    // without one the improvement is not taken (--ratchet writes only
    // improvements that repeated).
    if (observation.confirmations.empty()) {
      j.improvement_unconfirmed = true;
      line(notes, "unconfirmed: " + comparison.explanation.substr(0, comparison.explanation.find(';')) +
                      "; a test with company counts as improved only when a fresh run of it improves too, and "
                      "none was made");
      compared = Verdict::pass;
    }
    for (const Measurement& fresh : observation.confirmations) {
      if (auto cleared = improvement_clears(fresh, *baseline, observation.mode, comparison.explanation)) {
        line(notes, *cleared);
        compared = Verdict::pass;
        break;
      }
    }
  }
  if (policy.accepting && (compared == Verdict::regressed || compared == Verdict::improved)) {
    line(notes, "accepted into the baseline: " + compared_explanation);
    compared = Verdict::pass;
  }
  if (compared == Verdict::regressed) {
    line(failures, compared_explanation);
  } else if (compared == Verdict::improved || compared == Verdict::new_test) {
    line(notes, comparison.explanation);
  }
  if ((compared == Verdict::regressed || compared == Verdict::improved) && !policy.environment_change.empty()) {
    line(notes, "note: " + policy.environment_change + " — the change may come from that alone");
  }
  if (policy.compare_baseline && !comparison.note.empty()) line(notes, comparison.note);
  if (j.verdict == Verdict::pass) j.verdict = compared;
  j.explanation = failures;
  if (!notes.empty()) line(j.explanation, notes);
  return j;
}

void apply(const Judgement& judgement, TestRecord& record) {
  record.verdict = judgement.verdict;
  record.message = judgement.explanation;
  record.deltas = judgement.deltas;
  record.baseline = judgement.baseline;
  record.baseline_noise = judgement.baseline_noise;
  record.thread_parts = judgement.thread_parts;
}

}  // namespace heapgate
