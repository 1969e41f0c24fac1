// SPDX-License-Identifier: MIT
// gate_test() (heapgate/explain.h): gathers the evidence one test's verdict rests on through an
// Explainer (growth checks, suppressions, fresh confirmation runs) and attaches explaining stacks.
#include "heapgate/explain.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace heapgate {
namespace {

std::uint64_t minus(std::uint64_t a, double b) {
  const auto whole = static_cast<std::uint64_t>(b > 0 ? b + 0.5 : 0);
  return a > whole ? a - whole : 0;
}

void add_profiles(TestRecord& record, const std::vector<std::string>& profiles) {
  for (const auto& p : profiles) {
    if (std::find(record.profiles.begin(), record.profiles.end(), p) == record.profiles.end()) {
      record.profiles.push_back(p);
    }
  }
}

// The first line of a leak's message names where its largest block was
// allocated (function and file:line), so a one-line summary (Markdown, the
// log) points at the line to fix.
void name_leaking_site(TestRecord& record) {
  const std::size_t end = record.message.find_first_of(";\n");
  record.message.insert(end == std::string::npos ? record.message.size() : end, leak_site(record));
}

// Fresh runs added to the first ones when they did not clear a regression
// that random draws could make: code that draws per process (a skip list's
// node levels, a hash table's seed and so its collisions) repeats a size or
// a count within a process and not across them, so two fresh runs are weak
// evidence of its range; a change in the code repeats in every one of them.
constexpr int kMoreConfirmations = 4;

// A change of at most this part of a metric is small enough for a draw.
constexpr double kSmallChange = 0.01;

// The regression grew sizes only (the allocation count held), or grew each
// metric by at most kSmallChange of it.
bool drawn_by_chance(const Comparison& regression) {
  bool sizes_only = true;
  bool small = true;
  bool grew = false;
  for (const MetricDelta& d : regression.deltas) {
    if (!d.grew) continue;
    grew = true;
    if (d.metric == MetricName::allocations || d.metric == MetricName::live_allocations) sizes_only = false;
    if (static_cast<double>(d.delta) > kSmallChange * static_cast<double>(d.baseline)) small = false;
  }
  return grew && (sizes_only || small);
}

bool within_recorded(const PartJudged& part) {
  const AllocationCount& now = part.now;
  return now.allocations >= part.recorded.low.allocations && now.allocations <= part.recorded.high.allocations &&
         now.bytes >= part.recorded.low.bytes && now.bytes <= part.recorded.high.bytes;
}

bool beyond_limit(const PartJudged& part) {
  return part.now.allocations > part.limit.allocations || part.now.bytes > part.limit.bytes;
}

// At most what a part may have added over the lowest it made when recorded.
std::uint64_t added_at_most(const PartJudged& part) {
  return part.now.allocations > part.recorded.low.allocations ? part.now.allocations - part.recorded.low.allocations
                                                              : 0;
}

// Which threads made a threaded test's growth, where its parts say so: one
// part made what it made when recorded and the other went beyond its limit.
// A site that grew by more than the first part could have added grew on the
// other's threads.
GrowthThreads threads_that_grew(const TestRecord& record) {
  if (!record.thread_parts) return {};
  const PartJudged& own = record.thread_parts->own_thread;
  const PartJudged& others = record.thread_parts->other_threads;
  if (within_recorded(own) && beyond_limit(others)) return {"on other threads", added_at_most(own)};
  if (within_recorded(others) && beyond_limit(own)) return {"on its own thread", added_at_most(others)};
  return {};
}

}  // namespace

std::string leak_site(const TestRecord& record) {
  if (record.stacks.empty()) return {};
  const std::vector<CallSite> sites = call_sites_of({record.stacks.front()}, 1);
  if (sites.empty()) return {};
  std::string at = ", allocated at " + sites.front().function;
  if (!sites.front().location.empty()) at += " (" + sites.front().location + ")";
  return at;
}

Result<Measurement> Explainer::remeasure(const std::string& test) {
  return fail(make_error(ErrorCode::unavailable, "re-run of " + test, "this explainer cannot re-run a test", ""));
}

bool Explainer::is_framework_stack(const StackSample&) const { return false; }

