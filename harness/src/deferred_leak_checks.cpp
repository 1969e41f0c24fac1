// SPDX-License-Identifier: MIT
// SuiteRun's deferred leak checks (suite_run.h): a test that ended with live
// blocks is journaled unjudged, and judged after the last test, when later
// tests and other threads have had the chance to free what it held.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "heapgate/integration.h"
#include "suite_run.h"

namespace heapgate::harness {

void SuiteRun::defer(TestRecord record, Observation observation, std::uint32_t counting_window, bool settle) {
  run_.record_properties(record, /*with_verdict=*/false);
  TestRecord pending = record;
  pending.verdict = Verdict::unavailable;
  pending.message = "not judged: the run ended before its live blocks were checked (" +
                    std::to_string(record.metrics.live_allocations) + " blocks, " +
                    std::to_string(record.metrics.live_bytes) +
                    " bytes at its end; heapgate checks whether later tests free them after the last test)";
  // Journaled now, so a crash later in the run still reports the test. A
  // journal that cannot be written keeps its error, which finish() reports.
  if (ReportWriter* report = run_.report()) (void)report->add(std::move(pending));
  deferred_.push_back(DeferredLeakCheck{std::move(record), std::move(observation), counting_window, settle});
}

// The leak checks judge() left for the end of the run: a test whose live
// blocks later tests freed is done; the others repeat in a child as before.
void SuiteRun::judge_deferred() {
  std::vector<DeferredLeakCheck> deferred = std::move(deferred_);
  deferred_.clear();
  std::vector<std::optional<detail::ReleasedBlocks>> freed_later;
  for (const DeferredLeakCheck& d : deferred) freed_later.push_back(detail::released_since(d.counting_window));
  detail::follow_frees_between_windows(false);
  std::size_t held = 0;
  std::size_t checked = 0;
  for (std::size_t i = 0; i < deferred.size(); ++i) {
    DeferredLeakCheck& d = deferred[i];
    Metrics& m = d.record.metrics;
    const std::optional<detail::ReleasedBlocks>& freed = freed_later[i];
    std::string note;
    if (d.settle) {
      if (freed && (freed->allocations > 0 || freed->bytes > 0)) {
        const std::uint64_t blocks = std::min(freed->allocations, m.live_allocations);
        const std::uint64_t bytes = std::min(freed->bytes, m.live_bytes);
        note = "held, not kept: " + std::to_string(blocks) + " of the " + std::to_string(m.live_allocations) +
               " blocks live at its end (" + std::to_string(bytes) +
               " bytes) were freed after it returned, by another thread or a later test; they are not counted as "
               "live";
        m.live_allocations -= blocks;
        m.live_bytes -= bytes;
        d.observation.metrics = m;
      }
    } else {
      ++checked;
      if (freed && freed->allocations >= m.live_allocations && freed->bytes >= m.live_bytes) {
        d.observation.leak.released_later = true;
        ++held;
      }
    }
    finish_judging(std::move(d.record), std::move(d.observation), /*journaled=*/true, note);
  }
  if (checked > 0) {
    std::fprintf(stderr,
                 "heapgate: %zu of %zu tests that ended with live blocks had them all freed by later tests (held, "
                 "not leaked); the rest were repeated to tell setup from leaks\n",
                 held, checked);
  }
}

}  // namespace heapgate::harness
