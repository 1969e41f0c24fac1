// SPDX-License-Identifier: MIT
// Tests' trends from a store's points, and their steps.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "heapgate/trend.h"

namespace heapgate {
namespace {

// Sorts a test's points by run, keeping the last of each commit.
void order_points(TestTrend& trend, const std::vector<RunRow>& runs) {
  auto& points = trend.points;
  std::sort(points.begin(), points.end(), [](const TrendPoint& a, const TrendPoint& b) { return a.run < b.run; });
  std::vector<TrendPoint> kept;
  kept.reserve(points.size());
  for (TrendPoint& point : points) {
    if (!kept.empty() && runs[kept.back().run].context.commit == runs[point.run].context.commit) {
      kept.back() = std::move(point);
    } else {
      kept.push_back(std::move(point));
    }
  }
  points = std::move(kept);
}

std::string short_commit(const std::string& commit) { return commit.substr(0, 7); }

}  // namespace

Result<void> for_each_trend(HistoryStore& store, const HistoryQuery& query, const std::vector<RunRow>& runs,
                            const std::function<void(const TestTrend&)>& each) {
  std::unordered_map<std::int64_t, std::size_t> run_index;
  run_index.reserve(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) run_index.emplace(runs[i].id, i);
  TestTrend trend;
  bool open = false;
  auto flush = [&] {
    if (open && !trend.points.empty()) {
      order_points(trend, runs);
      each(trend);
    }
    trend.points.clear();
  };
  auto read = store.for_each_point(query, [&](const PointRow& row) {
    if (!open || row.test != trend.test || row.binary != trend.binary) {
      flush();
      trend.binary = row.binary;
      trend.test = row.test;
      open = true;
    }
    auto found = run_index.find(row.run_id);
    if (found == run_index.end()) return;
    trend.points.push_back(TrendPoint{found->second, row.verdict, row.metrics, row.band});
  });
  if (!read) return read;
  flush();
  return {};
}

std::vector<SeriesValue> series_of(const TestTrend& trend, MetricName metric) {
  std::vector<SeriesValue> series;
  series.reserve(trend.points.size());
  for (const TrendPoint& point : trend.points) {
    SeriesValue value;
    value.value = get(point.metrics, metric);
    if (point.band) {
      const std::uint64_t low = get(point.band->low, metric);
      const std::uint64_t high = get(point.band->high, metric);
      value.spread = high > low ? high - low : 0;
    }
    series.push_back(value);
  }
  return series;
}

std::vector<MetricStep> steps_of(const TestTrend& trend, const ChangePointOptions& options) {
  std::vector<MetricStep> steps;
  for (MetricName metric : kMetricNames) {
    for (const ChangePoint& change : find_change_points(series_of(trend, metric), options)) {
      steps.push_back(MetricStep{trend.binary, trend.test, metric, change, trend.points[change.index].run});
    }
  }
  return steps;
}

double step_size(const MetricStep& step) noexcept {
  const double before = static_cast<double>(step.change.before);
  const double after = static_cast<double>(step.change.after);
  return std::fabs(after - before) / std::max(before, 1.0);
}

std::string describe_step(const MetricStep& step, const std::vector<RunRow>& runs) {
  const RunRow& run = runs[step.run];
  const auto before = static_cast<long long>(step.change.before);
  const auto after = static_cast<long long>(step.change.after);
  char change[96];
  if (before != 0) {
    std::snprintf(change, sizeof change, "%+lld, %+.1f%%", after - before,
                  100.0 * static_cast<double>(after - before) / static_cast<double>(before));
  } else {
    std::snprintf(change, sizeof change, "%+lld", after - before);
  }
  return "`" + step.test + "` " + std::string(to_string(step.metric)) + " " + std::to_string(before) +
         " \xE2\x86\x92 " + std::to_string(after) + " (" + change + ") at " + short_commit(run.context.commit) + " (" +
         run.context.time + "), stable for " + std::to_string(step.change.stable_for) + " commit" +
         (step.change.stable_for == 1 ? "" : "s") + " since";
}

}  // namespace heapgate
