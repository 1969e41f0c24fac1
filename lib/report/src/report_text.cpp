// SPDX-License-Identifier: MIT
// Text pieces the JUnit and Markdown reporters share (report_text.h): key_facts() of a verdict,
// noise_band_text(), thread_parts_text(), describe_stack_counts() and verdict_rank().
#include "report_text.h"

#include <cmath>
#include <cstdio>
#include "heapgate/gate.h"

namespace heapgate::detail {

std::string first_line(std::string_view text) {
  std::size_t nl = text.find('\n');
  return std::string(text.substr(0, nl));
}

std::string noise_band_text(const TestRecord& record) {
  if (!record.baseline_noise) return {};
  const NoiseBand& band = *record.baseline_noise;
  std::string text;
  for (MetricName m : kMetricNames) {
    const std::uint64_t low = get(band.low, m);
    const std::uint64_t high = get(band.high, m);
    if (low == high || !is_measured(record.not_measured, m)) continue;
    if (!text.empty()) text += " \xC2\xB7 ";  // middle dot
    text += std::string(to_string(m)) + " " + std::to_string(low) + "\xE2\x80\x93" + std::to_string(high) +  // en dash
            " over " + std::to_string(band.runs) + (band.runs == 1 ? " run" : " runs") + "; this run " +
            std::to_string(get(record.metrics, m));
  }
  return text;
}

std::string thread_parts_text(const TestRecord& record) {
  if (!record.thread_parts) return {};
  auto part = [](const char* name, const PartJudged& p) {
    const std::uint64_t low = p.recorded.low.allocations;
    const std::uint64_t high = p.recorded.high.allocations;
    std::string text = std::string(name) + " " + std::to_string(p.now.allocations) + " allocations, " +
                       (p.banded ? "banded" : "exact") + " (recorded " + std::to_string(low);
    if (high != low) text += "\xE2\x80\x93" + std::to_string(high);  // en dash
    text += ", limit " + std::to_string(p.limit.allocations) + ")";
    if (p.now.allocations > p.limit.allocations || p.now.bytes > p.limit.bytes) text += " (grew)";
    return text;
  };
  return part("own thread", record.thread_parts->own_thread) + " \xC2\xB7 " +  // middle dot
         part("other threads", record.thread_parts->other_threads);
}

std::vector<std::string> key_facts(const TestRecord& record) {
  std::vector<std::string> facts;
  switch (record.verdict) {
    case Verdict::regressed:
    case Verdict::improved:
      for (const auto& d : record.deltas) {
        const bool relevant = record.verdict == Verdict::regressed ? d.grew : !d.grew;
        if (d.beyond_tolerance && relevant) facts.push_back(describe(d));
      }
      break;
    case Verdict::leaked:
      // Where its largest block came from, as the message's first line says.
      if (auto leak = explain_leak(record.metrics); !leak.empty()) facts.push_back(leak + leak_site(record));
      break;
    case Verdict::over_budget:
      for (const auto& [name, limit] : record.budgets) {
        auto metric = parse_metric_name(name);
        if (!metric) continue;
        if (auto over = explain_over_budget(*metric, limit, record.metrics); !over.empty()) {
          facts.push_back(std::move(over));
        }
      }
      break;
    default:
      break;
  }
  return facts;
}

std::string describe_stack_counts(const StackSample& stack) {
  std::string out;
  auto add = [&](double v, const char* what) {
    if (v == 0) return;
    char buf[64];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
      std::snprintf(buf, sizeof buf, "%+.0f %s", v, what);
    } else {
      std::snprintf(buf, sizeof buf, "%+.1f %s", v, what);
    }
    if (!out.empty()) out += ", ";
    out += buf;
  };
  add(stack.counts.live_objects, "live objects");
  add(stack.counts.live_bytes, "live bytes");
  add(stack.counts.accum_objects, "allocations");
  add(stack.counts.accum_bytes, "allocated bytes");
  return out.empty() ? "no change" : out;
}

int verdict_rank(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::regressed:
      return 0;
    case Verdict::leaked:
      return 1;
    case Verdict::over_budget:
      return 2;
    case Verdict::unavailable:
      return 3;
    case Verdict::missing:
      return 4;
    case Verdict::improved:
      return 5;
    case Verdict::new_test:
      return 6;
    case Verdict::pass:
      return 7;
    case Verdict::skipped:
      return 8;
  }
  return 8;
}

}  // namespace heapgate::detail
