// SPDX-License-Identifier: MIT
// Calibration (`heapgate run --calibrate`): the baseline entries of several
// runs of one build, each metric's median with the noise band the runs
// spanned, so a test that varies between runs is judged by its own spread.
#include "heapgate/gate.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace heapgate {

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
    for (const BaselineEntry* e : seen) keep_most(entry.other_threads, e->other_threads);
    // The own thread's band over every run; a run no other thread ran in
    // made all of its allocations on it.
    entry.own_thread = std::nullopt;
    entry.other_threads_band = std::nullopt;
    if (!entry.other_threads.empty()) {
      for (const BaselineEntry* e : seen) {
        const ThreadPartBand run_band =
            e->own_thread ? *e->own_thread
                          : ThreadPartBand{own_thread_part(e->metrics, {}), own_thread_part(e->metrics, {})};
        if (entry.own_thread) {
          widen(*entry.own_thread, run_band);
        } else {
          entry.own_thread = run_band;
        }
        const AllocationCount others = other_threads_part(e->other_threads);
        const ThreadPartBand others_band =
            e->other_threads_band ? *e->other_threads_band : ThreadPartBand{others, others};
        if (entry.other_threads_band) {
          widen(*entry.other_threads_band, others_band);
        } else {
          entry.other_threads_band = others_band;
        }
      }
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

}  // namespace heapgate
