// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The HTML report: its text, its inline SVG (parsed as XML), and the page as
// headless Chromium loads it, with the zoom script clicked.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <pugixml.hpp>
#include <string>
#include <vector>

#include "heapgate/gate.h"
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

const std::string kParse =
    "Parser::parse(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&) at "
    "src/parser.cpp:40";
const std::string kTestBody = "Parser_GrowsBuffer_Test::TestBody() at tests/parser_test.cpp:44";

// One regressed test with stacks and call sites against its baseline's, one
// passing test. Between baseline and now, grow() went from 4 allocations to
// 60, token() stayed, legacy_copy() is gone.
Report sample_report() {
  Report r;
  r.run.binary = "parser_test";
  r.run.mode = Mode::exact;
  r.run.jemalloc_version = "5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c";
  r.run.host = "ci-runner-1";
  r.run.started_at = "2024-05-01T12:00:00Z";

  TestRecord grows = record("Parser", "GrowsBuffer", Metrics{180, 8192, 0, 0, 4096}, Metrics{120, 4096, 0, 0, 4096});
  grows.verdict = Verdict::regressed;
  grows.stacks.push_back(StackSample{{"std::vector<char, std::allocator<char> >::reserve(unsigned long) at "
                                      "/usr/include/c++/12/bits/vector.tcc:66",
                                      "Parser::grow(unsigned long) at src/parser.cpp:88", kParse, kTestBody},
                                     {0, 0, 60, 4096}});
  grows.stacks.push_back(StackSample{
      {"operator new(unsigned long)", "Parser::token() at src/parser.cpp:120", kParse, kTestBody}, {0, 0, 8, 512}});
  grows.call_sites = call_sites_of(grows.stacks);
  grows.baseline_call_sites = {{"Parser::grow(unsigned long)", "src/parser.cpp:88", 4, 1024},
                               {"Parser::token()", "src/parser.cpp:120", 8, 512},
                               {"Parser::legacy_copy()", "src/parser.cpp:150", 48, 2560}};
  grows.message = std::string("regressed: allocations 120 \xE2\x86\x92 180 (+60, +50.0%), limit +0. ") + kInjected +
                  "\nby call site, against the baseline:\n" +
                  explain_call_site_changes(grows.baseline_call_sites, grows.call_sites);
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

// The `<g>` of the frame whose tooltip starts with `name`, in `svg`.
pugi::xml_node frame_node(const pugi::xml_document& svg, const std::string& name) {
  for (pugi::xml_node g : svg.child("svg").children("g")) {
    if (std::string(g.child("title").text().get()).rfind(name, 0) == 0) return g;
  }
  return {};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
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
  // The durations as measured: 4.75 ms is not 0.0.
  EXPECT_NE(html.find("<td class=\"num\">4.8</td></tr>"), std::string::npos);

  // Escaped everywhere: the message's markup and the template arguments.
  EXPECT_EQ(html.find(kInjected), std::string::npos);
  EXPECT_NE(html.find("&lt;b id=&quot;injected&quot;&gt;not markup&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("std::vector<char"), std::string::npos);
  EXPECT_NE(html.find("std::vector&lt;char, std::allocator&lt;char&gt; &gt;::reserve(unsigned long)"),
            std::string::npos);

  // One details section (the regressed test), holding one inline flame graph
  // that is well-formed XML on its own and without a declaration.
  const std::string section = slice(html, "<section class=\"test\"", "</section>");
  ASSERT_FALSE(section.empty());
  EXPECT_NE(section.find("Parser.GrowsBuffer"), std::string::npos);
  EXPECT_EQ(html.find("<section class=\"test\"", html.find("</section>")), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_EQ(count(section, "<svg"), 1u);
}

TEST(HtmlReport, AFailingTestShowsNumbersThenChangedCallSitesThenItsMessageOnceThenTheGraph) {
  const std::string section = slice(to_html(sample_report()), "<section class=\"test\"", "</section>");
  ASSERT_FALSE(section.empty());
  const std::size_t changes = section.find("<table class=\"changes\">");
  const std::size_t sites = section.find("<h4>Call sites that changed</h4>");
  const std::size_t message = section.find("<pre class=\"message\">");
  const std::size_t graph = section.find("<svg");
  ASSERT_NE(changes, std::string::npos) << section;
  ASSERT_NE(sites, std::string::npos) << section;
  ASSERT_NE(message, std::string::npos) << section;
  ASSERT_NE(graph, std::string::npos) << section;
  EXPECT_LT(changes, sites);
  EXPECT_LT(sites, message);
  EXPECT_LT(message, graph);

  // The metrics that moved, with the allowed change; the unchanged ones are left out.
  const std::string table = slice(section, "<table class=\"changes\">", "</table>");
  EXPECT_NE(table.find("<tr class=\"beyond up\"><th>allocations</th><td class=\"num\">120</td><td class=\"num\">180"
                       "</td><td class=\"num delta\">+60 (+50.0%)</td>"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("peak_bytes"), std::string::npos) << table;

  // Each changed call site once, largest change first, with before → after;
  // token() did not change and is not listed.
  const std::string rows = slice(section, "<table class=\"sites\">", "</table>");
  const std::size_t grow = rows.find("<code title=\"Parser::grow(unsigned long)\">Parser::grow</code>");
  const std::size_t legacy = rows.find("<code title=\"Parser::legacy_copy()\">Parser::legacy_copy</code>");
  ASSERT_NE(grow, std::string::npos) << rows;
  ASSERT_NE(legacy, std::string::npos) << rows;
  EXPECT_LT(grow, legacy);
  EXPECT_NE(rows.find("<td class=\"num up\"><strong>+56</strong> <span class=\"muted\">(4 \xE2\x86\x92 60)</span>"),
            std::string::npos)
      << rows;
  EXPECT_NE(rows.find("<td class=\"num down\"><strong>-2560</strong> <span class=\"muted\">(2560 \xE2\x86\x92 0)"),
            std::string::npos)
      << rows;
  EXPECT_EQ(rows.find("Parser::token"), std::string::npos) << rows;

  // The failure text once: its first line appears once in the section, and
  // the call-site lines it carried are the table above, not repeated as text.
  EXPECT_EQ(count(section, "regressed: allocations 120"), 1u) << section;
  EXPECT_EQ(section.find("by call site, against the baseline"), std::string::npos) << section;
  EXPECT_EQ(section.find("<ul class=\"facts\">"), std::string::npos) << section;
}

TEST(HtmlReport, TheFlameGraphShowsTheChangeWithShortNamesAndFullNamesOnHover) {
  const std::string section = slice(to_html(sample_report()), "<section class=\"test\"", "</section>");
  const std::string svg = slice(section, "<svg", "</svg>");
  ASSERT_FALSE(svg.empty()) << section;
  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_string(svg.c_str());
  ASSERT_TRUE(parsed) << parsed.description() << "\n" << svg;

  // grow() went from 1024 to 4096 bytes: its stack is red, 3/4 of it new.
  pugi::xml_node grow = frame_node(doc, "Parser::grow(unsigned long)");
  ASSERT_TRUE(grow) << svg;
  EXPECT_STREQ(grow.child("title").text().get(),
               "Parser::grow(unsigned long)\nat src/parser.cpp:88\n4,096 bytes now, +3,072 bytes (+300%) against the "
               "baseline");
  EXPECT_STREQ(grow.attribute("data-n").value(), "Parser::grow");
  EXPECT_STREQ(grow.child("text").text().get(), "Parser::grow");
  EXPECT_EQ(std::string(grow.child("rect").attribute("fill").value()).rfind("rgb(255,", 0), 0u);
  // token() did not change: grey.
  pugi::xml_node token = frame_node(doc, "Parser::token()");
  ASSERT_TRUE(token);
  EXPECT_STREQ(token.child("title").text().get(),
               "Parser::token()\nat src/parser.cpp:120\n512 bytes now, unchanged against the baseline");
  EXPECT_STREQ(token.child("rect").attribute("fill").value(), "rgb(205,205,205)");
  // legacy_copy() is gone: drawn as wide as it was, blue.
  pugi::xml_node legacy = frame_node(doc, "Parser::legacy_copy()");
  ASSERT_TRUE(legacy) << svg;
  EXPECT_STREQ(legacy.child("title").text().get(),
               "Parser::legacy_copy()\nat src/parser.cpp:150\n0 bytes now, -2,560 bytes (-100%) against the baseline");
  const std::string blue = legacy.child("rect").attribute("fill").value();
  EXPECT_EQ(blue.substr(blue.size() - 5), ",255)") << blue;
  // The 100-character std::string parameter list is on hover only.
  pugi::xml_node parse = frame_node(doc,
                                    "Parser::parse(std::__cxx11::basic_string<char, std::char_traits<char>, "
                                    "std::allocator<char> > const&)\nat src/parser.cpp:40");
  ASSERT_TRUE(parse) << svg;
  EXPECT_STREQ(parse.attribute("data-n").value(), "Parser::parse");
  // The root sums it all: 4608 now against 4096 before.
  EXPECT_STREQ(frame_node(doc, "all").child("title").text().get(),
               "all\n4,608 bytes now, +512 bytes (+12.5%) against the baseline");
  // A search box per graph.
  EXPECT_EQ(count(section, "<input type=\"search\" class=\"hg-search\""), 1u);
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
  EXPECT_NE(html.find("<title>all\n224 bytes now, +224 bytes against the baseline</title>"), std::string::npos);
  EXPECT_NE(html.find("No stacks were recorded for this test"), std::string::npos);
  EXPECT_NE(html.find("allocations 120 over the budget of 100 (+20)"), std::string::npos);
}

TEST(HtmlReport, WithoutBaselineCallSitesTheGraphIsGreyAndSaysWhy) {
  Report r = sample_report();
  r.tests[0].baseline_call_sites.clear();
  const std::string section = slice(to_html(r), "<section class=\"test\"", "</section>");
  EXPECT_NE(section.find("<h4>Call sites in this run</h4>"), std::string::npos) << section;
  EXPECT_NE(section.find("the baseline records no call sites to compare with"), std::string::npos) << section;
  EXPECT_EQ(section.find("against the baseline</title>"), std::string::npos) << section;
  EXPECT_EQ(section.find("fill=\"rgb(255,"), std::string::npos) << section;
}

TEST(HtmlReport, TheFlameGraphDrawsAtMost200StacksAndSaysHowManyMore) {
  Report r = sample_report();
  TestRecord& t = r.tests[0];
  t.stacks.clear();
  for (int i = 0; i < 230; ++i) {
    t.stacks.push_back(StackSample{{"leaf" + std::to_string(i) + "()", "Parser::parse()"}, {0, 0, 1, 100.0 + i}});
  }
  const std::string svg = slice(to_html(r), "<svg", "</svg>");
  // 230 stacks plus legacy_copy(), gone since the baseline, whose change is the largest.
  EXPECT_NE(svg.find("31 more stacks not drawn (the 200 largest are)"), std::string::npos) << svg;
  EXPECT_NE(svg.find("data-n=\"Parser::legacy_copy\""), std::string::npos);
  EXPECT_NE(svg.find("data-n=\"leaf229\""), std::string::npos);  // the largest are kept
  EXPECT_EQ(svg.find("data-n=\"leaf29\""), std::string::npos);   // the smallest are not
}

// `heapgate report html` draws the page from a JSON report: the baseline's
// call sites travel in it, so the page from the file is the page from memory.
TEST(HtmlReport, TheJsonReportCarriesWhatThePageNeeds) {
  const Report r = sample_report();
  auto parsed = parse_report_json(to_json(r), "report.json");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->tests[0].baseline_call_sites, r.tests[0].baseline_call_sites);
  EXPECT_EQ(to_html(*parsed), to_html(r));
}

// A threaded test whose own thread grew while other threads took less of the
// work: its total fell, and the page still shows the row as the regression.
TEST(HtmlReport, ARegressionWhoseTotalFellIsShownAsGrowth) {
  Report r = sample_report();
  TestRecord& threaded = r.tests[0];
  MetricDelta& d = threaded.deltas[static_cast<std::size_t>(MetricName::allocations)];
  d = compare_metric(MetricName::allocations, 305, 283, Tolerance{});
  d.grew = true;
  const std::string table =
      slice(slice(to_html(r), "<section class=\"test\"", "</section>"), "<table class=\"changes\">", "</table>");
  EXPECT_NE(table.find("<tr class=\"beyond up\"><th>allocations</th><td class=\"num\">305</td><td class=\"num\">283"),
            std::string::npos)
      << table;
  // Carried by the JSON report, so the page rendered from it says the same.
  auto parsed = parse_report_json(to_json(r), "report.json");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_TRUE(parsed->tests[0].deltas[static_cast<std::size_t>(MetricName::allocations)].grew);
  EXPECT_EQ(to_html(*parsed), to_html(r));
}

TEST(HtmlReport, MatchesTheApprovedPage) {
  const std::string path = std::string(HEAPGATE_APPROVED_DIR) + "/report_explained.html";
  const std::string actual = to_html(sample_report());
  const char* approve = std::getenv("HEAPGATE_APPROVE");
  if (approve != nullptr && std::string(approve) == "1") {
    ASSERT_TRUE(sys::write_file_atomic(path, actual)) << path;
    return;
  }
  auto approved = sys::read_file(path);
  ASSERT_TRUE(approved) << path << " is missing; run with HEAPGATE_APPROVE=1 to create it";
  EXPECT_EQ(actual, *approved) << "the page differs from " << path
                               << "; if the change is intended, re-run with HEAPGATE_APPROVE=1 and review the diff";
}

TEST(HtmlReport, ChromiumShowsTheRegressedTestItsVerdictAndItsFlameGraph) {
  std::string console;
  const std::string dom = dump_dom(to_html(sample_report()), console);
  ASSERT_FALSE(dom.empty()) << console;
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << "a script failed in the page:\n" << console;
  // The page's own script ran to its end.
  EXPECT_EQ(attribute(slice(dom, "<body", ">"), "data-heapgate-ready"), "1") << slice(dom, "<body", ">");
  const std::string section = slice(dom, "<section class=\"test\"", "</section>");
  ASSERT_FALSE(section.empty()) << dom;
  EXPECT_NE(section.find("<code>Parser.GrowsBuffer</code>"), std::string::npos) << section;
  EXPECT_NE(section.find("<span class=\"badge v-regressed\">regressed</span>"), std::string::npos) << section;
  const std::string svg = slice(section, "<svg", "</svg>");
  ASSERT_FALSE(svg.empty()) << section;
  EXPECT_NE(svg.find("class=\"heapgate-flame\""), std::string::npos);
  EXPECT_NE(svg.find("<title>Parser::grow(unsigned long)\nat src/parser.cpp:88\n"), std::string::npos) << svg;
  // The browser parsed the message as text: no element came out of it.
  EXPECT_EQ(dom.find("<b id=\"injected\">"), std::string::npos);
  EXPECT_NE(dom.find("&lt;b id=\"injected\"&gt;not markup&lt;/b&gt;"), std::string::npos);
  // The passing test is in the table, but has no section.
  EXPECT_NE(dom.find("<code>Parser.ReadsConfig</code>"), std::string::npos);
  EXPECT_EQ(dom.find("id=\"test-1\""), std::string::npos);
}

// Runs `probe` (a script) at the end of the page's body in Chromium; returns the DOM.
std::string dom_after(std::string html, const std::string& probe, std::string& console) {
  const std::size_t end = html.rfind("</body>");
  if (end == std::string::npos) return {};
  html.replace(end, 7, "<script>" + probe + "</script>\n</body>");
  return dump_dom(html, console);
}

TEST(HtmlReport, ChromiumZoomsIntoAClickedFrameAndBack) {
  // Clicks Parser::grow, records what is hidden and how wide the frame got,
  // then clicks "Reset Zoom" and records again.
  const std::string probe = R"JS(
(function () {
  var svg = document.querySelector('svg.heapgate-flame');
  var frames = Array.prototype.slice.call(svg.querySelectorAll('g.hg-f'));
  function frame(name) {
    return frames.filter(function (g) { return g.getAttribute('data-n') === name; })[0];
  }
  function state() {
    var hidden = frames.filter(function (g) { return g.style.display === 'none'; }).length;
    return hidden + ' ' + frame('Parser::grow').querySelector('rect').getAttribute('width');
  }
  frame('Parser::grow').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  document.body.setAttribute('data-zoomed', state() + ' ' + frame('Parser::grow').querySelector('text').textContent);
  svg.querySelector('.hg-unzoom').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  document.body.setAttribute('data-reset', state());
})();
)JS";
  std::string console;
  const std::string dom = dom_after(to_html(sample_report()), probe, console);
  ASSERT_FALSE(dom.empty()) << console;
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << console;
  // Zoomed: legacy_copy, token and operator new are hidden, grow spans the
  // width (1200 - 2 * 10) and its label is whole.
  EXPECT_EQ(attribute(dom, "data-zoomed"), "3 1180.00 Parser::grow") << slice(dom, "<body", ">");
  // Reset: nothing hidden, the original width (4096 of 7168 = 4608 now + 2560 gone).
  const std::string reset = attribute(dom, "data-reset");
  ASSERT_EQ(reset.rfind("0 ", 0), 0u) << slice(dom, "<body", ">");
  EXPECT_NEAR(std::stod(reset.substr(2)), 1180.0 * 4096 / 7168, 0.02) << reset;
}

TEST(HtmlReport, ChromiumSearchHighlightsTheMatchingFrames) {
  // Types into the search box as a reader would: by function, then by file.
  const std::string probe = R"JS(
(function () {
  var box = document.querySelector('input.hg-search');
  function search(term) {
    box.value = term;
    box.dispatchEvent(new Event('input', {bubbles: true}));
    var hits = Array.prototype.map.call(document.querySelectorAll('g.hg-match'), function (g) {
      return g.getAttribute('data-n');
    });
    var fill = hits.length ? getComputedStyle(document.querySelector('g.hg-match rect')).fill : '';
    return hits.join('|') + ';' + document.querySelector('.hg-found').textContent + ';' + fill;
  }
  document.body.setAttribute('data-by-name', search('::GROW'));
  document.body.setAttribute('data-by-file', search('parser.cpp:1'));
  document.body.setAttribute('data-cleared', search(''));
})();
)JS";
  std::string console;
  const std::string dom = dom_after(to_html(sample_report()), probe, console);
  ASSERT_FALSE(dom.empty()) << console;
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << console;
  const std::string body = slice(dom, "<body", ">");
  EXPECT_EQ(attribute(body, "data-by-name"), "Parser::grow;1 frame matches;rgb(214, 0, 214)") << body;
  // token() at parser.cpp:120 and legacy_copy() at parser.cpp:150.
  EXPECT_EQ(attribute(body, "data-by-file"), "Parser::legacy_copy|Parser::token;2 frames match;rgb(214, 0, 214)")
      << body;
  EXPECT_EQ(attribute(body, "data-cleared"), ";;") << body;
}

// Screenshots of the page as a reader first sees it, kept in the test's
// build directory (HEAPGATE_ARTIFACT_DIR) for CI to upload and for a person
// to look at: the whole page, and the same with a search applied.
TEST(HtmlReport, ChromiumScreenshotsArePngsOfTheRequestedSize) {
  const std::string chromium = chromium_path();
  ASSERT_TRUE(sys::exists(chromium)) << "Chromium not found at " << chromium
                                     << "; fix: apt-get install chromium (scripts/setup.sh does)";
  std::error_code made;
  std::filesystem::create_directories(HEAPGATE_ARTIFACT_DIR, made);
  ASSERT_FALSE(made) << HEAPGATE_ARTIFACT_DIR << ": " << made.message();
  const std::string page = std::string(HEAPGATE_ARTIFACT_DIR) + "/report.html";
  ASSERT_TRUE(sys::write_file_atomic(page, to_html(sample_report())));
  const std::string png = std::string(HEAPGATE_ARTIFACT_DIR) + "/report.png";
  std::remove(png.c_str());
  const std::string home = testing::make_temp_dir();
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(2);
  options.extra_env = {"HOME=" + home};
  auto ran = sys::run_process({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                               "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + home + "/profile",
                               "--window-size=1280,1400", "--screenshot=" + png, "file://" + page},
                              options);
  ASSERT_TRUE(ran) << ran.error().message();
  EXPECT_EQ(ran->exit_code, 0) << ran->stderr_text;
  auto bytes = sys::read_file(png);
  ASSERT_TRUE(bytes) << png << " was not written:\n" << ran->stderr_text;
  // A PNG: the signature, then IHDR with the width and height (big-endian).
  ASSERT_GT(bytes->size(), 24u);
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned>(static_cast<unsigned char>((*bytes)[at])) << 24) |
           (static_cast<unsigned>(static_cast<unsigned char>((*bytes)[at + 1])) << 16) |
           (static_cast<unsigned>(static_cast<unsigned char>((*bytes)[at + 2])) << 8) |
           static_cast<unsigned>(static_cast<unsigned char>((*bytes)[at + 3]));
  };
  EXPECT_EQ(be32(16), 1280u);
  EXPECT_EQ(be32(20), 1400u);
  // Not a blank page: a rendered report compresses to more than a few KB.
  EXPECT_GT(bytes->size(), 20000u);
}

}  // namespace
}  // namespace heapgate
