// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The `heapgate` command line: parses (CLI11) and dispatches to a verb.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "heapgate/version.h"
#include "options.h"

int main(int argc, char** argv) {
  using namespace heapgate::runner;
  CLI::App app{
      "heapgate: allocation regression gates for C++ test suites, on jemalloc.\n"
      "Gate test binaries with exact allocation counts; explain failures with heap-profile stacks."};
  app.set_version_flag("--version", HEAPGATE_VERSION_STRING);
  app.require_subcommand(1);
  app.footer("Exit codes: 0 success, 1 the gate failed, 2 bad usage or input.\n"
             "Docs: README.md and docs/design.md in the heapgate sources.");

  DiffOptions diff;
  CLI::App* diff_cmd = app.add_subcommand(
      "diff", "Compare two heap profiles (heap_v2) by symbolic call stack; works across processes of one build.");
  diff_cmd->add_option("base", diff.base, "The earlier profile")->required()->check(CLI::ExistingFile);
  diff_cmd->add_option("current", diff.current, "The later profile")->required()->check(CLI::ExistingFile);
  diff_cmd->add_option("--format", diff.format, "text (per-stack deltas), folded (flame-graph input) or jeprof")
      ->check(CLI::IsMember({"text", "folded", "jeprof"}))
      ->capture_default_str();
  diff_cmd->add_option("--metric", diff.metric, "What folded output counts")
      ->check(CLI::IsMember({"live_objects", "live_bytes", "accum_objects", "accum_bytes"}))
      ->capture_default_str();
  diff_cmd->add_option("--binary", diff.binary, "The profiled program (for --format jeprof)")->check(CLI::ExistingFile);
  diff_cmd->add_option("--max-stacks", diff.max_stacks, "Stacks shown in text output")->capture_default_str();
  diff_cmd->add_option("-o,--output", diff.output, "Write to FILE (atomically) instead of stdout");

  ReportOptions report;
  CLI::App* report_cmd = app.add_subcommand(
      "report", "Turn heapgate.report/1 JSON into one merged report, JUnit XML or a Markdown CI summary.");
  report_cmd->add_option("action", report.action, "merge, junit or markdown")
      ->required()
      ->check(CLI::IsMember({"merge", "junit", "markdown"}));
  report_cmd->add_option("reports", report.inputs, "Report files (.json or a report directory)")->required();
  report_cmd->add_option("-o,--output", report.output, "Write to FILE (atomically) instead of stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // CLI11 checks required arguments before unknown ones, so a mistyped flag
    // would be reported as "base is required": name the flag instead.
    for (const CLI::App* command : app.get_subcommands()) {
      for (const std::string& extra : command->remaining()) {
        if (extra.size() > 1 && extra[0] == '-') {
          std::fprintf(stderr, "heapgate %s: unknown option %s; see heapgate %s --help\n",
                       command->get_name().c_str(), extra.c_str(), command->get_name().c_str());
          return kExitBadInput;
        }
      }
    }
    app.exit(e);
    return kExitBadInput;
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" that exit 0; everything else is bad usage.
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  if (diff_cmd->parsed()) return run_diff(diff);
  if (report_cmd->parsed()) return run_report(report);
  return kExitBadInput;
}
