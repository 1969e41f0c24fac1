// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "heapgate/sampling.h"

namespace heapgate {
namespace {

std::string format_count(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

// "Fixture<int>::Fixture()" (template arguments in either part are ignored).
bool is_default_constructor(const std::string& name) {
  if (name.size() < 3 || name.compare(name.size() - 2, 2, "()") != 0) return false;
  const std::string qualified = name.substr(0, name.size() - 2);
  const std::size_t sep = qualified.rfind("::");
  if (sep == std::string::npos) return false;
  auto bare = [](std::string text) {
    const std::size_t angle = text.find('<');
    if (angle != std::string::npos) text.resize(angle);
    const std::size_t scope = text.rfind("::");
    return scope == std::string::npos ? text : text.substr(scope + 2);
  };
  return bare(qualified.substr(0, sep)) == bare(qualified.substr(sep + 2));
}

// A stack made by GoogleTest for every test rather than by the test: the
// fixture object itself ("[framework]"), or testing::Test's flag saver, built
// while the generated test class and its fixtures are default-constructed
// (after std:: library frames; GoogleTest's own frames are already dropped).
bool is_gtest_overhead(const StackSample& stack) {
  bool seen_own = false;
  bool constructors = false;
  bool generated = false;
  for (const auto& frame : stack.frames) {
    if (frame.rfind("std::", 0) == 0 && !seen_own) continue;
    seen_own = true;
    const std::string name = frame.substr(0, frame.rfind(" at ") == std::string::npos ? frame.size() : frame.rfind(" at "));
    if (name == "[framework]") continue;
    if (!is_default_constructor(name)) return false;
    constructors = true;
    generated = generated || (name.size() > 7 && name.compare(name.size() - 7, 7, "_Test()") == 0);
  }
  // Only framework frames, or a chain of default constructors that ends in
  // the generated test class.
  return !constructors || generated;
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

bool any_live(const Metrics& m) { return m.live_allocations > 0 || m.live_bytes > 0; }

// "f(int) at file.cpp:12" → {"f(int)", "file.cpp:12"} (normalize_profile's with_lines form).
std::pair<std::string, std::string> split_location(const std::string& frame) {
  const std::size_t at = frame.rfind(" at ");
  if (at == std::string::npos) return {frame, {}};
  return {frame.substr(0, at), frame.substr(at + 4)};
}

bool is_library_frame(const std::string& function) {
  for (const char* prefix : {"std::", "__gnu_cxx::", "operator new", "operator delete", "__cxx"}) {
    if (function.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string signed_count(std::int64_t v) { return (v >= 0 ? "+" : "") + std::to_string(v); }

// "sampled: baseline ±1200, this run ±1300 (standard errors); 3 of them of the difference"
std::string describe_sampling_limit(MetricName m, const BaselineEntry* baseline, const std::optional<Metrics>& errors) {
  auto error = [m](const std::optional<Metrics>& e) {
    return e ? "\xC2\xB1" + std::to_string(get(*e, m)) : std::string("unknown");
  };
  char z[16];
  std::snprintf(z, sizeof z, "%g", kSamplingConfidenceZ);
  return "sampled estimates: standard error " + error(baseline->standard_errors) + " in the baseline, " + error(errors) +
         " in this run; the limit is " + z + " standard errors of their difference";
}

}  // namespace

std::uint64_t sampling_tolerance(double baseline_error, double current_error) noexcept {
  return saturating_count(
      std::ceil(kSamplingConfidenceZ * std::sqrt(baseline_error * baseline_error + current_error * current_error)));
}

Comparison compare_to_baseline(const Metrics& current, const BaselineEntry* baseline, const Tolerances& tolerances,
                               std::optional<Mode> current_mode, const std::optional<Metrics>& current_errors) {
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
  // more or less of them is not a change (docs/design.md §6a).
  const bool threaded = !baseline->other_threads.empty();
  if (threaded) {
    for (MetricName m : kMetricNames) {
      // max(absolute, relative x baseline) for the test's own thread, plus the scheduling allowance.
      const std::uint64_t own = allowed_change(used[m], get(baseline->metrics, m));
      const std::uint64_t allowance = scheduling_allowance(m, baseline->other_threads);
      used[m] = Tolerance{own > std::numeric_limits<std::uint64_t>::max() - allowance ? std::numeric_limits<std::uint64_t>::max()
                                                                                    : own + allowance,
                          0.0};
    }
  }
  std::string grew;
  std::string shrank;
  std::string noisy;
  for (MetricName m : kMetricNames) {
    MetricDelta d = compare_metric(m, get(baseline->metrics, m), get(current, m), used[m]);
    if (baseline->noise && spread(*baseline->noise, m) > 0) {
      // A calibrated test passes anywhere within its band widened by its own
      // spread (and the tolerance) on each side: N runs rarely see a test's
      // extremes, and a change that matters moves it by more than it strays.
      // A few runs can also miss a second state altogether (a compaction
      // done or not by the time the test writes: LevelDB's Harness tests
      // jump 8-10% between runs that saw none of it), so a test shown to vary
      // is widened by at least kNoisyMinimumWidening of its median.
      const NoiseBand& band = *baseline->noise;
      const std::uint64_t median = get(baseline->metrics, m);
      const std::uint64_t floor_width = saturating_count(std::ceil(kNoisyMinimumWidening * static_cast<double>(median)));
      const std::uint64_t width = std::max(spread(band, m), floor_width);
      const std::uint64_t high = get(band.high, m);
      const std::uint64_t low = get(band.low, m);
      const std::uint64_t upper = high + width + allowed_change(used[m], high);
      const std::uint64_t slack = width + allowed_change(used[m], low);
      const std::uint64_t lower = low > slack ? low - slack : 0;
      const std::uint64_t value = get(current, m);
      d.beyond_tolerance = value > upper || value < lower;
      d.limit = value >= median ? upper - median : median - lower;
      if (!noisy.empty()) noisy += ", ";
      noisy += std::string(to_string(m)) + " " + std::to_string(low) + "–" + std::to_string(high);
    }
    if (d.beyond_tolerance) {
      std::string& list = d.delta > 0 ? grew : shrank;
      if (!list.empty()) list += "; ";
      list += describe(d);
      list += d.delta > 0 ? ", limit +" : ", limit -";
      list += std::to_string(d.limit);
      if (by_sampling && m != MetricName::peak_bytes) list += " (" + describe_sampling_limit(m, baseline, current_errors) + ")";
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
  if (threaded && c.verdict != Verdict::pass) {
    c.explanation += " Other threads made " + std::to_string(baseline->other_threads.allocations) + " of its allocations (" +
                     std::to_string(baseline->other_threads.bytes) +
                     " bytes) when recorded; the limits allow 1% of those, at least one block, for scheduling.";
  }
  if (!noisy.empty()) {
    c.note = "noisy: over " + std::to_string(baseline->noise->runs) + " calibration runs " + noisy +
             "; within that band widened by its spread, at least 10% of the median, passes (fix or isolate what "
             "makes it vary)";
  }
  if (current_mode && (*current_mode == Mode::sampled) != (baseline->mode == Mode::sampled)) {
    c.explanation += " Note: the baseline was measured in " + std::string(to_string(baseline->mode)) +
                     " mode and this run in " + std::string(to_string(*current_mode)) +
                     " mode; sampled counts are estimates, so record the baseline in the mode the gate runs in.";
  }
  return c;
}

std::optional<Comparison> compare_alone(const Metrics& fresh, const BaselineEntry& baseline, Mode mode) {
  if (!baseline.alone) return std::nullopt;
  BaselineEntry alone = baseline;
  alone.metrics = baseline.alone->low;
  const bool varies = std::any_of(kMetricNames.begin(), kMetricNames.end(),
                                  [&](MetricName m) { return spread(*baseline.alone, m) > 0; });
  alone.noise = varies ? baseline.alone : std::nullopt;
  alone.alone = std::nullopt;
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

std::string explain_leak(const Metrics& metrics, std::string_view where) {
  if (!any_live(metrics)) return {};
  if (metrics.live_allocations == 0) return "leaked " + std::to_string(metrics.live_bytes) + " bytes still live " + std::string(where);
  return "leaked " + std::to_string(metrics.live_allocations) +
         (metrics.live_allocations == 1 ? " allocation (" : " allocations (") + std::to_string(metrics.live_bytes) +
         " bytes) still live " + std::string(where);
}

std::string explain_over_budget(MetricName metric, std::uint64_t limit, const Metrics& metrics) {
  std::uint64_t value = get(metrics, metric);
  if (value <= limit) return {};
  return std::string(to_string(metric)) + " " + std::to_string(value) + " over the budget of " +
         std::to_string(limit) + " (+" + std::to_string(value - limit) + ")";
}

bool grows(const LiveGrowth& growth) noexcept {
  const auto& n = growth.live_allocations;
  const auto& b = growth.live_bytes;
  if (n.empty() || b.size() != n.size()) return false;
  if (n.size() == 1) return n[0] > 0 || b[0] > 0;
  for (std::size_t i = 1; i < n.size(); ++i) {
    if (!(n[i] > n[i - 1] || b[i] > b[i - 1])) return false;
  }
  return true;
}

namespace {

// "after 1, 2, 3 runs: 3, 6, 9 blocks (96, 192, 288 bytes)"
std::string describe_growth(const LiveGrowth& g) {
  std::string runs;
  std::string blocks;
  std::string bytes;
  for (std::size_t i = 0; i < g.live_allocations.size(); ++i) {
    const char* sep = i == 0 ? "" : ", ";
    runs += sep + std::to_string(i + 1);
    blocks += sep + std::to_string(g.live_allocations[i]);
    bytes += sep + std::to_string(g.live_bytes[i]);
  }
  return "live after " + runs + (g.live_allocations.size() == 1 ? " run: " : " runs: ") + blocks + " blocks (" +
         bytes + " bytes)";
}

}  // namespace

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

std::optional<std::string> confirmation_clears(const Metrics& fresh, const BaselineEntry* baseline, Mode mode,
                                               const std::string& regression) {
  const Comparison again = compare_to_baseline(fresh, baseline, Tolerances::for_mode(mode), mode);
  const std::optional<Comparison> alone = baseline != nullptr ? compare_alone(fresh, *baseline, mode) : std::nullopt;
  const std::string measured = "allocations " + std::to_string(fresh.allocations) + ", allocated_bytes " +
                               std::to_string(fresh.allocated_bytes) + ", peak_bytes " + std::to_string(fresh.peak_bytes);
  const std::string first_line = regression.substr(0, regression.find('\n'));
  if (again.verdict != Verdict::regressed) {
    return "not reproducible: " + first_line + " But a fresh run of the test measured " + measured +
           ", within the baseline: timing noise, not a change (heapgate run --calibrate learns this test's spread).";
  }
  if (alone && alone->verdict != Verdict::regressed) {
    // Alone, a change in the test's code adds what it adds in the suite. A
    // test that alone grew nothing beyond its recorded band (it may measure
    // less: LevelDB's DBTest.GetEncountersEmptyLevel alone is 1.6% lighter
    // when a compaction has landed) did not regress itself.
    return "not reproducible: " + first_line + " But the test run alone measured " + measured +
           (alone->verdict == Verdict::pass ? ", as it did alone" : ", no more than it did alone") +
           " when the baseline was recorded: the difference comes from what earlier tests left behind or from "
           "timing, not from a change in this test.";
  }
  return std::nullopt;
}

Judgement judge(const Observation& observation, const BaselineEntry* baseline, const GatePolicy& policy) {
  Judgement j;
  if (!observation.metrics) {
    j.verdict = Verdict::unavailable;
    j.explanation = observation.unavailable_reason.empty() ? "nothing measured" : observation.unavailable_reason;
    return j;
  }
  const Metrics& m = *observation.metrics;
  if (baseline != nullptr) j.baseline = baseline->metrics;
  const Comparison comparison = compare_to_baseline(m, baseline, Tolerances::for_mode(observation.mode), observation.mode,
                                                    observation.standard_errors);
  j.deltas = comparison.deltas;
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
  for (const auto& [metric, limit] : observation.budgets) {
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
    if (observation.leak.residue == LeakResidue::constant && observation.leak.from_baseline) {
      line(notes, "one-time initialization: " + std::to_string(m.live_allocations) + " blocks (" +
                      std::to_string(m.live_bytes) +
                      " bytes) stay live, no more than the baseline records as setup; not a leak (not repeated)");
    } else if (observation.leak.residue == LeakResidue::constant) {
      line(notes, "one-time initialization: " + std::to_string(m.live_allocations) + " blocks (" +
                      std::to_string(m.live_bytes) + " bytes) stay live but do not grow when the test repeats" +
                      (growth.empty() ? std::string() : " (" + describe_growth(growth) + ")") + "; not a leak");
    } else {
      if (j.verdict == Verdict::pass) j.verdict = Verdict::leaked;
      line(failures, explain_leak(m, observation.leak.where) +
                         (growth.live_allocations.size() > 1 ? "; they grow when the test repeats (" + describe_growth(growth) + ")"
                                            : std::string()));
    }
  }
  Verdict compared = policy.compare_baseline ? comparison.verdict : Verdict::pass;
  std::string by_site;  // rule 6's explanation, when a call site regressed the test
  if (policy.compare_baseline && observation.gate_call_sites && baseline != nullptr &&
      (compared == Verdict::pass || compared == Verdict::improved)) {
    if (baseline->noise) {
      line(notes, "call sites not gated: the test's counts vary between runs (calibrated noise band), and its call "
                  "sites have no band of their own");
    } else if (!baseline->call_sites_complete) {
      line(notes, "call sites not gated: the baseline does not hold all of this test's call sites; accept a run with "
                  "its call sites gated to record them");
    } else if (observation.call_sites) {
      const Tolerances tolerances =
          baseline->tolerance ? *baseline->tolerance : Tolerances::for_mode(observation.mode);
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
    for (const Metrics& fresh : observation.confirmations) {
      if (auto cleared = confirmation_clears(fresh, baseline, observation.mode, comparison.explanation)) {
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
}

Observation observation_of(const TestRecord& record) {
  Observation o;
  o.mode = record.mode;
  if (record.verdict != Verdict::unavailable && record.mode != Mode::off) {
    o.metrics = record.metrics;
    o.standard_errors = record.standard_errors;
  } else {
    o.unavailable_reason = record.message;
  }
  o.own_failure = record.gtest_failed;
  // Complete call sites were measured because the test gates them.
  if (record.call_sites_complete) {
    o.gate_call_sites = true;
    o.call_sites = record.call_sites;
  }
  for (const auto& [name, limit] : record.budgets) {
    if (auto metric = parse_metric_name(name)) o.budgets[*metric] = limit;
  }
  o.leak.growth = record.growth;
  if (record.legacy_evidence) {
    // A version 1 report kept no evidence: a leak stays a leak, live blocks
    // that were not one stay out of the leak rule, and a regression cleared
    // by a fresh run cannot be told from one that was not.
    if (record.verdict == Verdict::leaked) {
      o.leak.residue = LeakResidue::grows;
    } else {
      o.check_leaks = false;
    }
    return o;
  }
  o.check_leaks = record.leaks_checked;
  if (record.suppressed) {
    o.leak.suppressed = true;
    o.leak.suppressed_allocations = record.suppressed->allocations;
    o.leak.suppressed_bytes = record.suppressed->bytes;
    o.leak.suppressions_source = record.suppressed->source;
  }
  if (record.setup_residue) {
    o.leak.residue = LeakResidue::constant;
    o.leak.from_baseline = record.growth.empty();  // judged from the baseline, not repeated
  } else if (!record.growth.empty()) {
    o.leak.residue = grows(record.growth) ? LeakResidue::grows : LeakResidue::constant;
  }
  o.confirmations = record.confirmations;
  return o;
}

std::vector<StackSample> explaining_stacks(std::vector<StackSample> stacks, Verdict verdict, std::size_t limit) {
  stacks.erase(std::remove_if(stacks.begin(), stacks.end(), is_gtest_overhead), stacks.end());
  if (verdict == Verdict::leaked) {
    stacks.erase(std::remove_if(stacks.begin(), stacks.end(),
                                [](const StackSample& s) { return s.counts.live_objects <= 0; }),
                 stacks.end());
    std::stable_sort(stacks.begin(), stacks.end(), [](const StackSample& a, const StackSample& b) {
      return a.counts.live_bytes > b.counts.live_bytes;
    });
  } else {
    std::stable_sort(stacks.begin(), stacks.end(), [](const StackSample& a, const StackSample& b) {
      return a.counts.accum_objects > b.counts.accum_objects;
    });
  }
  if (stacks.size() > limit) stacks.resize(limit);
  return stacks;
}

std::string failure_text(const TestRecord& record, const std::string& stacks_source,
                         const std::string& no_stacks_reason) {
  std::string out = "heapgate: " + record.name + " " + std::string(to_string(record.verdict)) + " (" +
                    std::string(to_string(record.mode)) + " mode)\n";
  if (!record.message.empty()) out += record.message + "\n";
  if (!record.stacks.empty()) {
    out += "  top stacks (" + stacks_source + "):\n";
    for (const auto& s : record.stacks) {
      if (record.verdict == Verdict::leaked) {
        out += "    " + format_count(s.counts.live_objects) + " blocks, " + format_count(s.counts.live_bytes) +
               " B still live, allocated at:\n";
      } else {
        out += "    " + format_count(s.counts.accum_objects) + " allocations, " + format_count(s.counts.accum_bytes) +
               " B, at:\n";
      }
      for (const auto& frame : s.frames) out += "      " + compact_name(frame) + "\n";
    }
  } else if (!no_stacks_reason.empty()) {
    out += "  (no stacks: " + no_stacks_reason + ")\n";
  }
  return out;
}

std::vector<CallSite> call_sites_of(const std::vector<StackSample>& stacks, std::size_t limit) {
  std::map<std::string, CallSite> by_function;
  for (const auto& s : stacks) {
    if (s.frames.empty() || is_gtest_overhead(s)) continue;
    std::size_t pick = 0;
    for (std::size_t i = 0; i < s.frames.size(); ++i) {
      if (!is_library_frame(split_location(s.frames[i]).first)) {
        pick = i;
        break;
      }
    }
    auto [function, location] = split_location(s.frames[pick]);
    function = compact_name(function);
    CallSite& site = by_function[function];
    site.function = function;
    if (site.location.empty()) site.location = location;
    site.allocations += static_cast<std::uint64_t>(s.counts.accum_objects > 0 ? s.counts.accum_objects + 0.5 : 0);
    site.bytes += static_cast<std::uint64_t>(s.counts.accum_bytes > 0 ? s.counts.accum_bytes + 0.5 : 0);
  }
  std::vector<CallSite> all;
  for (auto& [name, site] : by_function) all.push_back(std::move(site));
  std::vector<CallSite> by_bytes = all;
  auto more_allocations = [](const CallSite& a, const CallSite& b) {
    return a.allocations != b.allocations ? a.allocations > b.allocations : a.function < b.function;
  };
  std::sort(all.begin(), all.end(), more_allocations);
  std::sort(by_bytes.begin(), by_bytes.end(), [](const CallSite& a, const CallSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.function < b.function;
  });
  std::vector<CallSite> out(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(limit, all.size())));
  for (std::size_t i = 0; i < by_bytes.size() && i < limit; ++i) {
    bool kept = std::any_of(out.begin(), out.end(), [&](const CallSite& c) { return c.function == by_bytes[i].function; });
    if (!kept) out.push_back(by_bytes[i]);
  }
  std::sort(out.begin(), out.end(), more_allocations);
  return out;
}

std::vector<CallSiteChange> call_site_changes(const std::vector<CallSite>& before, const std::vector<CallSite>& after) {
  std::map<std::string, CallSiteChange> changes;
  for (const auto& c : before) {
    CallSiteChange& ch = changes[c.function];
    ch.function = c.function;
    ch.location = c.location;
    ch.allocations_before += c.allocations;
    ch.bytes_before += c.bytes;
  }
  for (const auto& c : after) {
    CallSiteChange& ch = changes[c.function];
    ch.function = c.function;
    if (!c.location.empty()) ch.location = c.location;
    ch.allocations_after += c.allocations;
    ch.bytes_after += c.bytes;
  }
  std::vector<CallSiteChange> list;
  for (auto& [name, ch] : changes) {
    if (ch.allocations_delta() != 0 || ch.bytes_delta() != 0) list.push_back(ch);
  }
  // The map gave function order; stable keeps it among equal changes.
  std::stable_sort(list.begin(), list.end(), [](const CallSiteChange& a, const CallSiteChange& b) {
    auto mag = [](std::int64_t v) { return v < 0 ? -v : v; };
    return mag(a.allocations_delta()) != mag(b.allocations_delta())
               ? mag(a.allocations_delta()) > mag(b.allocations_delta())
               : mag(a.bytes_delta()) > mag(b.bytes_delta());
  });
  return list;
}

namespace {

// "+56 allocations (+1792 B) at strcache::Lru::join_all() (lru.cpp:42)"
std::string describe_change(const CallSiteChange& c) {
  const std::int64_t allocations = c.allocations_delta();
  return signed_count(allocations) + (allocations == 1 || allocations == -1 ? " allocation (" : " allocations (") +
         signed_count(c.bytes_delta()) + " B) at " + c.function + (c.location.empty() ? "" : " (" + c.location + ")");
}

}  // namespace

std::string explain_call_site_changes(const std::vector<CallSite>& before, const std::vector<CallSite>& after,
                                      std::size_t limit) {
  const std::vector<CallSiteChange> list = call_site_changes(before, after);
  std::string out;
  for (std::size_t i = 0; i < list.size() && i < limit; ++i) {
    if (!out.empty()) out += '\n';
    out += describe_change(list[i]);
  }
  return out;
}

std::vector<std::string> call_sites_beyond(const std::vector<CallSite>& before, const std::vector<CallSite>& after,
                                           const Tolerances& tolerances) {
  std::vector<std::string> out;
  for (const CallSiteChange& c : call_site_changes(before, after)) {
    const std::uint64_t allowed_allocations = allowed_change(tolerances[MetricName::allocations], c.allocations_before);
    const std::uint64_t allowed_bytes = allowed_change(tolerances[MetricName::allocated_bytes], c.bytes_before);
    const bool more_allocations = c.allocations_after > c.allocations_before &&
                                  c.allocations_after - c.allocations_before > allowed_allocations;
    const bool more_bytes = c.bytes_after > c.bytes_before && c.bytes_after - c.bytes_before > allowed_bytes;
    if (!more_allocations && !more_bytes) continue;
    std::string line = describe_change(c);
    line += c.allocations_before == 0 && c.bytes_before == 0 ? ", a new call site" : "";
    line += more_allocations ? ", limit +" + std::to_string(allowed_allocations) + " allocations"
                             : ", limit +" + std::to_string(allowed_bytes) + " B";
    out.push_back(std::move(line));
  }
  return out;
}

void judge_run(Report& report, const Baseline& baseline, const GatePolicy& policy, bool whole_run) {
  std::vector<TestRecord> kept;
  for (TestRecord& record : report.tests) {
    auto entry = baseline.tests.find(record.name);
    const BaselineEntry* base = entry == baseline.tests.end() ? nullptr : &entry->second;
    if (record.verdict == Verdict::missing) {
      if (base == nullptr) continue;  // the entry left the baseline too
      record.baseline = base->metrics;
      kept.push_back(std::move(record));
      continue;
    }
    if (record.verdict == Verdict::unavailable) {
      kept.push_back(std::move(record));
      continue;
    }
    const std::string explained = record.message;
    const Verdict before = record.verdict;
    apply(judge(observation_of(record), base, policy), record);
    // A leak's message may carry what the re-run found; keep it.
    if (before == Verdict::leaked && record.verdict == Verdict::leaked) record.message = explained;
    kept.push_back(std::move(record));
  }
  report.tests = std::move(kept);
  if (whole_run) {
    add_missing_tests(report, baseline);
  } else {
    sort_tests(report);
  }
}

std::vector<TestRecord> missing_tests(const Report& report, const Baseline& baseline) {
  std::set<std::string> ran;
  for (const auto& t : report.tests) ran.insert(t.name);
  std::vector<TestRecord> out;
  for (const auto& [name, entry] : baseline.tests) {
    if (ran.count(name) != 0) continue;
    TestRecord t;
    t.name = name;
    std::size_t dot = name.find('.');
    t.suite = name.substr(0, dot);
    t.test = dot == std::string::npos ? std::string() : name.substr(dot + 1);
    t.mode = entry.mode;
    t.baseline = entry.metrics;
    t.verdict = Verdict::missing;
    t.message = "the baseline has an entry for " + name +
                ", but the test did not run; if it was deleted or renamed, prune its baseline entry";
    out.push_back(std::move(t));
  }
  return out;
}

void add_missing_tests(Report& report, const Baseline& baseline) {
  for (TestRecord& t : missing_tests(report, baseline)) report.tests.push_back(std::move(t));
  sort_tests(report);
}

std::map<std::string, BaselineEntry> baseline_entries(const Report& report) {
  std::map<std::string, BaselineEntry> out;
  for (const auto& t : report.tests) {
    if (t.verdict == Verdict::unavailable || t.verdict == Verdict::missing || t.mode == Mode::off || t.gtest_failed) {
      continue;
    }
    BaselineEntry e;
    e.metrics = t.metrics;
    e.mode = t.mode;
    for (const auto& s : t.stacks) e.top_stacks.push_back(join_stack(s.frames));
    e.call_sites = t.call_sites;
    e.call_sites_complete = t.call_sites_complete && !t.call_sites.empty();
    e.other_threads = t.other_threads;
    e.setup_residue = t.setup_residue && t.metrics.live_allocations > 0;
    if (t.mode == Mode::sampled) e.standard_errors = t.standard_errors;
    if (t.alone) e.alone = NoiseBand{1, *t.alone, *t.alone};
    out[t.name] = std::move(e);
  }
  return out;
}

std::map<std::string, BaselineEntry> calibrated_entries(const std::vector<Report>& runs) {
  if (runs.empty()) return {};
  std::vector<std::map<std::string, BaselineEntry>> per_run;
  per_run.reserve(runs.size());
  for (const Report& run : runs) per_run.push_back(baseline_entries(run));
  std::map<std::string, BaselineEntry> out;
  for (const auto& [name, first] : per_run.front()) {
    std::vector<const BaselineEntry*> seen;
    for (const auto& entries : per_run) {
      auto it = entries.find(name);
      if (it == entries.end()) break;
      seen.push_back(&it->second);
    }
    if (seen.size() != per_run.size()) continue;
    BaselineEntry entry = first;
    NoiseBand band;
    band.runs = static_cast<std::uint32_t>(seen.size());
    bool varies = false;
    for (MetricName m : kMetricNames) {
      std::vector<std::uint64_t> values;
      for (const BaselineEntry* e : seen) values.push_back(get(e->metrics, m));
      std::sort(values.begin(), values.end());
      get(entry.metrics, m) = values[(values.size() - 1) / 2];
      get(band.low, m) = values.front();
      get(band.high, m) = values.back();
      varies = varies || values.front() != values.back();
    }
    if (varies) entry.noise = band;
    // Setup residue when some run judged it so and no run left live blocks
    // that were not (a run that left none says nothing either way).
    entry.setup_residue = false;
    bool contradicted = false;
    for (const BaselineEntry* e : seen) {
      entry.setup_residue = entry.setup_residue || e->setup_residue;
      contradicted = contradicted || (e->metrics.live_allocations > 0 && !e->setup_residue);
    }
    entry.setup_residue = entry.setup_residue && !contradicted;
    for (const BaselineEntry* e : seen) {
      entry.other_threads.allocations = std::max(entry.other_threads.allocations, e->other_threads.allocations);
      entry.other_threads.bytes = std::max(entry.other_threads.bytes, e->other_threads.bytes);
    }
    entry.alone = std::nullopt;
    for (const BaselineEntry* e : seen) {
      if (!e->alone) continue;
      if (!entry.alone) {
        entry.alone = e->alone;
        continue;
      }
      entry.alone->runs += e->alone->runs;
      for (MetricName m : kMetricNames) {
        get(entry.alone->low, m) = std::min(get(entry.alone->low, m), get(e->alone->low, m));
        get(entry.alone->high, m) = std::max(get(entry.alone->high, m), get(e->alone->high, m));
      }
    }
    for (const BaselineEntry* e : seen) {
      if (entry.call_sites.empty()) {
        entry.call_sites = e->call_sites;
        entry.call_sites_complete = e->call_sites_complete;
      }
      if (entry.top_stacks.empty()) entry.top_stacks = e->top_stacks;
    }
    out.emplace(name, std::move(entry));
  }
  return out;
}

VerdictCounts count_verdicts(const Report& report) {
  VerdictCounts c;
  for (const auto& t : report.tests) {
    ++c.by_verdict[static_cast<std::size_t>(t.verdict)];
    ++c.total;
    if (fails_run(t, report.run.strict)) ++c.failures;
    if (t.gtest_failed) ++c.own_failures;
  }
  return c;
}

bool fails_run(const TestRecord& record, bool strict) noexcept {
  return record.gtest_failed || record.interrupted != Interruption::none || is_failure(record.verdict, strict);
}

GateExit gate_exit(const std::vector<Report>& reports, bool allow_unmeasured) {
  bool failed = false;
  bool unavailable = false;
  for (const Report& report : reports) {
    if (!report.run.complete) return GateExit::incomplete;
    for (const TestRecord& record : report.tests) {
      if (record.interrupted != Interruption::none) return GateExit::incomplete;
      if (fails_run(record, /*strict=*/false)) failed = true;
      if (record.verdict == Verdict::unavailable && (report.run.strict || !allow_unmeasured)) unavailable = true;
    }
  }
  if (failed) return GateExit::failed;
  return unavailable ? GateExit::unavailable : GateExit::ok;
}

}  // namespace heapgate
