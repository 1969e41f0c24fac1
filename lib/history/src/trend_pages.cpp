// SPDX-License-Identifier: MIT
// `heapgate history report`: an index page, a page of runs and one page per
// test, so that a history of thousands of tests over a thousand commits
// opens as fast as one test's. The charts are drawn by each page's own
// script from data in the page, nothing downloaded.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "heapgate/markup.h"
#include "heapgate/sys.h"
#include "heapgate/trend.h"
#include "trend_script.h"

namespace heapgate {
namespace {

// A step's text (describe_step(): "`Suite.Test` allocations 3 → 4 …") for a
// page: escaped, the name between backticks in <code>.
std::string step_html(std::string_view text) {
  const std::size_t open = text.find('`');
  const std::size_t close = open == std::string_view::npos ? open : text.find('`', open + 1);
  if (close == std::string_view::npos) return detail::escape_markup(text);
  return detail::escape_markup(text.substr(0, open)) + "<code>" +
         detail::escape_markup(text.substr(open + 1, close - open - 1)) + "</code>" +
         detail::escape_markup(text.substr(close + 1));
}

// JSON that may stand inside a <script> element.
std::string script_json(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string commit_link(const std::string& commit, const std::string& url) {
  const std::string shown = detail::escape_markup(commit.substr(0, 10));
  if (url.empty() || commit.empty()) return "<code>" + shown + "</code>";
  std::string href = url;
  const std::size_t at = href.find("{commit}");
  if (at != std::string::npos) href.replace(at, 8, commit);
  return "<a href=\"" + detail::escape_markup(href) + "\"><code>" + shown + "</code></a>";
}

// A report path as a link; a store keeps where each report was read.
std::string source_link(const std::string& source) {
  if (source.rfind("git:", 0) == 0 || source.empty()) return detail::escape_markup(source);
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(source, ec).string();
  return "<a href=\"file://" + detail::escape_markup(ec ? source : absolute) + "\">" + detail::escape_markup(source) +
         "</a>";
}

const char* const kStyle =
    "<style>body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse}"
    "td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:left}td.n{text-align:right}"
    "svg.chart{display:block;margin:0 0 1.5em 0}svg .band{fill:#8ab4f8;opacity:.35}svg .line{fill:none;"
    "stroke:#1a73e8;stroke-width:1.5}svg .point{fill:#1a73e8}svg .point.failed{fill:#d93025}"
    "svg .change-point{stroke:#d93025;stroke-dasharray:4 3}svg .change-label{fill:#d93025;font-size:12px}"
    "svg .axis{fill:#555;font-size:11px}h2{font-size:16px;margin:1.2em 0 .3em}</style>";

std::string page(const std::string& title, const std::string& body, const std::string& tail = "") {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + detail::escape_markup(title) +
         "</title>" + kStyle + "</head><body>\n" + body + tail + "</body></html>\n";
}

struct TestSummary {
  std::string binary;
  std::string test;
  std::size_t points = 0;
  Metrics latest;
  std::size_t steps = 0;
  std::size_t page = 0;
};

std::string test_page(const TestTrend& trend, const std::vector<MetricStep>& steps, const std::vector<RunRow>& runs,
                      const TrendPageOptions& options) {
  nlohmann::json data;
  data["test"] = trend.test;
  data["binary"] = trend.binary;
  nlohmann::json run_indexes = nlohmann::json::array();
  nlohmann::json verdicts = nlohmann::json::array();
  for (const TrendPoint& p : trend.points) {
    run_indexes.push_back(p.run);
    verdicts.push_back(p.verdict);
  }
  data["runs"] = std::move(run_indexes);
  data["verdicts"] = std::move(verdicts);
  nlohmann::json metrics = nlohmann::json::array();
  for (MetricName metric : kMetricNames) {
    nlohmann::json m;
    m["name"] = std::string(to_string(metric));
    nlohmann::json values = nlohmann::json::array();
    nlohmann::json low = nlohmann::json::array();
    nlohmann::json high = nlohmann::json::array();
    bool banded = false;
    for (const TrendPoint& p : trend.points) {
      values.push_back(get(p.metrics, metric));
      if (p.band) {
        banded = true;
        low.push_back(get(p.band->low, metric));
        high.push_back(get(p.band->high, metric));
      } else {
        low.push_back(nullptr);
        high.push_back(nullptr);
      }
    }
    m["values"] = std::move(values);
    if (banded) {
      m["low"] = std::move(low);
      m["high"] = std::move(high);
    }
    nlohmann::json changes = nlohmann::json::array();
    for (const MetricStep& step : steps) {
      if (step.metric != metric) continue;
      changes.push_back({{"index", step.change.index},
                         {"before", step.change.before},
                         {"after", step.change.after},
                         {"stable_for", step.change.stable_for},
                         {"text", describe_step(step, runs)}});
    }
    m["changes"] = std::move(changes);
    metrics.push_back(std::move(m));
  }
  data["metrics"] = std::move(metrics);

  std::string body = "<p><a href=\"../index.html\">all tests</a> · <a href=\"../runs.html\">runs</a></p>\n<h1>" +
                     detail::escape_markup(trend.test) + "</h1>\n<p>" + detail::escape_markup(trend.binary) + ", " +
                     std::to_string(trend.points.size()) + " commits, from " +
                     commit_link(runs[trend.points.front().run].context.commit, options.commit_url) + " to " +
                     commit_link(runs[trend.points.back().run].context.commit, options.commit_url) + "</p>\n";
  body += "<h2>Change points</h2>\n<ul class=\"steps\">\n";
  for (const MetricStep& step : steps) body += "<li>" + step_html(describe_step(step, runs)) + "</li>\n";
  if (steps.empty()) body += "<li>none: every metric stayed within its band</li>\n";
  body += "</ul>\n<div id=\"charts\"></div>\n";
  const std::string tail = "<script id=\"trend-data\" type=\"application/json\">" + script_json(data) +
                           "</script>\n<script src=\"../commits.js\"></script>\n<script>" + detail::kTrendScript +
                           "</script>\n";
  return page(trend.test + " — heapgate history", body, tail);
}

Result<void> write(const std::filesystem::path& path, const std::string& text) {
  return sys::write_file_atomic(path.string(), text, sys::Durability::process_crash);
}

}  // namespace

Result<TrendPagesWritten> write_trend_pages(HistoryStore& store, const HistoryQuery& query,
                                            const TrendPageOptions& options) {
  const std::filesystem::path dir(options.dir);
  std::error_code ec;
  std::filesystem::create_directories(dir / "tests", ec);
  if (ec) {
    return fail(make_error(ErrorCode::io_error, options.dir, "cannot create the directory: " + ec.message(),
                           "give -o a directory you can write to"));
  }
  auto runs = store.runs(query);
  if (!runs) return fail(runs.error());

  std::vector<TestSummary> tests;
  std::vector<std::pair<MetricStep, std::string>> all_steps;
  Result<void> written;
  auto read = for_each_trend(store, query, *runs, [&](const TestTrend& trend) {
    if (!written) return;
    std::vector<MetricStep> steps = steps_of(trend, options.change_points);
    TestSummary summary{trend.binary, trend.test,  trend.points.size(), trend.points.back().metrics,
                        steps.size(), tests.size()};
    written = write(dir / "tests" / (std::to_string(summary.page) + ".html"), test_page(trend, steps, *runs, options));
    for (MetricStep& step : steps) {
      std::string text = describe_step(step, *runs);
      all_steps.emplace_back(std::move(step), std::move(text));
    }
    // Only the largest steps are listed: keep the list short as it grows.
    if (all_steps.size() > 4 * options.top_steps + 1000) {
      std::sort(all_steps.begin(), all_steps.end(),
                [](const auto& a, const auto& b) { return step_size(a.first) > step_size(b.first); });
      all_steps.resize(options.top_steps);
    }
    tests.push_back(std::move(summary));
  });
  if (!read) return fail(read.error());
  if (!written) return fail(written.error());

  nlohmann::json commits = nlohmann::json::array();
  for (const RunRow& run : *runs) {
    commits.push_back({run.id, run.context.commit, run.context.time, run.context.branch, run.context.job, run.binary});
  }
  if (auto ok = write(dir / "commits.js", "var HG_RUNS = " + script_json(commits) + ";\n"); !ok)
    return fail(ok.error());

  std::string runs_body =
      "<p><a href=\"index.html\">all tests</a></p>\n<h1>Runs</h1>\n<table><tr><th>run</th><th>commit"
      "</th><th>time</th><th>branch</th><th>job</th><th>binary</th><th>report</th></tr>\n";
  for (const RunRow& run : *runs) {
    runs_body += "<tr id=\"run-" + std::to_string(run.id) + "\"><td>" + std::to_string(run.id) + "</td><td>" +
                 commit_link(run.context.commit, options.commit_url) + "</td><td>" +
                 detail::escape_markup(run.context.time) + "</td><td>" + detail::escape_markup(run.context.branch) +
                 "</td><td>" + detail::escape_markup(run.context.job) + "</td><td>" +
                 detail::escape_markup(run.binary) + "</td><td>" + source_link(run.source) + "</td></tr>\n";
  }
  runs_body += "</table>\n";
  if (auto ok = write(dir / "runs.html", page("runs — heapgate history", runs_body)); !ok) return fail(ok.error());

  std::sort(all_steps.begin(), all_steps.end(),
            [](const auto& a, const auto& b) { return step_size(a.first) > step_size(b.first); });
  if (all_steps.size() > options.top_steps) all_steps.resize(options.top_steps);
  std::size_t step_count = 0;
  for (const TestSummary& t : tests) step_count += t.steps;

  std::string body = "<h1>heapgate history</h1>\n<p>" + std::to_string(runs->size()) + " runs, " +
                     std::to_string(tests.size()) + " tests";
  if (!runs->empty()) {
    body += ", commits " + commit_link(runs->front().context.commit, options.commit_url) + " (" +
            detail::escape_markup(runs->front().context.time) + ") to " +
            commit_link(runs->back().context.commit, options.commit_url) + " (" +
            detail::escape_markup(runs->back().context.time) + ")";
  }
  body += ". <a href=\"runs.html\">All runs</a>.</p>\n<h2>Largest steps</h2>\n<ol class=\"largest-steps\">\n";
  for (const auto& [step, text] : all_steps) {
    const auto page_of = std::find_if(tests.begin(), tests.end(), [&](const TestSummary& t) {
      return t.binary == step.binary && t.test == step.test;
    });
    body += "<li><a href=\"tests/" + std::to_string(page_of->page) + ".html\">" + step_html(text) + "</a></li>\n";
  }
  if (all_steps.empty()) body += "<li>none: every test stayed within its band</li>\n";
  body +=
      "</ol>\n<h2>Tests</h2>\n<table class=\"tests\"><tr><th>test</th><th>binary</th><th>commits</th>"
      "<th>allocations</th><th>allocated bytes</th><th>peak bytes</th><th>change points</th></tr>\n";
  std::vector<const TestSummary*> sorted;
  for (const TestSummary& t : tests) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const TestSummary* a, const TestSummary* b) {
    return std::tie(a->binary, a->test) < std::tie(b->binary, b->test);
  });
  for (const TestSummary* t : sorted) {
    body += "<tr><td><a href=\"tests/" + std::to_string(t->page) + ".html\">" + detail::escape_markup(t->test) +
            "</a></td><td>" + detail::escape_markup(t->binary) + "</td><td class=\"n\">" + std::to_string(t->points) +
            "</td><td class=\"n\">" + std::to_string(t->latest.allocations) + "</td><td class=\"n\">" +
            std::to_string(t->latest.allocated_bytes) + "</td><td class=\"n\">" + std::to_string(t->latest.peak_bytes) +
            "</td><td class=\"n\">" + std::to_string(t->steps) + "</td></tr>\n";
  }
  body += "</table>\n";
  const std::string index = (dir / "index.html").string();
  if (auto ok = write(index, page("heapgate history", body)); !ok) return fail(ok.error());
  return TrendPagesWritten{runs->size(), tests.size(), step_count, index};
}

}  // namespace heapgate
