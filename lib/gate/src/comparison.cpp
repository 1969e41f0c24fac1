// SPDX-License-Identifier: MIT
// Comparing a test's metrics with its baseline entry, step 5 of judge():
// the fixed tolerances, or the sampling error of two estimates, plus the
// scheduling allowance of a threaded test, or the noise band of a calibrated
// one (noise_band.cpp); and the comparison of a test run alone with the entry's `alone` band
// (docs/design.md §6a, §6b).
#include "heapgate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "heapgate/sampling.h"
#include "noise_band.h"

namespace heapgate {
namespace {

using detail::noise_band_limits;
using detail::NoiseBandLimits;
using detail::widened_limits;

// "sampled: baseline ±1200, this run ±1300 (standard errors); 3 of them of the difference"
std::string describe_sampling_limit(MetricName m, const BaselineEntry* baseline, const std::optional<Metrics>& errors) {
  auto error = [m](const std::optional<Metrics>& e) {
    return e ? "\xC2\xB1" + std::to_string(get(*e, m)) : std::string("unknown");
  };
  char z[16];
  std::snprintf(z, sizeof z, "%g", kSamplingConfidenceZ);
  return "sampled estimates: standard error " + error(baseline->standard_errors) + " in the baseline, " +
         error(errors) + " in this run; the limit is " + z + " standard errors of their difference";
}

// The largest mean block of any call site: a block the test is known to make.
std::uint64_t largest_block(const std::vector<CallSite>& sites) {
  std::uint64_t largest = 0;
  for (const CallSite& site : sites) {
    if (site.allocations == 0) continue;
    largest = std::max(largest, site.bytes / site.allocations + (site.bytes % site.allocations != 0));
  }
  return largest;
}

// A threaded test's allocations or allocated bytes judged in two parts
// (compare_to_baseline()'s doc, docs/design.md §6a), each against the band it
// made when recorded: its own thread's both ways; its other threads' in
// growth only, as how much of a background thread's work lands outside the
// test is scheduling.
struct PartsJudgement {
  bool grew = false;
  bool shrank = false;
  /// The other threads' part grew beyond its limit.
  bool others_grew = false;
  /// How far the part that moved may move in the direction it moved.
  std::uint64_t limit = 0;
  /// Each part's count, recorded band and upper limit in this metric.
  std::uint64_t own = 0, own_upper = 0, other = 0, other_upper = 0;
  bool own_banded = false;
  bool others_banded = false;
  /// "its own thread made 170 (recorded 170, limit 172); other threads made
  /// 391 (recorded 304–305, limit 339)".
  std::string text;
};

std::string range_text(std::uint64_t low, std::uint64_t high) {
  return low == high ? std::to_string(low) : std::to_string(low) + "–" + std::to_string(high);
}

PartsJudgement judge_parts(MetricName m, const BaselineEntry& baseline, const Metrics& current,
                           const ThreadShare& other_now, const Tolerance& tolerance) {
  const bool bytes = m == MetricName::allocated_bytes;
  auto pick = [bytes](const AllocationCount& c) { return bytes ? c.bytes : c.allocations; };
  const ThreadPartBand& band = *baseline.own_thread;
  const std::uint64_t own = pick(own_thread_part(current, other_now));
  const std::uint64_t low = pick(band.low);
  const std::uint64_t high = pick(band.high);
  // What scheduling may move in a part that varied (a queue node pushed at
  // a boundary, one more read of a stream): the allowance a threaded test's
  // totals had before they were split.
  const std::uint64_t allowance =
      scheduling_allowance(m, baseline.other_threads, baseline.metrics, largest_block(baseline.call_sites));
  // The own thread's part is judged by its own variation only. One that
  // repeated in every recorded run is exact, whatever its other threads did:
  // the same calls make the same allocations, and widening it by the totals'
  // spread and the other threads' allowance let one more allocation per test
  // through in every threaded test. A part that varied is widened as a noise
  // band is (noise_band_limits()) and gets the allowance. Scheduling that
  // moves a part that repeated when recorded (a stream read in other chunks)
  // is told from a change by the fresh runs that confirm a regression:
  // one within the band, or two that disagree, clear it (judge()).
  const bool varies = high > low;
  const auto [lower, upper] = widened_limits(low, high, varies, high, tolerance, varies ? allowance : 0);

  PartsJudgement j;
  j.grew = own > upper;
  j.shrank = own < lower;
  j.limit = own >= high ? upper - high : low - lower;

  // The other threads' part: the same requests make the same handler
  // allocations on whichever worker takes them, so it is judged like the
  // own thread's, against its own band; one that varied when recorded is
  // widened as a noise band is. Only its own variation widens it: an own
  // thread that varied by one-time setup says nothing of a background
  // thread's part, and widening that by 10% let one more block per
  // compaction job through. A baseline from
  // before the band was kept knows only the most, and is taken to have varied.
  const ThreadPartBand others = recorded_other_threads_band(baseline);
  const std::uint64_t other = pick(other_threads_part(other_now));
  const std::uint64_t other_low = pick(others.low);
  const std::uint64_t other_high = pick(others.high);
  const bool others_vary = !baseline.other_threads_band || other_high > other_low;
  const std::uint64_t other_upper =
      widened_limits(other_low, other_high, others_vary, other_high, tolerance, allowance).upper;
  j.others_grew = other > other_upper;
  if (j.others_grew && !j.grew) j.limit = other_upper - other_high;
  j.own = own;
  j.own_upper = upper;
  j.own_banded = varies;
  j.other = other;
  j.other_upper = other_upper;
  j.others_banded = others_vary;
  j.grew = j.grew || j.others_grew;
  j.text = "its own thread made " + std::to_string(own) + " (recorded " + range_text(low, high) + ", limit " +
           (j.shrank ? std::to_string(lower) : std::to_string(upper)) + "), other threads made " +
           std::to_string(other) + " (recorded " + range_text(other_low, other_high) + ", limit " +
           std::to_string(other_upper) + ")";
  return j;
}

}  // namespace

std::uint64_t sampling_tolerance(double baseline_error, double current_error) noexcept {
  return saturating_count(
      std::ceil(kSamplingConfidenceZ * std::sqrt(baseline_error * baseline_error + current_error * current_error)));
}

Comparison compare_to_baseline(const Metrics& current, const BaselineEntry* baseline, const Tolerances& tolerances,
                               std::optional<Mode> current_mode, const std::optional<Metrics>& current_errors,
                               const std::vector<MetricName>& not_measured, const ThreadShare* current_other_threads) {
  Comparison c;
  if (baseline == nullptr) {
    c.verdict = Verdict::new_test;
    c.explanation = "new: the baseline has no entry for this test; accept this run to record one.";
    return c;
  }
  Tolerances used = baseline->tolerance ? *baseline->tolerance : tolerances;
  // Two sampled estimates differ by chance: the tolerance of each estimated
  // metric is the sampling error of their difference. A side without errors
  // (a baseline recorded before they were kept) is taken to be as uncertain
  // as the other.
  const bool both_sampled = baseline->mode == Mode::sampled && current_mode == Mode::sampled;
  const bool by_sampling = both_sampled && !baseline->tolerance && (current_errors || baseline->standard_errors);
  if (by_sampling) {
    const Metrics& now = current_errors ? *current_errors : *baseline->standard_errors;
    const Metrics& then = baseline->standard_errors ? *baseline->standard_errors : *current_errors;
    for (MetricName m : kMetricNames) {
      if (m == MetricName::peak_bytes) continue;  // counted by the hooks, not estimated
      used[m] = Tolerance{sampling_tolerance(static_cast<double>(get(then, m)), static_cast<double>(get(now, m))), 0.0};
    }
  }
  // Other threads' allocations land in the test by scheduling: a little
  // more or less of them is not a change (docs/design.md §6a). What it was
  // exposed to: what other threads allocated when recorded, and how often
  // other threads ran or its own thread waited in this run (a baseline keeps
  // no switches: they follow the machine's load).
  ThreadShare exposure = baseline->other_threads;
  if (current_other_threads != nullptr) {
    exposure.switches = current_other_threads->switches;
    exposure.own_waits = current_other_threads->own_waits;
  }
  const bool threaded = !exposure.empty();
  // Two parts need the run's split and the entry's own-thread band; sampled
  // estimates are not split.
  const bool in_parts = threaded && baseline->own_thread && current_other_threads != nullptr && !by_sampling;
  const Tolerances unthreaded = used;
  if (threaded) {
    for (MetricName m : kMetricNames) {
      // max(absolute, relative x baseline) for the test's own thread, plus the scheduling allowance.
      const std::uint64_t own = allowed_change(used[m], get(baseline->metrics, m));
      // A block scheduling adds is one of the kinds the test makes: its bytes
      // may be the largest of them (one more 4 KiB socket buffer when a
      // connection is opened again).
      std::uint64_t allowance =
          scheduling_allowance(m, exposure, baseline->metrics, largest_block(baseline->call_sites));
      // The peak may hold, or lack, any of this run's other-thread blocks as
      // well as the recorded runs': a fiber stack a worker made lands in it
      // or not, moving the peak by far more than the other threads' bytes
      // when recorded, while the own thread allocates as recorded.
      if (m == MetricName::peak_bytes && current_other_threads != nullptr) {
        allowance = std::max(allowance, current_other_threads->bytes);
      }
      constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
      used[m] = Tolerance{own > kMost - allowance ? kMost : own + allowance, 0.0};
    }
  }
  // A test shown to vary by itself when recorded (some count differed between
  // its recorded runs) may also vary in a count that happened to repeat: two
  // or three runs cannot show all of it. Tests against a mock server varied
  // in bytes with their random query ids, repeated their allocations when
  // recorded, and made one more in some later runs (and in every run alone).
  // Such a count gets what scheduling may move a threaded test's (2 blocks);
  // a test that repeated in every count stays exact.
  const bool varied_by_itself = !threaded && baseline->noise &&
                                std::any_of(kMetricNames.begin(), kMetricNames.end(),
                                            [&](MetricName m) { return spread(*baseline->noise, m) > 0; });
  if (varied_by_itself) {
    const Metrics& recorded = baseline->metrics;
    const std::uint64_t block_bytes = mean_block_bytes(recorded.allocated_bytes, recorded.allocations);
    for (MetricName m : kVolumeMetrics) {
      if (spread(*baseline->noise, m) > 0) continue;
      const std::uint64_t blocks = m == MetricName::allocations ? kSchedulingBlocks : kSchedulingBlocks * block_bytes;
      used[m] = Tolerance{allowed_change(used[m], get(recorded, m)) + blocks, 0.0};
    }
  }
  std::string grew;
  std::string shrank;
  std::string noisy;
  // Counts that follow timing, not code, are shown, not gated (timing_bound()).
  const bool follows_timing = baseline->noise && timing_bound(*baseline->noise);
  std::string timing;
  // "allocations 263–305 (this run 350)": the recorded band and this run.
  auto band_and_run = [&](MetricName m) {
    return std::string(to_string(m)) + " " + std::to_string(get(baseline->noise->low, m)) + "–" +
           std::to_string(get(baseline->noise->high, m)) + " (this run " + std::to_string(get(current, m)) + ")";
  };
  auto add = [](std::string& list, const std::string& item, const char* separator) {
    if (!list.empty()) list += separator;
    list += item;
  };
  for (MetricName m : kMetricNames) {
    if (!is_measured(not_measured, m) || !is_measured(baseline->not_measured, m)) continue;
    MetricDelta d = compare_metric(m, get(baseline->metrics, m), get(current, m), used[m]);
    if (follows_timing &&
        (m == MetricName::allocations || m == MetricName::allocated_bytes || m == MetricName::peak_bytes)) {
      d.beyond_tolerance = false;
      d.grew = false;
      add(timing, band_and_run(m), ", ");
      c.deltas.push_back(d);
      continue;
    }
    if (in_parts && (m == MetricName::allocations || m == MetricName::allocated_bytes)) {
      const PartsJudgement parts = judge_parts(m, *baseline, current, *current_other_threads, unthreaded[m]);
      d.beyond_tolerance = parts.grew || parts.shrank;
      d.grew = parts.grew;
      c.other_threads_grew = c.other_threads_grew || parts.others_grew;
      if (!c.parts) {
        c.parts = ThreadPartsJudged{};
        c.parts->own_thread.recorded = *baseline->own_thread;
        c.parts->other_threads.recorded = recorded_other_threads_band(*baseline);
      }
      const bool bytes = m == MetricName::allocated_bytes;
      auto set = [bytes](AllocationCount& count, std::uint64_t v) { (bytes ? count.bytes : count.allocations) = v; };
      set(c.parts->own_thread.now, parts.own);
      set(c.parts->own_thread.limit, parts.own_upper);
      set(c.parts->other_threads.now, parts.other);
      set(c.parts->other_threads.limit, parts.other_upper);
      c.parts->own_thread.banded = c.parts->own_thread.banded || parts.own_banded;
      c.parts->other_threads.banded = c.parts->other_threads.banded || parts.others_banded;
      d.limit = parts.limit;
      if (baseline->noise && spread(*baseline->noise, m) > 0) add(noisy, band_and_run(m), ", ");
      if (d.beyond_tolerance) add(parts.grew ? grew : shrank, describe(d) + ": " + parts.text, "; ");
      c.deltas.push_back(d);
      continue;
    }
    std::string band_text;  // "low–high" when a noise band judges this metric
    if (baseline->noise && spread(*baseline->noise, m) > 0) {
      // A calibrated test is judged by its noise band instead of the tolerance alone.
      const NoiseBand& band = *baseline->noise;
      const std::uint64_t median = get(baseline->metrics, m);
      const NoiseBandLimits limits = noise_band_limits(band, m, median, used[m]);
      const std::uint64_t value = get(current, m);
      d.beyond_tolerance = value > limits.upper || value < limits.lower;
      d.grew = value > limits.upper;
      d.limit = value >= median ? limits.upper - median : median - limits.lower;
      band_text = std::to_string(get(band.low, m)) + "–" + std::to_string(get(band.high, m));
      add(noisy, band_and_run(m), ", ");
    }
    if (d.beyond_tolerance) {
      std::string& list = d.grew ? grew : shrank;
      if (!list.empty()) list += "; ";
      list += describe(d);
      list += d.grew ? ", limit +" : ", limit -";
      list += std::to_string(d.limit);
      if (!band_text.empty()) {
        list += ", outside the band " + band_text + " seen over " + std::to_string(baseline->noise->runs) + " runs";
      }
      if (by_sampling && m != MetricName::peak_bytes) {
        list += " (" + describe_sampling_limit(m, baseline, current_errors) + ")";
      }
    }
    c.deltas.push_back(d);
  }
  if (!grew.empty()) {
    c.verdict = Verdict::regressed;
    c.explanation = "regressed: " + grew + ".";
    if (!shrank.empty()) c.explanation += " Also improved: " + shrank + ".";
  } else if (!shrank.empty()) {
    c.verdict = Verdict::improved;
    c.explanation = "improved: " + shrank + "; accept this run to ratchet the baseline down.";
  } else {
    c.verdict = Verdict::pass;
    c.explanation = "pass: every metric is within tolerance of the baseline.";
  }
  if (baseline->tolerance) c.explanation += " (This test's own tolerances from the baseline were used.)";
  // Only its own thread's waits exposed it to scheduling: no other thread
  // ran in it, when recorded or now.
  const bool only_waited = threaded && exposure.allocations == 0 && exposure.switches == 0 &&
                           (current_other_threads == nullptr || current_other_threads->allocations == 0);
  if (only_waited && c.verdict != Verdict::pass) {
    c.explanation += " No other thread ran in it, but its own thread waited " + std::to_string(exposure.own_waits) +
                     " times in this run (a timer, I/O, a lock): what it allocates may follow timing, so the "
                     "limits allow " +
                     std::to_string(kSchedulingBlocks) + " blocks for scheduling.";
  } else if (in_parts && c.verdict != Verdict::pass) {
    c.explanation += " Its other threads made " + std::to_string(current_other_threads->allocations) +
                     " allocations (" + std::to_string(current_other_threads->bytes) + " bytes), at most " +
                     std::to_string(baseline->other_threads.allocations) + " (" +
                     std::to_string(baseline->other_threads.bytes) + " bytes) when recorded.";
    c.explanation +=
        " Other threads ran in it, so allocations and allocated_bytes are gated in two parts, its own thread's and "
        "its other threads', each within what it made when recorded and the tolerance: its own thread's exactly "
        "when it repeated; a part that varied widened by that, and the other threads' part always, by what "
        "scheduling may move (1% of the other threads' part, at least " +
        std::to_string(kSchedulingBlocks) +
        " blocks); the other threads' part in growth only. peak_bytes may move by all of the other threads' bytes.";
  } else if (threaded && c.verdict != Verdict::pass) {
    if (baseline->other_threads.allocations > 0) {
      c.explanation +=
          " Other threads made " + std::to_string(baseline->other_threads.allocations) + " of its allocations (" +
          std::to_string(baseline->other_threads.bytes) +
          " bytes) when recorded; the limits allow 1% of those, at least " + std::to_string(kSchedulingBlocks) +
          " blocks (in allocated_bytes, one of them the largest the test makes), and all of their bytes in "
          "peak_bytes, for scheduling.";
    } else {
      c.explanation +=
          " Other threads ran during it in this run, without allocating in it when recorded; the limits allow " +
          std::to_string(kSchedulingBlocks) + " blocks for scheduling.";
    }
  }
  if (!noisy.empty()) {
    c.note = "noisy: counts varied over the " + std::to_string(baseline->noise->runs) + " runs recorded: " + noisy +
             "; a run within that band, widened by its spread and at least " +
             std::to_string(static_cast<int>(kNoisyMinimumWidening * 100 + 0.5)) +
             "% of the median, passes (fix or isolate what makes it vary)";
  }
  if (!timing.empty()) {
    c.note = (c.note.empty() ? "" : c.note + ". ") + "Counts follow timing: over the " +
             std::to_string(baseline->noise->runs) + " runs recorded " + timing +
             "; the allocations spread by more than " +
             std::to_string(static_cast<int>(kTimingBoundSpread * 100 + 0.5)) +
             "%, as a test that works for a fixed time or as fast as another thread drains a queue does, so these "
             "are not gated (its leaks are; give it fixed work to gate it)";
  }
  if (current_mode && (*current_mode == Mode::sampled) != (baseline->mode == Mode::sampled)) {
    c.explanation += " Note: the baseline was measured in " + std::string(to_string(baseline->mode)) +
                     " mode and this run in " + std::string(to_string(*current_mode)) +
                     " mode; sampled counts are estimates, so record the baseline in the mode the gate runs in.";
  }
  return c;
}

ThreadShare company_in_suite(const ThreadShare& run) noexcept {
  ThreadShare company = run;
  if (run.own_waits == 0 && run.allocations == 0) company.switches = 0;
  return company;
}

std::optional<Comparison> compare_alone(const Metrics& fresh, const BaselineEntry& baseline, Mode mode) {
  if (!baseline.alone) return std::nullopt;
  BaselineEntry alone = baseline;
  alone.metrics = baseline.alone->low;
  const bool varies = std::any_of(kMetricNames.begin(), kMetricNames.end(),
                                  [&](MetricName m) { return spread(*baseline.alone, m) > 0; });
  alone.noise = varies ? baseline.alone : std::nullopt;
  alone.alone = std::nullopt;
  alone.own_thread = std::nullopt;  // the band alone is of totals
  if (baseline.noise) {
    // A test shown to vary in the suite varies alone too, and one run alone
    // (what calibration measures) cannot show by how much: each metric that
    // varied gets the in-suite band's floor, kNoisyMinimumWidening of the value.
    Tolerances widened = baseline.tolerance ? *baseline.tolerance : Tolerances::for_mode(mode);
    for (MetricName m : kMetricNames) {
      if (spread(*baseline.noise, m) > 0) widened[m].relative = std::max(widened[m].relative, kNoisyMinimumWidening);
    }
    alone.tolerance = widened;
  }
  return compare_to_baseline(fresh, &alone, Tolerances::for_mode(mode), mode);
}

}  // namespace heapgate
