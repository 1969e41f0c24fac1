// SPDX-License-Identifier: MIT
// A test's points over commits, read from a history store, its change
// points, and the trend pages of `heapgate history report`. Implemented in
// lib/history/src/trend_series.cpp (the points) and trend_pages.cpp (the
// pages; the script they embed is trend_script.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "heapgate/change_points.h"
#include "heapgate/history.h"

namespace heapgate {

/// One point of a test's trend: its numbers in one run.
struct TrendPoint {
  /// Index into the runs the trend was read against (HistoryStore::runs()).
  std::size_t run = 0;
  std::string verdict;
  Metrics metrics;
  std::optional<NoiseBand> band;
};

/// One test's points in commit order, one per commit (a commit measured
/// several times keeps its last run).
struct TestTrend {
  std::string binary;
  std::string test;
  std::vector<TrendPoint> points;
};

/// Reads every test `query` selects and calls `each` with its trend, one
/// test at a time (a large store is never held whole). `runs` is
/// store.runs(query): points of other runs are dropped. Errors: the store's.
Result<void> for_each_trend(HistoryStore& store, const HistoryQuery& query, const std::vector<RunRow>& runs,
                            const std::function<void(const TestTrend&)>& each);

/// A trend's values of `metric`, each with its band's spread, for
/// find_change_points(). Pure.
std::vector<SeriesValue> series_of(const TestTrend& trend, MetricName metric);

/// A change point of one test's metric.
struct MetricStep {
  std::string binary;
  std::string test;
  MetricName metric = MetricName::allocations;
  ChangePoint change;
  /// The run (index into the runs) where the new level began.
  std::size_t run = 0;
};

/// The change points of every metric of `trend`. Pure.
std::vector<MetricStep> steps_of(const TestTrend& trend, const ChangePointOptions& options = {});

/// How large a step is, for ordering: |after - before| / max(before, 1). Pure.
double step_size(const MetricStep& step) noexcept;

/// One line: "`Cache.Render` allocations 301 → 308 (+7, +2.3%) at 3f2a9c1
/// (2026-11-02T10:00:00Z), stable for 41 commits since". Pure.
std::string describe_step(const MetricStep& step, const std::vector<RunRow>& runs);

/// Options of write_trend_pages().
struct TrendPageOptions {
  /// The directory the pages go to (created).
  std::string dir;
  /// Links a commit: "{commit}" is replaced by its hash
  /// ("https://github.com/o/r/commit/{commit}"); empty: commits are not links.
  std::string commit_url;
  ChangePointOptions change_points;
  /// How many of the largest steps the index lists.
  std::size_t top_steps = 50;
};

/// What write_trend_pages() wrote.
struct TrendPagesWritten {
  std::size_t runs = 0;
  std::size_t tests = 0;
  std::size_t steps = 0;
  std::string index;
};

/// Writes the trend pages of the runs and tests `query` selects:
/// `DIR/index.html` (the largest steps, every test with a link),
/// `DIR/runs.html` (every run, with its commit and report),
/// `DIR/commits.js` (the runs, for the test pages) and one page per test,
/// `DIR/tests/N.html`: a chart per metric over commits, drawn as inline SVG
/// by the page's own script (nothing is downloaded; works offline from
/// file://), with the noise band, each point linked to its run, and the
/// change points marked. Every file is written atomically. Errors: the
/// store's, `io_error` naming a file that cannot be written.
Result<TrendPagesWritten> write_trend_pages(HistoryStore& store, const HistoryQuery& query,
                                            const TrendPageOptions& options);

}  // namespace heapgate
