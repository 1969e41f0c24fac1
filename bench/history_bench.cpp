// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// heapgate history at the scale issue 45 asks for: adding a 5,000-test
// report to a SQLite file (≤ 1 s) and to PostgreSQL (≤ 3 s), and the trend
// pages of 1,000 commits × 2,000 tests opening in a browser (≤ 2 s).
// Run through bench/history_bench.sh, which starts a PostgreSQL server.
//   history_bench DIR [--postgresql URL] [--chromium PATH] [--commits N] [--tests N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "heapgate/history.h"
#include "heapgate/sys.h"
#include "heapgate/trend.h"

namespace {

using namespace heapgate;
using Clock = std::chrono::steady_clock;

template <typename F>
double best_of_3(F measure) {
  double best = measure();
  for (int i = 0; i < 2; ++i) {
    const double t = measure();
    if (t >= 0 && (best < 0 || t < best)) best = t;
  }
  return best;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

StoredRun run_of(std::size_t commit, std::size_t tests, const std::string& binary) {
  StoredRun run;
  char time[32];
  std::snprintf(time, sizeof time, "2026-%02zu-%02zuT%02zu:%02zu:00Z", 1 + commit / 600 % 12, 1 + commit / 24 % 25,
                commit % 24, commit % 60);
  run.context = RunContext{"c" + std::to_string(100000 + commit), "main", time, "job" + std::to_string(commit)};
  run.binary = binary;
  run.source = "report-" + std::to_string(commit) + ".json";
  run.content_hash = content_hash(binary + "/" + std::to_string(commit));
  run.results.reserve(tests);
  for (std::size_t i = 0; i < tests; ++i) {
    StoredResult r;
    r.test = "Suite" + std::to_string(i / 20) + ".Test" + std::to_string(i);
    r.verdict = "pass";
    // Every 97th test steps up by 3% at commit 600; every 5th is noisy within a band.
    const std::uint64_t base = 100 + i % 400 + (i % 97 == 0 && commit >= 600 ? 3 + (100 + i % 400) * 3 / 100 : 0);
    const std::uint64_t noise = i % 5 == 0 ? (commit * 7 + i) % 9 : 0;
    r.metrics = Metrics{base + noise, 64 * (base + noise), 0, 0, 32 * base};
    if (i % 5 == 0) {
      NoiseBand band;
      band.runs = 5;
      band.low = Metrics{base, 64 * base, 0, 0, 32 * base};
      band.high = Metrics{base + 8, 64 * (base + 8), 0, 0, 32 * base};
      r.band = band;
    }
    run.results.push_back(std::move(r));
  }
  return run;
}

// Adds five 5,000-test runs after `warm` earlier ones; prints each time.
void bench_add(const std::string& name, const std::string& location) {
  HistoryOpenOptions options;
  options.for_writing = true;
  auto store = open_history(location, options);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message().c_str());
    std::exit(2);
  }
  // A store that already holds runs: 20 earlier 5,000-test reports.
  for (std::size_t c = 0; c < 20; ++c) (void)(*store)->add(run_of(c, 5000, "big_test"));
  std::vector<double> times;
  for (std::size_t c = 20; c < 25; ++c) {
    const StoredRun run = run_of(c, 5000, "big_test");
    const auto start = Clock::now();
    auto added = (*store)->add(run);
    times.push_back(seconds_since(start));
    if (!added || !added->stored) {
      std::fprintf(stderr, "add failed: %s\n", added ? "not stored" : added.error().message().c_str());
      std::exit(2);
    }
  }
  std::sort(times.begin(), times.end());
  std::printf("%-10s add one 5,000-test report (store holds 20+ runs): median %.3f s, max %.3f s (5 adds)\n",
              name.c_str(), times[2], times[4]);
}

