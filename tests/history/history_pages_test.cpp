// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate history report`'s pages, loaded in headless Chromium: the
// charts are drawn, their points are the stored rows, the band is drawn and
// the change point is marked at its commit.
#include <filesystem>
#include <regex>

#include <gtest/gtest.h>

#include "heapgate/sys.h"
#include "history_fixtures.h"
#include "test_support.h"

namespace heapgate {
namespace {

using testing::heapgate;
using testing::history_report;

std::string chromium_path() {
  const char* env = std::getenv("HEAPGATE_CHROMIUM");
  return env != nullptr && *env != '\0' ? env : HEAPGATE_CHROMIUM;
}

// The DOM of `page` after its scripts ran (as tests/unit/report_html_test.cpp loads the HTML report).
std::string dump_dom(const std::string& page, std::string& console) {
  const std::string chromium = chromium_path();
  if (!sys::exists(chromium)) {
    ADD_FAILURE() << "Chromium not found at " << chromium
                  << "; fix: apt-get install chromium (scripts/setup.sh does), or set HEAPGATE_CHROMIUM=/path/to/it";
    return {};
  }
  const std::string home = testing::make_temp_dir();
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(2);
  options.extra_env = {"HOME=" + home};
  auto ran = sys::run_process(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
       "--user-data-dir=" + home + "/profile", "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page},
      options);
  if (!ran) {
    ADD_FAILURE() << ran.error().message();
    return {};
  }
  EXPECT_EQ(ran->exit_code, 0) << ran->stderr_text;
  console = ran->stderr_text;
  return ran->stdout_text;
}

// The text of the element that starts at `open` up to its `close`.
std::string slice(const std::string& text, const std::string& open, const std::string& close) {
  const std::size_t start = text.find(open);
  if (start == std::string::npos) return {};
  const std::size_t end = text.find(close, start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end + close.size() - start);
}

std::vector<std::string> all_matches(const std::string& text, const std::string& pattern) {
  std::vector<std::string> found;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    found.push_back((*it)[1].str());
  }
  return found;
}

class HistoryPages : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir();
    db_ = dir_ + "/history.db";
    // 12 commits; Suite0.Test0 steps 301 -> 308 at the sixth, out of its
    // band of 2, and regressed there; Suite0.Test1 moves within its band of 20.
    for (int c = 0; c < 12; ++c) {
      Report report = history_report("cache_test", 2, 301, 20);
      report.tests[0].metrics.allocations = c < 5 ? 301 : 308;
      report.tests[0].baseline_noise->high.allocations = 303;  // a narrow band: 301..303
      report.tests[1].metrics.allocations = 302 + static_cast<std::uint64_t>((c * 7) % 20);
      if (c == 5) report.tests[0].verdict = Verdict::regressed;
      values_.push_back(std::to_string(report.tests[0].metrics.allocations));
      const std::string path = testing::write_report_file(dir_ + "/r" + std::to_string(c) + "/cache_test.json", report);
      const std::string commit = "c0ffee" + std::string(c < 10 ? "0" : "") + std::to_string(c);
      commits_.push_back(commit);
      auto added = heapgate({"history", "add", "--history", db_, "--commit", commit, "--branch", "main", "--time",
                             "2026-05-" + std::string(c < 9 ? "0" : "") + std::to_string(c + 1) + "T00:00:00Z", "--job",
                             "j", path});
      ASSERT_EQ(added.exit_code, 0) << added.stderr_text;
    }
    auto written = heapgate({"history", "report", "--history", db_, "-o", dir_ + "/pages", "--commit-url",
                             "https://example.com/commit/{commit}"});
    ASSERT_EQ(written.exit_code, 0) << written.stderr_text;
    EXPECT_NE(written.stderr_text.find("12 runs, 2 tests, 1 change points"), std::string::npos) << written.stderr_text;
  }
  std::string dir_;
  std::string db_;
  std::vector<std::string> values_;
  std::vector<std::string> commits_;
};

TEST_F(HistoryPages, IndexListsTheStepAndLinksEachTest) {
  auto index = sys::read_file(dir_ + "/pages/index.html");
  ASSERT_TRUE(index) << index.error().message();
  EXPECT_NE(index->find("<code>Suite0.Test0</code> allocations 301 \xE2\x86\x92 308 (+7, +2.3%) at c0ffee0 "
                        "(2026-05-06T00:00:00Z), stable for 6 commits since"),
            std::string::npos)
      << *index;
  EXPECT_EQ(all_matches(*index, "<a href=\"tests/([0-9]+)\\.html\">Suite0\\.Test[01]</a>").size(), 2u);
  auto runs = sys::read_file(dir_ + "/pages/runs.html");
  ASSERT_TRUE(runs);
  EXPECT_NE(runs->find("<a href=\"https://example.com/commit/c0ffee05\"><code>c0ffee05</code></a>"), std::string::npos);
  EXPECT_NE(runs->find(dir_ + "/r5/cache_test.json"), std::string::npos);
}

TEST_F(HistoryPages, ChromiumDrawsThePointsTheBandAndTheChangePoint) {
  auto index = sys::read_file(dir_ + "/pages/index.html");
  ASSERT_TRUE(index);
  const auto pages = all_matches(*index, "<a href=\"tests/([0-9]+)\\.html\">Suite0\\.Test0</a>");
  ASSERT_EQ(pages.size(), 1u);
  std::string console;
  const std::string dom = dump_dom(dir_ + "/pages/tests/" + pages[0] + ".html", console);
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << console;
  EXPECT_NE(dom.find("data-drawn=\"5\""), std::string::npos) << dom.substr(0, 2000);
  const std::string chart = slice(dom,
                                  "<svg class=\"chart\" width=\"900\" height=\"200\" viewBox=\"0 0 900 200\" "
                                  "data-metric=\"allocations\"",
                                  "</svg>");
  ASSERT_FALSE(chart.empty()) << dom.substr(0, 4000);
  // One point per stored row, in commit order, each linked to its run.
  EXPECT_EQ(all_matches(chart, "<circle class=\"point[^\"]*\"[^>]* data-value=\"([0-9]+)\""), values_);
  EXPECT_EQ(all_matches(chart, "data-commit=\"([0-9a-f]+)\""), commits_);
  EXPECT_EQ(all_matches(chart, "<a href=\"\\.\\./runs\\.html#run-([0-9]+)\">").size(), 12u);
  EXPECT_EQ(all_matches(chart, "<circle class=\"(point failed)\"").size(), 1u);
  EXPECT_EQ(all_matches(chart, "<polygon class=\"(band)\"").size(), 1u);
  EXPECT_EQ(all_matches(chart, "<line class=\"change-point\"[^>]* data-index=\"([0-9]+)\"").size(), 1u);
  EXPECT_EQ(all_matches(chart, "<line class=\"change-point\"[^>]* data-index=\"([0-9]+)\"").front(), "5");
  EXPECT_NE(chart.find("301 \xE2\x86\x92 308"), std::string::npos) << chart;
  // The noisy test has no change point drawn.
  const std::string peak = slice(dom, "data-metric=\"peak_bytes\"", "</svg>");
  EXPECT_EQ(peak.find("change-point"), std::string::npos);
}

}  // namespace
}  // namespace heapgate
