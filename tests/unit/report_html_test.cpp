// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The HTML report: its text, its inline SVG (parsed as XML), and the page as
// headless Chromium loads it, with the zoom script clicked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <pugixml.hpp>
#include <string>
#include <vector>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "heapgate/report_files.h"
#include "test_support.h"

namespace heapgate {
namespace {

constexpr const char* kInjected = "<b id=\"injected\">not markup</b>";

TestRecord record(const std::string& suite, const std::string& test, Metrics current, Metrics baseline) {
  TestRecord t;
  t.suite = suite;
  t.test = test;
  t.name = suite + "." + test;
  t.file = "tests/parser_test.cpp";
  t.line = 42;
  t.mode = Mode::exact;
  t.metrics = current;
  t.baseline = baseline;
  for (MetricName m : kMetricNames)
    t.deltas.push_back(compare_metric(m, get(baseline, m), get(current, m), Tolerance{}));
  t.duration_ms = 4.75;
  return t;
}

// One regressed test with stacks, one passing test.
Report sample_report() {
  Report r;
  r.run.binary = "parser_test";
  r.run.mode = Mode::exact;
  r.run.jemalloc_version = "5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c";
  r.run.host = "ci-runner-1";
  r.run.started_at = "2024-05-01T12:00:00Z";

  TestRecord grows = record("Parser", "GrowsBuffer", Metrics{180, 8192, 0, 0, 4096}, Metrics{120, 4096, 0, 0, 4096});
  grows.verdict = Verdict::regressed;
  grows.message = std::string("heapgate: Parser.GrowsBuffer regressed (counters mode) ") + kInjected;
  grows.stacks.push_back(StackSample{{"std::vector<char>::reserve(unsigned long)", "Parser::grow()", "Parser::parse()",
                                       "Parser_GrowsBuffer_Test::TestBody()"},
                                      0,
                                      0,
                                      60,
                                      4096});
  grows.stacks.push_back(StackSample{
      {"operator new(unsigned long)", "Parser::token()", "Parser::parse()", "Parser_GrowsBuffer_Test::TestBody()"},
      0,
      0,
      8,
      512});
  grows.profiles.push_back("heapgate-report/parser_test/Parser.GrowsBuffer.heap");
  r.tests.push_back(grows);

  r.tests.push_back(record("Parser", "ReadsConfig", Metrics{120, 4096, 0, 0, 2048}, Metrics{120, 4096, 0, 0, 2048}));
  return r;
}

std::string chromium_path() {
  const char* env = std::getenv("HEAPGATE_CHROMIUM");
  return env != nullptr && *env != '\0' ? env : HEAPGATE_CHROMIUM;
}

// Loads `html` in headless Chromium and returns the DOM after the page's
// scripts ran; console messages (script errors) go to `console`.
std::string dump_dom(const std::string& html, std::string& console) {
  const std::string chromium = chromium_path();
  // Not a skip: the HTML report's promise is that a browser shows it, and a
  // machine set up by scripts/setup.sh has Chromium.
  if (!sys::exists(chromium)) {
    ADD_FAILURE() << "Chromium not found at " << chromium
                  << "; fix: apt-get install chromium (scripts/setup.sh does), or set HEAPGATE_CHROMIUM=/path/to/it";
    return {};
  }
  const std::string dir = testing::make_temp_dir();
  const std::string page = dir + "/report.html";
  if (!sys::write_file_atomic(page, html)) {
    ADD_FAILURE() << "cannot write " << page;
    return {};
  }
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(2);
  // Chromium needs a writable home; the test's own profile dir keeps parallel runs apart.
  options.extra_env = {"HOME=" + dir};
  auto ran = sys::run_process(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
       "--user-data-dir=" + dir + "/profile", "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page},
      options);
  if (!ran) {
    ADD_FAILURE() << ran.error().message();
    return {};
  }
  EXPECT_EQ(ran->exit_code, 0) << (ran->timed_out ? "timed out\n" : "") << ran->stderr_text;
  console = ran->stderr_text;
  return ran->stdout_text;
}

// The text of the element that starts at `open` (e.g. `<section class="test"`) up to `close`.
std::string slice(const std::string& text, const std::string& open, const std::string& close) {
  std::size_t start = text.find(open);
  if (start == std::string::npos) return {};
  std::size_t end = text.find(close, start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end + close.size() - start);
}

// The value of the first `name="..."` attribute in `text`.
std::string attribute(const std::string& text, const std::string& name) {
  const std::string open = " " + name + "=\"";
  std::size_t start = text.find(open);
  if (start == std::string::npos) return {};
  start += open.size();
  return text.substr(start, text.find('"', start) - start);
}

TEST(HtmlReport, IsOneSelfContainedEscapedPage) {
  const std::string html = to_html(sample_report());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", 0), 0u);
  EXPECT_EQ(html, to_html(sample_report()));  // no clocks, no randomness
  // Nothing to fetch: no links, no external scripts, styles or images. The
  // only URL is the SVG namespace name, which is never fetched.
  for (const char* external : {"<link", "src=", "@import", "url(", "https://"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  std::string without_namespace = html;
  for (std::size_t at; (at = without_namespace.find("http://www.w3.org/2000/svg")) != std::string::npos;) {
    without_namespace.erase(at, 26);
  }
  EXPECT_EQ(without_namespace.find("http://"), std::string::npos);

  // Summary, run and the per-test table with baseline → current, delta and limit.
  EXPECT_NE(html.find("<strong>2 tests</strong>"), std::string::npos);
  EXPECT_NE(html.find("1 <span class=\"badge v-regressed\">regressed</span>"), std::string::npos);
  EXPECT_NE(html.find("1 <span class=\"badge v-pass\">pass</span>"), std::string::npos);
  EXPECT_NE(html.find("5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c"), std::string::npos);
  EXPECT_NE(html.find("<div>4096 \xE2\x86\x92 8192</div><div class=\"delta\">+4096 (+100.0%)</div>"
                      "<div class=\"limit\">limit \xC2\xB1"
                      "0</div>"),
            std::string::npos);
  EXPECT_NE(html.find("allocations 120 \xE2\x86\x92 180 (+60, +50.0%)"), std::string::npos);  // key facts

  // Escaped everywhere: the message's markup and the template arguments.
  EXPECT_EQ(html.find(kInjected), std::string::npos);
  EXPECT_NE(html.find("&lt;b id=&quot;injected&quot;&gt;not markup&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("std::vector<char>"), std::string::npos);
  EXPECT_NE(html.find("std::vector&lt;char&gt;::reserve(unsigned long)"), std::string::npos);

  // One details section (the regressed test), holding one inline flame graph
  // that is well-formed XML on its own, differential and without a declaration.
  const std::string section = slice(html, "<section class=\"test\"", "</section>");
  ASSERT_FALSE(section.empty());
  EXPECT_NE(section.find("Parser.GrowsBuffer"), std::string::npos);
  EXPECT_EQ(html.find("<section class=\"test\"", html.find("</section>")), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  const std::string svg = slice(section, "<svg", "</svg>");
  ASSERT_FALSE(svg.empty());
  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_string(svg.c_str());
  ASSERT_TRUE(parsed) << parsed.description() << "\n" << svg;
  std::vector<std::string> tips;
  for (pugi::xml_node g : doc.child("svg").children("g")) tips.push_back(g.child("title").text().get());
  // Allocated bytes: 4096 + 512 under TestBody and parse, split at grow/token.
  const std::vector<std::string> expected = {
      "all (+4,608 bytes, 100.00%)",
      "Parser_GrowsBuffer_Test::TestBody() (+4,608 bytes, 100.00%)",
      "Parser::parse() (+4,608 bytes, 100.00%)",
      "Parser::grow() (+4,096 bytes, 88.89%)",
      "std::vector<char>::reserve(unsigned long) (+4,096 bytes, 88.89%)",
      "Parser::token() (+512 bytes, 11.11%)",
      "operator new(unsigned long) (+512 bytes, 11.11%)",
  };
  EXPECT_EQ(tips, expected);
}

TEST(HtmlReport, LeakGraphShowsLiveBytesAndTestsWithoutStacksSayWhy) {
  Report r = sample_report();
  r.tests[0].verdict = Verdict::leaked;
  r.tests[0].stacks[0].counts.live_bytes = 224;
  r.tests[0].stacks[0].counts.live_objects = 1;
  TestRecord budget = r.tests[1];
  budget.name = "Budget.NoStacks";
  budget.verdict = Verdict::over_budget;
  budget.budgets["allocations"] = 100;
  r.tests.push_back(budget);
  const std::string html = to_html(r);
  EXPECT_NE(html.find("live bytes by call stack"), std::string::npos);
  EXPECT_NE(html.find("<title>all (+224 bytes, 100.00%)</title>"), std::string::npos);
  EXPECT_NE(html.find("No stacks were recorded for this test"), std::string::npos);
  EXPECT_NE(html.find("allocations 120 over the budget of 100 (+20)"), std::string::npos);
}

TEST(HtmlReport, ChromiumShowsTheRegressedTestItsVerdictAndItsFlameGraph) {
  std::string console;
  const std::string dom = dump_dom(to_html(sample_report()), console);
  ASSERT_FALSE(dom.empty()) << console;
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << "a script failed in the page:\n" << console;
  const std::string section = slice(dom, "<section class=\"test\"", "</section>");
  ASSERT_FALSE(section.empty()) << dom;
  EXPECT_NE(section.find("<code>Parser.GrowsBuffer</code>"), std::string::npos) << section;
  EXPECT_NE(section.find("<span class=\"badge v-regressed\">regressed</span>"), std::string::npos) << section;
  const std::string svg = slice(section, "<svg", "</svg>");
  ASSERT_FALSE(svg.empty()) << section;
  EXPECT_NE(svg.find("class=\"heapgate-flame\""), std::string::npos);
  EXPECT_NE(svg.find("<title>Parser::grow() (+4,096 bytes, 88.89%)</title>"), std::string::npos) << svg;
  // The browser parsed the message as text: no element came out of it.
  EXPECT_EQ(dom.find("<b id=\"injected\">"), std::string::npos);
  EXPECT_NE(dom.find("&lt;b id=\"injected\"&gt;not markup&lt;/b&gt;"), std::string::npos);
  // The passing test is in the table, but has no section.
  EXPECT_NE(dom.find("<code>Parser.ReadsConfig</code>"), std::string::npos);
  EXPECT_EQ(dom.find("id=\"test-1\""), std::string::npos);
}

TEST(HtmlReport, ChromiumZoomsIntoAClickedFrameAndBack) {
  std::string html = to_html(sample_report());
  // Clicks Parser::grow(), records what is hidden and how wide the frame got,
  // then clicks "Reset Zoom" and records again.
  const std::string probe = R"JS(<script>
(function () {
  var svg = document.querySelector('svg.heapgate-flame');
  var frames = Array.prototype.slice.call(svg.querySelectorAll('g.hg-f'));
  function frame(name) {
    return frames.filter(function (g) { return g.querySelector('title').textContent.indexOf(name + ' (') === 0; })[0];
  }
  function state() {
    var hidden = frames.filter(function (g) { return g.style.display === 'none'; }).length;
    return hidden + ' ' + frame('Parser::grow()').querySelector('rect').getAttribute('width');
  }
  frame('Parser::grow()').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  document.body.setAttribute('data-zoomed', state() + ' ' + frame('Parser::grow()').querySelector('text').textContent);
  svg.querySelector('.hg-unzoom').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  document.body.setAttribute('data-reset', state());
})();
</script>
</body>)JS";
  const std::size_t end = html.rfind("</body>");
  ASSERT_NE(end, std::string::npos);
  html.replace(end, 7, probe);
  std::string console;
  const std::string dom = dump_dom(html, console);
  ASSERT_FALSE(dom.empty()) << console;
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << console;
  // Zoomed: token() and operator new are hidden, grow() spans the width
  // (1200 - 2 * 10) and its label is whole again.
  EXPECT_EQ(attribute(dom, "data-zoomed"), "2 1180.00 Parser::grow()") << slice(dom, "<body", ">");
  // Reset: nothing hidden, the original width (4096 / 4608 of 1180).
  const std::string reset = attribute(dom, "data-reset");
  ASSERT_EQ(reset.rfind("0 ", 0), 0u) << slice(dom, "<body", ">");
  EXPECT_NEAR(std::stod(reset.substr(2)), 1180.0 * 4096 / 4608, 0.02) << reset;
}

}  // namespace
}  // namespace heapgate
