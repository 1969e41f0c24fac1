// SPDX-License-Identifier: MIT
// The verbs of the `heapgate` command line. Each adds its subcommand, with
// its options and help, to the application; when that subcommand is the one
// chosen, its callback runs the verb and stores the verb's exit code.
#pragma once

#include <string>
#include <vector>

#include "heapgate/gate.h"

// The verbs take the application by reference; only the files that add
// options compile CLI11, ~7 s of CPU per file at -O2 -g.
namespace CLI {
class App;
}  // namespace CLI

namespace heapgate::runner {

/// Exit codes of every verb: heapgate::GateExit (heapgate/gate.h), the one table.
using heapgate::exit_codes_text;
using heapgate::exit_status;
using heapgate::GateExit;

/// Where every verb looks for baselines unless told (--baselines).
inline constexpr const char* kDefaultBaselinesDir = "baselines";

/// `program`: for the verbs that start a program (run, record), the
/// arguments after `--`, which heapgate_main.cpp takes out of the command
/// line before CLI11 parses it; appended to the verb's positional command.
void add_run_command(CLI::App& app, int& exit_code, const std::vector<std::string>& program);     // cmd_run.cpp
void add_compare_command(CLI::App& app, int& exit_code);                                          // cmd_compare.cpp
void add_accept_command(CLI::App& app, int& exit_code);                                           // cmd_accept.cpp
void add_report_command(CLI::App& app, int& exit_code);                                           // cmd_report.cpp
void add_diff_command(CLI::App& app, int& exit_code);                                             // cmd_diff.cpp
void add_fetch_command(CLI::App& app, int& exit_code);                                            // cmd_fetch.cpp
void add_bench_command(CLI::App& app, int& exit_code);                                            // cmd_bench.cpp
void add_record_command(CLI::App& app, int& exit_code, const std::vector<std::string>& program);  // cmd_record.cpp
void add_history_command(CLI::App& app, int& exit_code);                                          // cmd_history.cpp

}  // namespace heapgate::runner
