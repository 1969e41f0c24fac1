// SPDX-License-Identifier: MIT
// `heapgate bench compare`: gates Google Benchmark results (--benchmark_out
// JSON) on allocations and bytes per iteration against baselines/<binary>.json.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/baseline_merge.h"
#include "heapgate/benchmark_gate.h"
#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "heapgate/gate.h"
#include <CLI/CLI.hpp>

#include "commands.h"
#include "report_gate.h"
#include "output.h"

namespace heapgate::runner {
namespace {

struct BenchCompareOptions {
  std::vector<std::string> inputs;
  std::string baselines_dir = kDefaultBaselinesDir;
  std::string report_dir;
  bool update = false;
  bool allow_leaks = false;
};

// One line per benchmark that did not pass, after a count per verdict.
void print_summary(const Report& report, const std::string& baseline_path) {
  VerdictCounts counts = count_verdicts(report);
  std::string line = report.run.binary + ": " + std::to_string(counts.total) + " benchmarks";
  for (Verdict v : kVerdicts) {
    if (counts[v] > 0) line += ", " + std::to_string(counts[v]) + " " + std::string(to_string(v));
  }
  std::printf("%s (baseline %s)\n", line.c_str(), baseline_path.c_str());
  for (const TestRecord& t : report.tests) {
    if (t.verdict == Verdict::pass || t.verdict == Verdict::new_test) continue;
    std::string first = t.message.substr(0, t.message.find('\n'));
    // compare_to_baseline's explanations start with the verdict, printed already.
    const std::string verdict_prefix = std::string(to_string(t.verdict)) + ": ";
    if (first.rfind(verdict_prefix, 0) == 0) first = first.substr(verdict_prefix.size());
    std::printf("  %s %s: %s\n", std::string(to_string(t.verdict)).c_str(), t.name.c_str(), first.c_str());
  }
}

int run_bench_compare(const BenchCompareOptions& options) {
  // Inputs of one binary (e.g. runs split by --benchmark_filter) are gated together.
  std::map<std::string, std::vector<Report>> by_binary;
  for (const auto& input : options.inputs) {
    auto report = bench::read_benchmark_json(input);
    if (!report) return bad_input(report.error());
    by_binary[report->run.binary].push_back(std::move(*report));
  }
  std::vector<Report> reports;
  for (auto& [binary, inputs] : by_binary) {
    auto merged = merge_reports(inputs);
    if (!merged) return bad_input(merged.error());
    Report& report = *merged;
    auto checked = baseline_path(options.baselines_dir, binary, "heapgate bench compare");
    if (!checked) return bad_input(checked.error());
    const std::string path = *checked;
    auto baseline = read_baseline(path);
    if (!baseline) return bad_input(baseline.error());
    // The first run of a suite records its baseline, as the gtest plugin does.
    const bool write = run_records_baseline(baseline->exists, options.update);
    bench::JudgeOptions judge_options;
    judge_options.check_leaks = !options.allow_leaks;
    judge_options.update = write;
    bench::judge(report, *baseline, judge_options);
    if (write) {
      baseline->binary = binary;
      const bool existed = baseline->exists;
      BaselineMergeRules rules;
      rules.author = existed ? BaselineAuthor::update : BaselineAuthor::first_run;
      const BaselineMerge written_entries = merge_run_into(*baseline, report, rules);
      // Nothing measured writes nothing: an empty baseline would stop the
      // next (measured) run from recording one.
      if (written_entries.update.added + written_entries.update.changed > 0) {
        std::error_code ec;
        std::filesystem::create_directories(options.baselines_dir, ec);  // a failure shows in write_baseline
        if (auto written = write_baseline(path, *baseline); !written) return bad_input(written.error());
        std::fprintf(stderr, "heapgate: %s\n", describe_baseline_write(path, existed, written_entries).c_str());
      }
    }
    reports.push_back(report);
    if (!options.report_dir.empty()) {
      if (auto written = write_report_files(options.report_dir, report, binary); !written) {
        return bad_input(written.error());
      }
    }
    print_summary(report, path);
  }
  // The one exit table; nothing to judge must never read as a pass here.
  return exit_status(gate_exit(reports, /*allow_unmeasured=*/false));
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  CLI::App* bench = app.add_subcommand("bench", "Gate Google Benchmark results on allocations per iteration.");
  bench->require_subcommand(1);
  auto options = std::make_shared<BenchCompareOptions>();
  CLI::App* compare = bench->add_subcommand(
      "compare",
      "Compare allocations and bytes per iteration in --benchmark_out JSON files with baselines/<binary>.json.\n" +
          exit_codes_text({GateExit::ok, GateExit::failed, GateExit::usage, GateExit::unavailable}));
  compare->add_option("results", options->inputs, "Google Benchmark JSON files (--benchmark_out=FILE)")
      ->required()
      ->check(CLI::ExistingFile);
  compare
      ->add_option("--baselines", options->baselines_dir,
                   "Directory of baselines (<binary>.json); created on first use")
      ->capture_default_str();
  compare->add_option("--report", options->report_dir, "Write <binary>.json, .junit.xml and .md reports into DIR");
  compare->add_flag("--update", options->update, "Accept this run's numbers into the baselines");
  compare->add_flag("--allow-leaks", options->allow_leaks,
                    "Memory still live at the end of a benchmark is compared with the baseline, not a failure");
  compare->callback([options, &exit_code] { exit_code = run_bench_compare(*options); });
}

}  // namespace heapgate::runner
