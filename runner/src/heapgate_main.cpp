// SPDX-License-Identifier: MIT
// The `heapgate` command line: parses (CLI11) and dispatches to a verb.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "heapgate/version.h"
#include "commands.h"
#include "usage_errors.h"

namespace {

// The verb that was running, for a message about an exception it let through.
std::string verb_name(const CLI::App& app) {
  std::string name;
  for (const CLI::App* command = &app; command != nullptr;) {
    auto chosen = command->get_subcommands();
    if (chosen.empty()) break;
    command = chosen.front();
    name += (name.empty() ? "" : " ") + command->get_name();
  }
  return name.empty() ? std::string("(no verb)") : name;
}

// The program and its arguments after `--` on the command line of a verb
// that starts one (run, record), taken out before CLI11 parses the rest:
// CLI11 reads a value written as a list, `[a,b]` (a Catch2 tag), as one and
// drops its brackets, and the program must get its arguments verbatim.
struct SplitCommandLine {
  std::vector<std::string> heapgate;  // argv[0] and heapgate's own arguments, for CLI11
  std::vector<std::string> program;   // everything after the first `--`, or empty
};

SplitCommandLine split_command_line(int argc, const char* const* argv) {
  SplitCommandLine line;
  line.heapgate.assign(argv, argv + argc);
  const bool starts_program = argc > 1 && (std::string(argv[1]) == "run" || std::string(argv[1]) == "record");
  if (!starts_program) return line;
  const auto dashes = std::find(line.heapgate.begin() + 2, line.heapgate.end(), "--");
  if (dashes == line.heapgate.end()) return line;
  line.program.assign(dashes + 1, line.heapgate.end());
  line.heapgate.erase(dashes, line.heapgate.end());
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace heapgate::runner;
  CLI::App app{
      "heapgate: allocation regression gates for C++ test suites, on jemalloc.\n"
      "Gate test binaries with exact allocation counts; explain failures with heap-profile stacks."};
  app.set_version_flag("--version", HEAPGATE_VERSION_STRING);
  app.require_subcommand(1);
  app.footer(exit_codes_text({GateExit::ok, GateExit::failed, GateExit::usage, GateExit::unavailable,
                              GateExit::baseline_changed, GateExit::incomplete}) +
             "\nEvery verb has --help; runner/README.md has examples.\n"
             "Docs: README.md and docs/design.md in the heapgate sources.");

  int exit_code = exit_status(GateExit::usage);
  const SplitCommandLine line = split_command_line(argc, argv);
  add_run_command(app, exit_code, line.program);
  add_compare_command(app, exit_code);
  add_accept_command(app, exit_code);
  add_report_command(app, exit_code);
  add_diff_command(app, exit_code);
  add_fetch_command(app, exit_code);
  add_bench_command(app, exit_code);
  add_record_command(app, exit_code, line.program);
  add_history_command(app, exit_code);

  try {
    std::vector<const char*> args;
    for (const std::string& arg : line.heapgate) args.push_back(arg.c_str());
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s\n", usage_error_message(app, e, argc, argv).c_str());
    return exit_status(GateExit::usage);
  } catch (const std::bad_alloc&) {
    // The verbs run inside parse(). Input that needs more memory than there
    // is must still end in one line and exit 2, not in abort() and a core.
    std::fprintf(stderr, "heapgate %s: out of memory; fix: check the size of the input files, or free memory\n",
                 verb_name(app).c_str());
    return exit_status(GateExit::usage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heapgate %s: stopped by an unexpected error: %s; fix: report this as a heapgate bug\n",
                 verb_name(app).c_str(), e.what());
    return exit_status(GateExit::usage);
  }
  return exit_code;
}