// How long `page` takes to load in the browser: a harness page loads it in
// an iframe and writes the time from before the iframe to its load event
// (after its scripts drew the charts) into its title, which --dump-dom
// prints. The browser's own start is not counted.
double page_load_seconds(const std::string& chromium, const std::string& page, const std::string& home) {
  const std::string harness = home + "/harness.html";
  (void)sys::write_file_atomic(
      harness,
      "<!DOCTYPE html><html><head><title>-</title><script>var t0 = performance.now();</script></head><body>"
      "<iframe style=\"width:1280px;height:900px\" src=\"file://" +
          page + "\" onload=\"document.title = 'ms=' + (performance.now() - t0).toFixed(0)\"></iframe></body></html>");
  sys::ProcessOptions options;
  options.extra_env = {"HOME=" + home};
  auto ran =
      sys::run_process({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--no-first-run", "--user-data-dir=" + home + "/profile", "--dump-dom", "file://" + harness},
                       options);
  if (!ran || ran->exit_code != 0) return -1;
  const std::size_t at = ran->stdout_text.find("<title>ms=");
  if (at == std::string::npos) return -1;
  return std::strtod(ran->stdout_text.c_str() + at + 10, nullptr) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  // Each line as soon as it is measured: the whole run takes minutes.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) {
    std::fprintf(stderr, "usage: history_bench DIR [--postgresql URL] [--chromium PATH] [--commits N] [--tests N]\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::string postgresql, chromium = "/usr/bin/chromium";
  std::size_t commits = 1000, tests = 2000;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--postgresql") postgresql = argv[i + 1];
    if (flag == "--chromium") chromium = argv[i + 1];
    if (flag == "--commits") commits = std::stoul(argv[i + 1]);
    if (flag == "--tests") tests = std::stoul(argv[i + 1]);
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  bench_add("SQLite", dir + "/add.db");
  if (!postgresql.empty()) bench_add("PostgreSQL", postgresql);

  // The trend pages of `commits` commits × `tests` tests.
  const std::string db = dir + "/pages.db";
  HistoryOpenOptions options;
  options.for_writing = true;
  auto store = open_history(db, options);
  if (!store) return 2;
  auto start = Clock::now();
  for (std::size_t c = 0; c < commits; ++c) (void)(*store)->add(run_of(c, tests, "suite_test"));
  std::printf("SQLite     filled %zu commits x %zu tests (%zu rows) in %.1f s\n", commits, tests, commits * tests,
              seconds_since(start));
  store->reset();
  auto reading = open_history(db, HistoryOpenOptions{});
  if (!reading) return 2;
  TrendPageOptions pages;
  pages.dir = dir + "/pages";
  start = Clock::now();
  auto written = write_trend_pages(**reading, {}, pages);
  if (!written) {
    std::fprintf(stderr, "%s\n", written.error().message().c_str());
    return 2;
  }
  std::uintmax_t bytes = 0, largest = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(pages.dir)) {
    if (!entry.is_regular_file()) continue;
    bytes += entry.file_size();
    if (entry.path().filename() != "index.html") largest = std::max(largest, entry.file_size());
  }
  std::printf(
      "pages      wrote %zu test pages, %zu change points, %.1f MB in %.1f s; index.html %.0f KB, largest "
      "other page %.0f KB\n",
      written->tests, written->steps, static_cast<double>(bytes) / 1e6, seconds_since(start),
      static_cast<double>(std::filesystem::file_size(pages.dir + "/index.html")) / 1e3,
      static_cast<double>(largest) / 1e3);
  if (sys::exists(chromium)) {
    const std::string home = dir + "/chromium-home";
    std::filesystem::create_directories(home);
    page_load_seconds(chromium, pages.dir + "/runs.html", home);  // the first start makes the profile
    std::printf(
        "chromium   headless, load until the load event (charts drawn), best of 3: index %.2f s, a test "
        "page (%zu points x 5 charts) %.2f s, runs page %.2f s\n",
        best_of_3([&] { return page_load_seconds(chromium, pages.dir + "/index.html", home); }), commits,
        best_of_3([&] { return page_load_seconds(chromium, pages.dir + "/tests/0.html", home); }),
        best_of_3([&] { return page_load_seconds(chromium, pages.dir + "/runs.html", home); }));
  }
  // A 5,000-test report of the same binary added to the large store: its
  // first 2,000 tests have a point at every commit already, so their rows
  // go into the middle of the results' key, the slow case.
  store = open_history(db, options);
  if (!store) return 2;
  std::vector<double> times;
  for (std::size_t c = 0; c < 3; ++c) {
    const StoredRun run = run_of(commits + c, 5000, "suite_test");
    const auto add_start = Clock::now();
    if (!(*store)->add(run)) return 2;
    times.push_back(seconds_since(add_start));
  }
  std::sort(times.begin(), times.end());
  std::printf("SQLite     add one 5,000-test report to the %zu-row store: median %.3f s, max %.3f s (3 adds)\n",
              commits * tests, times[1], times[2]);
  return 0;
}