std::string gate_test(TestRecord& record, Observation observation, const BaselineEntry* baseline,
                      const GatePolicy& policy, Explainer& explainer, const Suppressions& suppressions,
                      const ExplainOptions& options) {
  std::optional<Explanation> growing;
  std::string no_stacks = options.enabled ? std::string() : "--heapgate_explain=false";
  // The growth check is a counters run, cheap: it runs even when explaining
  // (the exact runs) is off, so one-time setup never fails for want of stacks.
  if (leak_suspected(observation, policy) && observation.leak.released_later) {
    observation.leak.residue = LeakResidue::constant;
    record.released_later = true;
  } else if (leak_suspected(observation, policy) && setup_residue_known(observation, baseline)) {
    observation.leak.residue = LeakResidue::constant;
    observation.leak.from_baseline = true;
  } else if (leak_suspected(observation, policy)) {
    // A leak is what grows: one-time setup (a lazily built table, a replaced
    // global, a background thread's buffers) stays level when the test repeats.
    auto growth = explainer.growth(record.name, std::max(1, options.leak_repetitions));
    if (!growth) {
      no_stacks = growth.error().message();
    } else {
      observation.leak.growth = *growth;
      record.growth = *growth;
      observation.leak.residue = grows(*growth) ? LeakResidue::grows : LeakResidue::constant;
    }
    if (observation.leak.residue == LeakResidue::grows && options.enabled) {
      auto sites = explainer.growing(record.name, std::max(1, options.leak_repetitions));
      if (!sites) {
        no_stacks = sites.error().message();
      } else {
        bool all_suppressed = !suppressions.empty();
        bool any = false;
        double suppressed_blocks = 0;
        double suppressed_bytes = 0;
        std::vector<std::string> sources;  // what matched, for the note
        for (const auto& s : sites->stacks) {
          if (s.counts.live_objects <= 0) continue;
          any = true;
          const Suppression* match = suppressions.match(s);
          if (match == nullptr) {
            all_suppressed = false;
          } else {
            suppressed_blocks += s.counts.live_objects;
            suppressed_bytes += s.counts.live_bytes;
            const std::string& source = match->source.empty() ? suppressions.source : match->source;
            if (std::find(sources.begin(), sources.end(), source) == sources.end()) sources.push_back(source);
          }
        }
        if (all_suppressed && any) {
          observation.leak.suppressed = true;
          std::string named;
          for (const std::string& source : sources) named += (named.empty() ? "" : " and ") + source;
          observation.leak.suppressions_source = named;
          // Suppressed blocks are not the test's to answer for: neither the
          // verdict nor the baseline sees them.
          Metrics& m = *observation.metrics;
          const Metrics before = m;
          m.live_allocations = minus(m.live_allocations, suppressed_blocks);
          m.live_bytes = minus(m.live_bytes, suppressed_bytes);
          observation.leak.suppressed_allocations = before.live_allocations - m.live_allocations;
          observation.leak.suppressed_bytes = before.live_bytes - m.live_bytes;
          record.metrics = m;
        }
        growing = std::move(*sites);
      }
    }
  }
  // Gated call sites need this run's, all of them: one exact run, kept to
  // explain a failure too.
  std::optional<Explanation> measured_sites;
  if (observation.gate_call_sites && policy.compare_baseline && baseline != nullptr && baseline->call_sites_complete &&
      observation.metrics && !observation.own_failure) {
    auto run = explainer.explain(record.name);
    if (!run) {
      no_stacks = run.error().message();
    } else if (run->call_sites_complete) {
      observation.call_sites = run->call_sites;
      measured_sites = std::move(*run);
    }
  }
  // A test alone carries no state from earlier tests: recorded with the
  // baseline, it tells a change from that state later (confirmation below).
  const bool measurable = observation.metrics && !observation.own_failure && observation.mode != Mode::off &&
                          observation.mode != Mode::sampled;
  std::optional<Measurement> alone_run;
  if (options.measure_alone && measurable) {
    if (auto alone = explainer.remeasure(record.name)) {
      alone_run = *alone;
      record.alone = alone->metrics;
    }
  }
  Judgement judged = judge(observation, baseline, policy);
  // The totals regressed (not only a call site): a threaded test's own
  // thread can grow while its total falls, so the comparison's verdict says,
  // not a delta's sign.
  const ThreadShare in_suite = company_in_suite(observation.other_threads);
  const std::optional<Comparison> regression =
      judged.verdict == Verdict::regressed ? std::optional<Comparison>(compare_to_baseline(
                                                 *observation.metrics, baseline, Tolerances::for_mode(observation.mode),
                                                 observation.mode, std::nullopt, observation.not_measured, &in_suite))
                                           : std::nullopt;
  if (regression && regression->verdict == Verdict::regressed && observation.mode != Mode::sampled &&
      !policy.accepting) {
    // Evidence for the confirmation rule (confirmation_clears()): fresh runs,
    // until one clears the regression or none is left. The record keeps
    // them, so judging it again decides the same.
    // More fresh runs for a test that varies (its recorded runs differed) or
    // may (a change a draw could make), while they neither clear it nor show
    // variation that does (judge()'s variation_clears()).
    // Work on other threads varies with scheduling more than a test's own
    // thread does: theirs earns the same.
    const bool may_vary = drawn_by_chance(*regression) || regression->other_threads_grew ||
                          (baseline != nullptr && baseline->noise.has_value());
    const int more = options.confirm_runs >= 2 && may_vary ? kMoreConfirmations : 0;
    for (int i = 0; i < options.confirm_runs + more; ++i) {
      if (i >= options.confirm_runs && baseline != nullptr &&
          variation_clears(Measurement{*observation.metrics, observation.other_threads}, observation.confirmations,
                           *baseline, observation.mode)) {
        break;
      }
      Result<Measurement> again =
          i == 0 && alone_run ? Result<Measurement>(*alone_run) : explainer.remeasure(record.name);
      if (!again) break;
      if (!record.alone) record.alone = again->metrics;
      observation.confirmations.push_back(*again);
      if (confirmation_clears(*again, baseline, observation.mode, regression->explanation)) break;
    }
    record.confirmations = observation.confirmations;
    if (!observation.confirmations.empty()) judged = judge(observation, baseline, policy);
  } else if (judged.improvement_unconfirmed && options.confirm_runs > 0) {
    // One fresh run for the improvement rule (improvement_clears()): without
    // it judge() does not take the improvement.
    Result<Measurement> again = alone_run ? Result<Measurement>(*alone_run) : explainer.remeasure(record.name);
    if (again) {
      if (!record.alone) record.alone = again->metrics;
      observation.confirmations.push_back(*again);
      record.confirmations = observation.confirmations;
      judged = judge(observation, baseline, policy);
    }
  }
  apply(judged, record);
  if (measured_sites) {
    record.call_sites = measured_sites->call_sites;
    record.call_sites_complete = true;
    record.baseline_call_sites = baseline->call_sites;
  }
  record.setup_residue = leak_suspected(observation, policy) && observation.leak.residue == LeakResidue::constant &&
                         !observation.leak.suppressed;
  // The rest of the evidence the verdict rests on (observation_of()).
  record.leaks_checked = observation.check_leaks.value_or(policy.check_leaks);
  if (observation.leak.suppressed) {
    record.suppressed = SuppressedLeak{observation.leak.suppressed_allocations, observation.leak.suppressed_bytes,
                                       observation.leak.suppressions_source};
  }
  if (!is_failure(record.verdict, policy.strict)) return {};
  if (record.verdict == Verdict::unavailable) return failure_text(record, {});

  // Explain: the growing call sites of a leak, or one more run.
  std::optional<Explanation> explained;
  if (record.verdict == Verdict::leaked && growing) {
    explained = std::move(growing);
  } else if (measured_sites) {
    explained = std::move(measured_sites);
  } else if (options.enabled) {
    auto run = explainer.explain(record.name);
    if (run) {
      explained = std::move(*run);
    } else {
      no_stacks = run.error().message();
    }
  }
  if (explained) {
    // What the test framework makes for every test explains no test.
    std::vector<StackSample>& stacks = explained->stacks;
    stacks.erase(std::remove_if(stacks.begin(), stacks.end(),
                                [&explainer](const StackSample& s) { return explainer.is_framework_stack(s); }),
                 stacks.end());
    if (record.verdict != Verdict::leaked) {
      // The change, not the totals: what each call site allocates now
      // against what it did when the baseline was recorded.
      record.call_sites = explained->call_sites_complete ? explained->call_sites : call_sites_of(explained->stacks);
      record.call_sites_complete = explained->call_sites_complete;
      // A test that allocated nothing when recorded has no call sites, and
      // that is all of them: every site now is a change.
      const bool baseline_sites_known =
          baseline != nullptr &&
          (!baseline->call_sites.empty() ||
           (baseline->metrics.allocations == 0 && is_measured(baseline->not_measured, MetricName::allocations)));
      if (baseline_sites_known) {
        record.baseline_call_sites = baseline->call_sites;
        const std::string changes =
            explain_call_site_changes(baseline->call_sites, record.call_sites, threads_that_grew(record));
        if (!changes.empty()) record.message += "\nby call site, against the baseline:\n" + changes;
      } else if (record.verdict == Verdict::regressed) {
        record.message +=
            "\n(the baseline records no call sites, so only this run's stacks are shown; accepting "
            "this run records them)";
      }
    }
    record.stacks = explaining_stacks(std::move(explained->stacks), record.verdict, options.top_stacks);
    if (record.verdict == Verdict::leaked && !record.stacks.empty()) name_leaking_site(record);
    add_profiles(record, explained->profiles);
  }
  return failure_text(record, explained ? explained->source : std::string(), no_stacks);
}

}  // namespace heapgate
