// SPDX-License-Identifier: MIT
// The Markdown reporter: a CI step summary (GitHub $GITHUB_STEP_SUMMARY, GitLab).
#include <algorithm>
#include <cstdio>

#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "heapgate/gate.h"
#include "report_text.h"

namespace heapgate {
namespace {

// One table cell: '|' would end the cell and a line break the row; '<' could
// open HTML in GitHub's renderer.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '|':
        out += "\\|";
        break;
      case '\n':
        out += ' ';
        break;
      case '\r':
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string code_cell(std::string_view name) { return "`" + cell(name) + "`"; }

std::string milliseconds(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", ms > 0 ? ms : 0.0);
  return buf;
}

}  // namespace

std::string to_markdown(const Report& report) {
  const VerdictCounts counts = count_verdicts(report);
  std::string out = "### heapgate";
  if (!report.run.binary.empty()) out += ": `" + cell(report.run.binary) + "`";
  out += counts.failures > 0 ? " \xE2\x80\x94 FAIL\n\n" : " \xE2\x80\x94 PASS\n\n";  // em dash

  // Headline: the count per verdict, problems first, zero counts left out.
  std::vector<Verdict> by_rank(kVerdicts.begin(), kVerdicts.end());
  std::stable_sort(by_rank.begin(), by_rank.end(),
                   [](Verdict a, Verdict b) { return detail::verdict_rank(a) < detail::verdict_rank(b); });
  out += "**" + std::to_string(counts.total) + (counts.total == 1 ? " test" : " tests") + "**";
  std::string sep = ": ";
  for (Verdict v : by_rank) {
    if (counts[v] == 0) continue;
    out += sep + std::to_string(counts[v]) + " " + std::string(to_string(v));
    sep = " \xC2\xB7 ";  // middle dot
  }
  out += "\n\n";

  std::vector<std::string> facts;
  facts.push_back("mode `" + std::string(to_string(report.run.mode)) + "`");
  if (!report.run.jemalloc_version.empty()) facts.push_back("jemalloc " + cell(report.run.jemalloc_version));
  if (report.run.total_shards > 0) {
    facts.push_back("shard " + std::to_string(report.run.shard_index) + " of " +
                    std::to_string(report.run.total_shards));
  }
  if (report.run.strict) facts.push_back("strict");
  if (!facts.empty()) {
    for (std::size_t i = 0; i < facts.size(); ++i) out += (i == 0 ? "" : " \xC2\xB7 ") + facts[i];
    out += "\n\n";
  }
  if (!report.run.unavailable_reason.empty()) {
    out += "> **Profiling unavailable:** " + cell(report.run.unavailable_reason) + "\n\n";
  }
  if (!report.run.complete) {
    out +=
        "> **Incomplete:** the run ended before it finished (a crash?); only the tests that finished are listed.\n\n";
  }

  std::vector<const TestRecord*> problems;
  for (const auto& t : report.tests) {
    if (t.verdict != Verdict::pass) problems.push_back(&t);
  }
  std::stable_sort(problems.begin(), problems.end(), [](const TestRecord* a, const TestRecord* b) {
    return detail::verdict_rank(a->verdict) < detail::verdict_rank(b->verdict);
  });
  if (!problems.empty()) {
    out += "| Test | Verdict | Details |\n| --- | --- | --- |\n";
    for (const TestRecord* t : problems) {
      std::vector<std::string> facts_of = detail::key_facts(*t);
      std::string details;
      for (const auto& f : facts_of) details += (details.empty() ? "" : "; ") + f;
      if (details.empty()) details = detail::first_line(t->message);
      if (details.empty() && t->verdict == Verdict::new_test) details = "no baseline entry yet";
      std::string verdict(to_string(t->verdict));
      if (is_failure(t->verdict, report.run.strict)) verdict = "**" + verdict + "**";
      out += "| " + code_cell(t->name) + " | " + verdict + " | " + cell(details) + " |\n";
    }
    out += "\n";
  }

  // Noisy tests pass within a band, not an exact count: which band, and
  // where this run fell in it.
  std::vector<std::pair<const TestRecord*, std::string>> noisy;
  for (const auto& t : report.tests) {
    if (std::string band = detail::noise_band_text(t); !band.empty()) noisy.emplace_back(&t, std::move(band));
  }
  if (!noisy.empty()) {
    out += "<details><summary>" + std::to_string(noisy.size()) + (noisy.size() == 1 ? " noisy test" : " noisy tests") +
           ": judged within the band their recorded runs spread over</summary>\n\n";
    out += "| Test | Verdict | Band and this run |\n| --- | --- | --- |\n";
    for (const auto& [t, band] : noisy) {
      out += "| " + code_cell(t->name) + " | " + std::string(to_string(t->verdict)) + " | " + cell(band) + " |\n";
    }
    out += "\n</details>\n\n";
  }

  // Threaded tests are gated in two parts: which was exact, which banded.
  std::vector<std::pair<const TestRecord*, std::string>> threaded;
  for (const auto& t : report.tests) {
    if (std::string parts = detail::thread_parts_text(t); !parts.empty()) threaded.emplace_back(&t, std::move(parts));
  }
  if (!threaded.empty()) {
    out += "<details><summary>" + std::to_string(threaded.size()) +
           (threaded.size() == 1 ? " threaded test" : " threaded tests") +
           ": gated in two parts, its own thread and its other threads</summary>\n\n";
    out += "| Test | Verdict | Parts |\n| --- | --- | --- |\n";
    for (const auto& [t, parts] : threaded) {
      out += "| " + code_cell(t->name) + " | " + std::string(to_string(t->verdict)) + " | " + cell(parts) + " |\n";
    }
    out += "\n</details>\n\n";
  }

  out += "<details><summary>All " + std::to_string(counts.total) + (counts.total == 1 ? " test" : " tests") +
         "</summary>\n\n";
  out += "| Test | Verdict |";
  for (MetricName m : kMetricNames) out += " " + std::string(to_string(m)) + " |";
  out += " ms |\n| --- | --- |";
  for (std::size_t i = 0; i < kMetricNames.size(); ++i) out += " ---: |";
  out += " ---: |\n";
  for (const auto& t : report.tests) {
    out += "| " + code_cell(t.name) + " | " + std::string(to_string(t.verdict)) + " |";
    for (MetricName m : kMetricNames) {
      if (!is_measured(t.not_measured, m)) {
        out += " not measured |";
        continue;
      }
      out += " " + std::string(t.estimated ? "~" : "") + std::to_string(get(t.metrics, m));
      if (t.standard_errors) {
        const std::string interval = estimate_interval(get(t.metrics, m), get(*t.standard_errors, m));
        if (!interval.empty()) out += " (" + interval + ")";
      }
      out += " |";
    }
    out += " " + milliseconds(t.duration_ms) + " |\n";
  }
  out += "\n</details>\n";
  return out;
}

}  // namespace heapgate
