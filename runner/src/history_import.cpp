// SPDX-License-Identifier: MIT
// `heapgate history import-git [BASELINE_DIR]`: every accepted version of
// the committed baseline files, stored at the commit that made it. git does
// the walking (`git log -- DIR`, `git show COMMIT:path`); heapgate's own
// baseline reader reads each version.
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "heapgate/baseline.h"
#include "heapgate/sys.h"
#include "history_add.h"
#include "history_import.h"
#include "output.h"

namespace heapgate::runner {
namespace {

struct ImportOptions {
  HistoryFlags store;
  std::string dir = kDefaultBaselinesDir;
  std::string branch;
};

// One commit that changed the directory: its hash, author time and the
// changed files (paths from the repository's root).
struct Change {
  std::string commit;
  std::string time;
  std::vector<std::string> files;
};

Result<std::string> git(const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> argv = {"git"};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(5);
  auto ran = sys::run_process(argv, options);
  if (!ran) return fail(ran.error());
  if (ran->exit_code != 0) {
    std::string said = ran->stderr_text;
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    return fail(make_error(ErrorCode::external_tool, what, "git " + args.front() + " failed: " + said,
                           "run heapgate history import-git inside the git checkout that holds the baselines"));
  }
  return ran->stdout_text;
}

std::string iso_time(const std::string& seconds) {
  const std::time_t t = static_cast<std::time_t>(std::strtoll(seconds.c_str(), nullptr, 10));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Oldest first, so a re-import adds only what is new.
Result<std::vector<Change>> changes_of(const std::string& dir) {
  auto log = git({"log", "--reverse", "--format=@%H %at", "--name-only", "--diff-filter=AM", "--", dir}, dir);
  if (!log) return fail(log.error());
  std::vector<Change> changes;
  std::size_t at = 0;
  while (at < log->size()) {
    std::size_t end = log->find('\n', at);
    if (end == std::string::npos) end = log->size();
    const std::string line = log->substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    if (line[0] == '@') {
      const std::size_t space = line.find(' ');
      changes.push_back(Change{line.substr(1, space - 1), iso_time(line.substr(space + 1)), {}});
    } else if (!changes.empty() && line.size() > 5 && line.compare(line.size() - 5, 5, ".json") == 0) {
      changes.back().files.push_back(line);
    }
  }
  return changes;
}

int run_import_git(const ImportOptions& options) {
  auto changes = changes_of(options.dir);
  if (!changes) return bad_input(changes.error());
  std::string branch = options.branch;
  if (branch.empty()) {
    auto head = git({"rev-parse", "--abbrev-ref", "HEAD"}, options.dir);
    if (head && !head->empty()) branch = head->substr(0, head->find('\n'));
  }
  std::vector<StoredRun> runs;
  std::size_t unreadable = 0;
  for (const Change& change : *changes) {
    for (const std::string& file : change.files) {
      const std::string source = "git:" + change.commit.substr(0, 10) + ":" + file;
      auto text = git({"show", change.commit + ":" + file}, source);
      if (!text) return bad_input(text.error());
      auto baseline = parse_baseline_json(*text, source);
      if (!baseline) {
        // A JSON file beside the baselines that is not one, or a version
        // this heapgate cannot read: said, and left out.
        std::fprintf(stderr, "heapgate history import-git: skipped %s\n", baseline.error().message().c_str());
        ++unreadable;
        continue;
      }
      runs.push_back(stored_run_from_baseline(*baseline, *text,
                                              RunContext{change.commit, branch, change.time, "import-git"}, source));
    }
  }
  if (runs.empty()) {
    return bad_input(make_error(ErrorCode::invalid_argument, options.dir,
                                "git knows no committed baseline file here (" + std::to_string(changes->size()) +
                                    " commits, " + std::to_string(unreadable) + " files skipped)",
                                "name the directory of the committed <binary>.json baselines"));
  }
  auto store = open_history_store(options.store, true);
  if (!store) return bad_input(store.error());
  auto added = add_runs(**store, runs, KnownRuns::skip);
  if (!added) return bad_input(added.error());
  std::fprintf(stderr,
               "heapgate history import-git: %zu baseline versions from %zu commits; %zu stored, %zu already there, "
               "%zu skipped\n",
               runs.size(), changes->size(), *added, runs.size() - *added, unreadable);
  return exit_status(GateExit::ok);
}

}  // namespace

void add_import_git_command(CLI::App& history, int& exit_code) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* command = history.add_subcommand(
      "import-git", "Backfill: store every committed version of the baseline files at its commit (git log, git show).");
  add_store_options(*command, options->store);
  command->add_option("dir", options->dir, "The directory of the committed baselines")->capture_default_str();
  command->add_option("--branch", options->branch, "The branch to file them under (default: git's current branch)");
  command->callback([options, &exit_code] { exit_code = run_import_git(*options); });
}

}  // namespace heapgate::runner
