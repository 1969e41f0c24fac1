// SPDX-License-Identifier: MIT
// The HTML reporter: one page to open from a CI artifact, readable offline,
// with a flame graph per failing test.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "heapgate/flamegraph.h"
#include "heapgate/frame_text.h"
#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "heapgate/gate.h"
#include "html_page.h"
#include "heapgate/markup.h"
#include "report_text.h"

namespace heapgate {
namespace {

using detail::escape_markup;

std::string esc(std::string_view text) { return escape_markup(text); }

std::string badge(Verdict v, bool strict) {
  const std::string name(to_string(v));
  std::string cls = "badge v-" + name;
  // Only in strict mode is `unavailable` a failure; say so visibly.
  if (v == Verdict::unavailable && is_failure(v, strict)) cls += " fail-strict";
  return "<span class=\"" + cls + "\">" + esc(name) + "</span>";
}

bool has_details(const TestRecord& t) {
  return t.verdict == Verdict::regressed || t.verdict == Verdict::leaked || t.verdict == Verdict::over_budget;
}

std::string signed_number(std::int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+" PRId64, v);
  return buf;
}

std::string percent(double ratio) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.1f%%", ratio * 100.0);
  return buf;
}

std::string milliseconds(double ms) {
  char buf[64];
  // Most unit tests take well under a millisecond: show them as such, not as 0.0.
  const double v = ms > 0 ? ms : 0.0;
  std::snprintf(buf, sizeof buf, v < 1 ? "%.2f" : "%.1f", v);
  return buf;
}

const MetricDelta* delta_of(const TestRecord& t, MetricName m) {
  for (const auto& d : t.deltas) {
    if (d.metric == m) return &d;
  }
  return nullptr;
}

// baseline → current, the change, and the allowed change; or the value alone
// when there is nothing to compare with. A budget shows under its metric.
std::string metric_cell(const TestRecord& t, MetricName m) {
  if (!is_measured(t.not_measured, m)) {
    return "<td class=\"num\" title=\"bytes of the calling thread only: no allocation hooks\">not measured</td>";
  }
  const std::string tilde = t.estimated ? "~" : "";
  std::string cls = "num";
  std::string body;
  if (const MetricDelta* d = delta_of(t, m)) {
    if (d->beyond_tolerance) cls += d->grew ? " beyond up" : " beyond down";
    body += "<div>" + tilde + std::to_string(d->baseline) + " \xE2\x86\x92 " + tilde + std::to_string(d->current) +
            "</div>";
    body += "<div class=\"delta\">" + signed_number(d->delta);
    if (d->baseline != 0) body += " (" + percent(d->ratio) + ")";
    body += "</div><div class=\"limit\">limit \xC2\xB1" + std::to_string(d->limit) + "</div>";
  } else {
    body += "<div>" + tilde + std::to_string(get(t.metrics, m)) + "</div>";
  }
  if (t.standard_errors) {
    const std::string interval = estimate_interval(get(t.metrics, m), get(*t.standard_errors, m));
    if (!interval.empty())
      body += "<div class=\"limit\" title=\"99.7% interval of the sampled estimate\">" + interval + "</div>";
  }
  auto budget = t.budgets.find(std::string(to_string(m)));
  if (budget != t.budgets.end()) {
    const bool over = get(t.metrics, m) > budget->second;
    body += std::string("<div class=\"limit\"") + (over ? " style=\"color:#cf222e;font-weight:600\"" : "") +
            ">budget " + std::to_string(budget->second) + "</div>";
  }
  return "<td class=\"" + cls + "\">" + body + "</td>";
}

// The metric a test's flame graph shows: what its verdict is about (live
// bytes for a leak, allocated bytes otherwise), falling back to the first
// metric the stacks have non-zero values for.
struct FlameMetric {
  double ScaledCounts::*field;
  const char* label;
  const char* unit;
};

constexpr FlameMetric kLiveBytes{&ScaledCounts::live_bytes, "live bytes", "bytes"};
constexpr FlameMetric kLiveObjects{&ScaledCounts::live_objects, "live objects", "objects"};
constexpr FlameMetric kAccumBytes{&ScaledCounts::accum_bytes, "allocated bytes", "bytes"};
constexpr FlameMetric kAccumObjects{&ScaledCounts::accum_objects, "allocations", "allocations"};

const FlameMetric* flame_metric(const TestRecord& t) {
  static constexpr const FlameMetric* kLeak[] = {&kLiveBytes, &kLiveObjects, &kAccumBytes, &kAccumObjects};
  static constexpr const FlameMetric* kOther[] = {&kAccumBytes, &kAccumObjects, &kLiveBytes, &kLiveObjects};
  const FlameMetric* const* order = t.verdict == Verdict::leaked ? kLeak : kOther;
  for (std::size_t k = 0; k < 4; ++k) {
    const FlameMetric* m = order[k];
    for (const StackSample& s : t.stacks) {
      if (s.counts.*(m->field) != 0) return m;
    }
  }
  return nullptr;
}

// The stacks of a test as changes against its baseline. The baseline keeps
// call sites, not stacks, so a stack takes the relative change of its call
// site (the site call_sites_of() charges it to): a site that doubled makes
// half of each of its stacks new. A site that is gone has no stack left and
// is drawn as a single frame of what it allocated before. A leak's stacks are
// the live blocks each further run added: all of them are growth.
std::vector<ChangedStack> changed_stacks(const TestRecord& t, const FlameMetric& metric) {
  const bool counts_objects =
      metric.field == &ScaledCounts::accum_objects || metric.field == &ScaledCounts::live_objects;
  const bool live = metric.field == &ScaledCounts::live_bytes || metric.field == &ScaledCounts::live_objects;
  const std::vector<CallSiteChange> sites = call_site_changes(t.baseline_call_sites, t.call_sites);
  std::map<std::pair<std::string, std::string>, const CallSiteChange*> by_line;
  for (const CallSiteChange& c : sites) by_line[{c.function, c.location}] = &c;

  std::vector<ChangedStack> out;
  for (const StackSample& s : t.stacks) {
    ChangedStack c;
    c.frames.assign(s.frames.rbegin(), s.frames.rend());
    c.value = s.counts.*(metric.field);
    if (t.verdict == Verdict::leaked || live) {
      c.delta = t.verdict == Verdict::leaked ? c.value : 0;
    } else if (!t.baseline_call_sites.empty()) {
      const std::vector<CallSite> own = call_sites_of({s}, 1);
      auto found = own.empty() ? by_line.end() : by_line.find({own.front().function, own.front().location});
      if (found != by_line.end()) {
        const CallSiteChange& site = *found->second;
        const double after = static_cast<double>(counts_objects ? site.allocations_after : site.bytes_after);
        const double delta = static_cast<double>(counts_objects ? site.allocations_delta() : site.bytes_delta());
        if (after > 0) c.delta = c.value * std::max(-1.0, delta / after);
      }
    }
    out.push_back(std::move(c));
  }
  if (t.verdict != Verdict::leaked && !live) {
    for (const CallSiteChange& site : sites) {
      if (site.allocations_after != 0 || site.bytes_after != 0) continue;
      ChangedStack gone;
      gone.frames = {join_frame(site.function, site.location)};
      gone.delta = -static_cast<double>(counts_objects ? site.allocations_before : site.bytes_before);
      out.push_back(std::move(gone));
    }
  }
  return out;
}

// Enough for any test's explanation; more would make the page slow to open.
constexpr std::size_t kMaxFlameStacks = 200;

std::string flame_graph(const TestRecord& t) {
  const FlameMetric* metric = flame_metric(t);
  if (metric == nullptr) return {};
  const std::vector<ChangedStack> stacks = changed_stacks(t, *metric);
  FlamegraphOptions options;
  options.title = t.name;
  options.subtitle = std::string(metric->label) + " by call stack, " + std::to_string(t.stacks.size()) +
                     (t.stacks.size() == 1 ? " stack" : " stacks");
  options.unit = metric->unit;
  options.xml_declaration = false;
  options.short_labels = true;
  options.max_stacks = kMaxFlameStacks;
  // Call sites count allocations, not live blocks: outside a leak, a graph of
  // live blocks has nothing to compare with.
  const bool live = metric->field == &ScaledCounts::live_bytes || metric->field == &ScaledCounts::live_objects;
  options.changes_known = t.verdict == Verdict::leaked || (!live && !t.baseline_call_sites.empty());
  std::string colour;
  if (t.verdict == Verdict::leaked) {
    colour = "Red: the live blocks each further run of the test added.";
  } else if (options.changes_known) {
    colour =
        "Red grew, blue shrank, grey unchanged: each stack takes the change of its call site against the "
        "baseline; deeper colour, larger share.";
  } else {
    colour = "Grey: the baseline records no call sites to compare with (accepting this run records them).";
  }
  return std::string(detail::kFlameFigureStart) + render_change_flamegraph_svg(stacks, options) +
         "<figcaption>Differential flame graph of the " + esc(metric->label) +
         ": the root at the bottom, callees above their callers, width = the larger of "
         "baseline and now. " +
         esc(colour) +
         " Hover a frame for its full name, file:line and change; click to zoom; search highlights matching "
         "frames.</figcaption></figure>\n";
}

// "+56 (4 → 60)": the change, then before and after.
std::string change_cell(std::int64_t delta, std::uint64_t before, std::uint64_t after) {
  std::string cls = delta > 0 ? "num up" : delta < 0 ? "num down" : "num";
  return "<td class=\"" + cls + "\"><strong>" + signed_number(delta) + "</strong> <span class=\"muted\">(" +
         std::to_string(before) + " \xE2\x86\x92 " + std::to_string(after) + ")</span></td>";
}

// A function name shortened for reading; the full one on hover.
std::string short_name_html(const std::string& function) {
  return "<code title=\"" + esc(function) + "\">" + esc(short_function_name(function)) + "</code>";
}

// What changed, as numbers: every metric that moved, and the budgets.
std::string changes_table(const TestRecord& t) {
  std::string rows;
  for (const MetricDelta& d : t.deltas) {
    if (d.delta == 0 && !d.beyond_tolerance) continue;
    std::string cls = d.beyond_tolerance ? (d.grew ? " class=\"beyond up\"" : " class=\"beyond down\"") : "";
    rows += "<tr" + cls + "><th>" + esc(to_string(d.metric)) + "</th><td class=\"num\">" + std::to_string(d.baseline) +
            "</td><td class=\"num\">" + std::to_string(d.current) + "</td><td class=\"num delta\">" +
            signed_number(d.delta) + (d.baseline != 0 ? " (" + percent(d.ratio) + ")" : "") +
            "</td><td class=\"num limit\">\xC2\xB1" + std::to_string(d.limit) +
            (d.beyond_tolerance ? " exceeded" : "") + "</td></tr>\n";
  }
  std::string out;
  if (!rows.empty()) {
    out +=
        "<table class=\"changes\"><thead><tr><th>metric</th><th>baseline</th><th>now</th><th>change</th>"
        "<th>allowed</th></tr></thead><tbody>\n" +
        rows + "</tbody></table>\n";
  }
  // A leak's or a budget's facts, unless the message below says them already.
  std::vector<std::string> other;
  if (t.verdict == Verdict::leaked || t.verdict == Verdict::over_budget) {
    for (std::string& f : detail::key_facts(t)) {
      if (t.message.find(f) == std::string::npos) other.push_back(std::move(f));
    }
  }
  if (!other.empty()) {
    out += "<ul class=\"facts\">";
    for (const auto& f : other) out += "<li>" + esc(f) + "</li>";
    out += "</ul>\n";
  }
  return out;
}

// The call sites that changed against the baseline (call_site_changes()),
// or this run's call sites when the baseline records none.
std::string call_sites_table(const TestRecord& t) {
  std::string out;
  if (!t.baseline_call_sites.empty()) {
    const std::vector<CallSiteChange> changes = call_site_changes(t.baseline_call_sites, t.call_sites);
    if (changes.empty()) return "<p class=\"muted\">No call site changed against the baseline.</p>\n";
    out +=
        "<h4>Call sites that changed</h4>\n<table class=\"sites\"><thead><tr><th>allocations</th><th>bytes</th>"
        "<th>call site</th><th>where</th></tr></thead><tbody>\n";
    for (const CallSiteChange& c : changes) {
      out += "<tr>" + change_cell(c.allocations_delta(), c.allocations_before, c.allocations_after) +
             change_cell(c.bytes_delta(), c.bytes_before, c.bytes_after) + "<td>" + short_name_html(c.function) +
             "</td><td><code>" + esc(c.location) + "</code></td></tr>\n";
    }
    return out + "</tbody></table>\n";
  }
  if (t.call_sites.empty()) return {};
  out +=
      "<h4>Call sites in this run</h4>\n<p class=\"muted small\">The baseline records no call sites to compare "
      "with; accepting this run records these.</p>\n<table class=\"sites\"><thead><tr><th>allocations</th>"
      "<th>bytes</th><th>call site</th><th>where</th></tr></thead><tbody>\n";
  for (const CallSite& c : t.call_sites) {
    out += "<tr><td class=\"num\">" + std::to_string(c.allocations) + "</td><td class=\"num\">" +
           std::to_string(c.bytes) + "</td><td>" + short_name_html(c.function) + "</td><td><code>" + esc(c.location) +
           "</code></td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

// The message without the block the call-site table shows as numbers.
std::string message_without_call_sites(const TestRecord& t) {
  if (t.baseline_call_sites.empty()) return t.message;
  const std::string header = "\nby call site, against the baseline:\n";
  const std::size_t at = t.message.find(header);
  if (at == std::string::npos) return t.message;
  // The block runs to the end of the message or to a blank line.
  const std::size_t end = t.message.find("\n\n", at + header.size());
  return t.message.substr(0, at) + (end == std::string::npos ? "" : t.message.substr(end + 1));
}

std::string details_section(const TestRecord& t, std::size_t index, bool strict) {
  std::string out = "<section class=\"test\" id=\"test-" + std::to_string(index) + "\">\n";
  out += "<h3><code>" + esc(t.name) + "</code> " + badge(t.verdict, strict) + "</h3>\n";
  std::vector<std::string> where;
  if (!t.file.empty()) where.push_back(esc(t.file) + (t.line > 0 ? ":" + std::to_string(t.line) : ""));
  where.push_back("mode " + esc(to_string(t.mode)) + (t.estimated ? " (estimated)" : ""));
  where.push_back(milliseconds(t.duration_ms) + " ms");
  out += "<p class=\"muted small\">";
  for (std::size_t i = 0; i < where.size(); ++i) out += (i == 0 ? "" : " \xC2\xB7 ") + where[i];
  out += "</p>\n";
  // Numbers first, then the call sites, then the words once, then the picture.
  out += changes_table(t);
  out += call_sites_table(t);
  const std::string message = message_without_call_sites(t);
  if (!message.empty()) out += "<pre class=\"message\">" + esc(message) + "</pre>\n";
  if (t.gtest_failed) out += "<p class=\"note\">The test also failed its own assertions (see its log).</p>\n";
  if (t.stacks.empty()) {
    out +=
        "<p class=\"muted\">No stacks were recorded for this test: they come from heapgate's exact-mode re-run "
        "of a failing test (--heapgate_explain).</p>\n";
  } else {
    out += flame_graph(t);
    out += "<details class=\"stacks\"><summary>The " + std::to_string(t.stacks.size()) +
           (t.stacks.size() == 1 ? " stack" : " stacks") + " as text</summary>\n<ol class=\"stacks\">\n";
    for (const StackSample& s : t.stacks) {
      out += "<li><div>" + esc(detail::describe_stack_counts(s)) + ", at:</div><pre>";
      for (std::size_t f = 0; f < s.frames.size(); ++f) {
        const FrameParts parts = split_frame(s.frames[f]);
        out += (f == 0 ? "" : "\n") + std::string("<span title=\"") + esc(s.frames[f]) + "\">" +
               esc(short_function_name(parts.function)) + "</span>" +
               (parts.location.empty() ? "" : " <span class=\"muted\">" + esc(parts.location) + "</span>");
      }
      out += "</pre></li>\n";
    }
    out += "</ol></details>\n";
  }
  if (!t.profiles.empty()) {
    out += "<p class=\"muted small\">Profiles:";
    for (const auto& p : t.profiles) out += " <code>" + esc(p) + "</code>";
    out += "</p>\n";
  }
  out += "</section>\n";
  return out;
}

}  // namespace

std::string to_html(const Report& report) {
  const VerdictCounts counts = count_verdicts(report);
  const bool strict = report.run.strict;
  const std::string verdict_word = counts.failures > 0 ? "FAIL" : "PASS";
  const std::string heading = "heapgate" + (report.run.binary.empty() ? std::string() : ": " + report.run.binary) +
                              " \xE2\x80\x94 " + verdict_word;

  std::string out = detail::page_head(heading);
  out += "<h1>heapgate";
  if (!report.run.binary.empty()) out += ": <code>" + esc(report.run.binary) + "</code>";
  out += " \xE2\x80\x94 <span class=\"badge " + std::string(counts.failures > 0 ? "v-regressed" : "v-pass") + "\">" +
         verdict_word + "</span></h1>\n";

  // Headline: the count per verdict, problems first, zero counts left out.
  std::vector<Verdict> by_rank(kVerdicts.begin(), kVerdicts.end());
  std::stable_sort(by_rank.begin(), by_rank.end(),
                   [](Verdict a, Verdict b) { return detail::verdict_rank(a) < detail::verdict_rank(b); });
  out += "<p class=\"counts\"><strong>" + std::to_string(counts.total) + (counts.total == 1 ? " test" : " tests") +
         "</strong>: ";
  for (Verdict v : by_rank) {
    if (counts[v] == 0) continue;
    out += "<span>" + std::to_string(counts[v]) + " " + badge(v, strict) + "</span>";
  }
  out += "</p>\n";

  out += "<h2>Run</h2>\n<table class=\"run\">\n";
  auto row = [&out](const char* name, const std::string& value) {
    if (!value.empty()) out += "<tr><th>" + std::string(name) + "</th><td>" + value + "</td></tr>\n";
  };
  row("binary", report.run.binary.empty() ? "" : "<code>" + esc(report.run.binary) + "</code>");
  row("build id", report.run.build_id.empty() ? "" : "<code>" + esc(report.run.build_id) + "</code>");
  row("mode", esc(std::string(to_string(report.run.mode))));
  row("jemalloc", esc(report.run.jemalloc_version));
  row("host", esc(report.run.host));
  row("started", esc(report.run.started_at));
  if (report.run.total_shards > 0) {
    row("shard", std::to_string(report.run.shard_index) + " of " + std::to_string(report.run.total_shards));
  }
  row("strict", strict ? "yes: unavailable is a failure" : "");
  out += "</table>\n";
  if (!report.run.unavailable_reason.empty()) {
    out += "<p class=\"note\"><strong>Profiling unavailable:</strong> " + esc(report.run.unavailable_reason) + "</p>\n";
  }
  if (!report.run.complete) {
    out +=
        "<p class=\"note\"><strong>Incomplete:</strong> the run ended before it finished (a crash?); only the tests "
        "that finished are listed.</p>\n";
  }

  // Problems first, as in the Markdown summary; stable within a verdict.
  std::vector<std::size_t> order(report.tests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return detail::verdict_rank(report.tests[a].verdict) < detail::verdict_rank(report.tests[b].verdict);
  });

  out += "<h2>Tests</h2>\n<table class=\"tests\">\n<thead><tr><th>Test</th><th>Verdict</th>";
  for (MetricName m : kMetricNames) out += "<th>" + esc(to_string(m)) + "</th>";
  out += "<th>ms</th></tr></thead>\n<tbody>\n";
  for (std::size_t i : order) {
    const TestRecord& t = report.tests[i];
    out += "<tr><td>";
    if (has_details(t)) {
      out += "<a href=\"#test-" + std::to_string(i) + "\"><code>" + esc(t.name) + "</code></a>";
    } else {
      out += "<code>" + esc(t.name) + "</code>";
    }
    if (t.verdict != Verdict::pass) {
      std::vector<std::string> facts = detail::key_facts(t);
      std::string line;
      for (const auto& f : facts) line += (line.empty() ? "" : "; ") + f;
      if (line.empty()) line = detail::first_line(t.message);
      if (line.empty() && t.verdict == Verdict::new_test) line = "no baseline entry yet";
      if (!line.empty()) out += "<div class=\"muted small\">" + esc(line) + "</div>";
    }
    if (t.gtest_failed) out += "<div class=\"muted small\">failed its own assertions</div>";
    if (const std::string band = detail::noise_band_text(t); !band.empty()) {
      out += "<div class=\"muted small\">noisy: " + esc(band) + "</div>";
    }
    if (const std::string parts = detail::thread_parts_text(t); !parts.empty()) {
      out += "<div class=\"muted small\">gated in parts: " + esc(parts) + "</div>";
    }
    out += "</td><td>" + badge(t.verdict, strict) + "</td>";
    for (MetricName m : kMetricNames) out += metric_cell(t, m);
    out += "<td class=\"num\">" + milliseconds(t.duration_ms) + "</td></tr>\n";
  }
  out += "</tbody>\n</table>\n";

  bool any_details = false;
  for (std::size_t i : order) {
    const TestRecord& t = report.tests[i];
    if (!has_details(t)) continue;
    if (!any_details) out += "<h2>Why they failed</h2>\n";
    any_details = true;
    out += details_section(t, i, strict);
  }
  out += "<p class=\"muted small\">Generated by heapgate from a " + esc(kReportSchema) + " report.</p>\n";
  out += detail::page_end();
  return out;
}

}  // namespace heapgate
