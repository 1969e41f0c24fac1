// SPDX-License-Identifier: MIT
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
#include "heapgate/recording.h"
#include "heapgate/recording_html.h"
#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "heapgate/symbolizer.h"
#include "heapgate/symbols_sidecar.h"
#include "heapgate/sys.h"
#include <CLI/CLI.hpp>

#include "commands.h"
#include "output.h"

namespace heapgate::runner {
namespace {

// `merge` writes the merged report, in the json format; every other format
// is an action of its own name (heapgate/report_files.h, report_formats()).
constexpr const char* kMerge = "merge";

bool is_action(const std::string& action) {
  return action == kMerge || (action != "json" && find_report_format(action) != nullptr);
}

// "merge,junit,markdown,html", for the message that lists them.
std::string action_list() {
  std::string out = kMerge;
  for (const ReportFormat& format : report_formats()) {
    if (format.name != "json") out += "," + std::string(format.name);
  }
  return out;
}

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

// `heapgate report DIR` of a recording (heapgate record): its page, by
// default DIR/report.html, and with --pprof each profile as pprof.
int run_recording_report(const ReportOptions& options) {
  auto recording = read_recording(options.action);
  if (!recording) return bad_input(recording.error());
  Symbolizer symbols;
  auto analysis = analyze_recording(*recording, symbols);
  if (!analysis) return bad_input(analysis.error());
  if (!options.pprof_dir.empty()) {
    if (!pprof_supported()) return bad_input(to_pprof(ProfileDiff{}).error());
    std::error_code ec;
    std::filesystem::create_directories(options.pprof_dir, ec);
    for (const RecordedProcess& p : recording->processes) {
      for (const std::string& name : p.profiles) {
        const std::string path = (std::filesystem::path(p.dir) / name).string();
        auto profile = read_profile(path);
        if (!profile) return bad_input(profile.error());
        if (auto ready = prepare_symbols(path, *profile, symbols); !ready) return bad_input(ready.error());
        PprofOptions pprof;
        pprof.comment = "heapgate record: pid " + std::to_string(p.pid) + ", " + name;
        auto bytes = to_pprof(*profile, symbols, pprof);
        if (!bytes) return bad_input(bytes.error());
        const std::string stem = name.substr(0, name.size() - std::string(".heap").size());
        const std::string out =
            (std::filesystem::path(options.pprof_dir) / (std::to_string(p.pid) + "." + stem + ".pb.gz")).string();
        if (auto saved = sys::write_file_atomic(out, *bytes); !saved) return bad_input(saved.error());
        std::fprintf(stderr, "heapgate report: wrote %s\n", out.c_str());
      }
    }
  }
  const std::string output =
      options.output.empty() ? (std::filesystem::path(options.action) / "report.html").string() : options.output;
  auto written = emit(output, recording_to_html(*recording, *analysis));
  if (!written) return bad_input(written.error());
  std::fprintf(stderr, "heapgate report: wrote %s\n", output.c_str());
  return exit_status(GateExit::ok);
}

int run_report(ReportOptions options) {
  if (options.inputs.empty() && is_recording(options.action)) return run_recording_report(options);
  // `heapgate report R.json --pprof DIR`: no action, only the pprof files.
  const bool pprof_only = !options.pprof_dir.empty() && !is_action(options.action);
  if (pprof_only) {
    options.inputs.insert(options.inputs.begin(), options.action);
    options.action.clear();
  } else if (!is_action(options.action)) {
    // The usage style of the command line's other checks ("heapgate report: action: ...").
    std::fprintf(stderr,
                 "heapgate report: action: %s not in {%s}; fix: see heapgate report --help "
                 "(heapgate report REPORT.json --pprof DIR writes only pprof files)\n",
                 options.action.c_str(), action_list().c_str());
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
  // `merge` writes the merged report itself: the json format.
  const ReportFormat* format = find_report_format(options.action == kMerge ? "json" : options.action);
  auto written = emit(options.output, format->render(*merged));
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
                   "merge, junit, markdown or html (one page, flame graphs inline); may be left out with --pprof; "
                   "or the DIR of heapgate record (its page goes to DIR/report.html unless -o)")
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
