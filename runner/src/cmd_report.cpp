// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate report merge|junit|markdown|html`: shard reports into one, and one
// report into the formats CI systems read (html: a page with flame graphs).
// `--pprof DIR` also writes the heap profiles the report names for its
// failing tests as pprof files, with or without an action.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "heapgate/gate.h"
#include "heapgate/pprof.h"
#include "heapgate/profile.h"
#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "heapgate/symbolizer.h"
#include "heapgate/symbols_sidecar.h"
#include "heapgate/sys.h"
#include "commands.h"
#include "output.h"

namespace heapgate::runner {
namespace {

const std::set<std::string> kActions = {"merge", "junit", "markdown", "html"};

struct ReportOptions {
  std::string action;
  std::vector<std::string> inputs;
  std::string output;
  std::string pprof_dir;
};

// A report names profiles as the run wrote them: relative to where the run
// was, which is usually where the report is read too, else beside the report.
std::string locate_profile(const std::string& named, const std::string& report_path) {
  std::error_code ec;
  if (std::filesystem::exists(named, ec)) return named;
  std::filesystem::path beside = std::filesystem::path(report_path).parent_path() / named;
  if (std::filesystem::exists(beside, ec)) return beside.string();
  return named;
}

// "Parser.GrowsBuffer.heap" -> "Parser.GrowsBuffer.pb.gz"; a second profile of
// the same name gets ".2", ".3", ...
std::string pprof_name(const std::string& profile_path, std::set<std::string>& taken) {
  std::string stem = std::filesystem::path(profile_path).filename().string();
  for (const char* ext : {".heap", ".prof"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0) {
      stem.resize(stem.size() - e.size());
      break;
    }
  }
  std::string name = stem + ".pb.gz";
  for (int n = 2; !taken.insert(name).second; ++n) name = stem + "." + std::to_string(n) + ".pb.gz";
  return name;
}

Result<std::size_t> write_pprof_files(const std::vector<Report>& reports, const std::vector<std::string>& sources,
                                      const std::string& dir) {
  if (!pprof_supported()) return fail(to_pprof(ProfileDiff{}).error());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return fail(make_error(ErrorCode::io_error, "--pprof " + dir, "cannot create the directory: " + ec.message(),
                           "give a directory you can write to"));
  }
  Symbolizer symbols;
  std::set<std::string> taken;
  std::size_t written = 0;
  for (std::size_t r = 0; r < reports.size(); ++r) {
    for (const TestRecord& test : reports[r].tests) {
      if (!fails_run(test, false)) continue;
      for (const std::string& named : test.profiles) {
        const std::string path = locate_profile(named, sources[r]);
        auto profile = read_profile(path);
        if (!profile) return fail(profile.error());
        if (auto ready = prepare_symbols(path, *profile, symbols); !ready) return fail(ready.error());
        PprofOptions options;
        options.comment = "heapgate: " + test.name + " (" + std::string(to_string(test.verdict)) + "), " + named;
        auto bytes = to_pprof(*profile, symbols, options);
        if (!bytes) return fail(bytes.error());
        const std::string out = (std::filesystem::path(dir) / pprof_name(named, taken)).string();
        if (auto saved = sys::write_file_atomic(out, *bytes); !saved) return fail(saved.error());
        std::fprintf(stderr, "heapgate report: %s: wrote %s\n", test.name.c_str(), out.c_str());
        ++written;
      }
    }
  }
  return written;
}

int run_report(ReportOptions options) {
  // `heapgate report R.json --pprof DIR`: no action, only the pprof files.
  const bool pprof_only = !options.pprof_dir.empty() && kActions.count(options.action) == 0;
  if (pprof_only) {
    options.inputs.insert(options.inputs.begin(), options.action);
    options.action.clear();
  } else if (kActions.count(options.action) == 0) {
    // The usage style of the command line's other checks ("heapgate report: action: ...").
    std::fprintf(stderr,
                 "heapgate report: action: %s not in {merge,junit,markdown,html}; fix: see heapgate report --help "
                 "(heapgate report REPORT.json --pprof DIR writes only pprof files)\n",
                 options.action.c_str());
    return exit_status(GateExit::usage);
  }
  if (options.inputs.empty()) {
    std::fprintf(stderr, "heapgate report %s: no report given; fix: name a report file or directory after the action\n",
                 options.action.c_str());
    return exit_status(GateExit::usage);
  }
  std::vector<Report> reports;
  for (const auto& input : options.inputs) {
    auto report = read_report(input);
    if (!report) return bad_input(report.error());
    reports.push_back(std::move(*report));
  }
  if (!options.pprof_dir.empty()) {
    auto written = write_pprof_files(reports, options.inputs, options.pprof_dir);
    if (!written) return bad_input(written.error());
    if (*written == 0) {
      std::fprintf(stderr, "heapgate report: no failing test names a heap profile; nothing written to %s\n",
                   options.pprof_dir.c_str());
    }
    if (pprof_only) return exit_status(GateExit::ok);
  }
  if (options.action != "merge" && reports.size() != 1) {
    // The usage style ("heapgate report junit: ..."), not "heapgate: heapgate report junit: ...".
    std::fprintf(stderr,
                 "heapgate report %s: expected one report, got %zu; fix: merge shard reports first: heapgate report "
                 "merge -o all.json A.json B.json\n",
                 options.action.c_str(), reports.size());
    return exit_status(GateExit::usage);
  }
  auto merged = merge_reports(reports);
  if (!merged) return bad_input(merged.error());
  std::string text;
  if (options.action == "merge") {
    text = to_json(*merged);
  } else if (options.action == "junit") {
    text = to_junit_xml(*merged);
  } else if (options.action == "html") {
    text = to_html(*merged);
  } else {
    text = to_markdown(*merged);
  }
  auto written = emit(options.output, text);
  if (!written) return bad_input(written.error());
  return exit_status(GateExit::ok);
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand(
      "report",
      "Turn heapgate reports (JSON) into one merged report, JUnit XML, a Markdown CI summary or an HTML page; "
      "--pprof DIR writes the failing tests' heap profiles as pprof files.");
  report
      ->add_option("action", options->action,
                   "merge, junit, markdown or html (one page, flame graphs inline); may be left out with --pprof")
      ->required();
  report->add_option("reports", options->inputs, "Report files (.json or a report directory)");
  report->add_option("-o,--output", options->output, "Write to FILE (atomically) instead of stdout");
  report
      ->add_option("--pprof", options->pprof_dir,
                   "Also write each failing test's heap profiles (those the report names) to DIR as gzipped "
                   "pprof files, NAME.pb.gz, for pprof -http or Speedscope")
      ->type_name("DIR");
  report->callback([options, &exit_code] { exit_code = run_report(*options); });
}

}  // namespace heapgate::runner
