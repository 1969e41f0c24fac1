// SPDX-License-Identifier: MIT
// `heapgate record [--mode exact|counters] [-o DIR] -- PROGRAM [ARGS]`: runs
// any dynamically linked program unchanged with libheapgate_record.so and
// jemalloc preloaded (lib/measure/src/record_preload.cpp), passes its exit
// code through, and explains what it allocated (heapgate/recording.h).
// docs/design.md §12.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "heapgate/flags.h"
#include "heapgate/recording.h"
#include "heapgate/symbolizer.h"
#include "heapgate/sys.h"
#if HEAPGATE_FETCH_WITH_HTTP
#include "heapgate/mesos_duration.h"
#endif
#include "binary_inspect.h"
#include <CLI/CLI.hpp>

#include "commands.h"
#include "output.h"

extern char** environ;

namespace heapgate::runner {
namespace {

struct RecordOptions {
  std::string mode = "exact";
  std::string dir = "heapgate-record";
  std::string snapshot_every;
  bool snapshot_signal = false;
  std::size_t top = 5;
  std::vector<std::string> command;
};

int cannot(const std::string& what, const std::string& fix) {
  std::fprintf(stderr, "heapgate record: %s; fix: %s\n", what.c_str(), fix.c_str());
  return exit_status(GateExit::usage);
}

// "1s", "500ms", "2m" in milliseconds; 0 and an error text when it is not one.
std::uint64_t snapshot_interval_ms(const std::string& text, std::string& error) {
#if HEAPGATE_FETCH_WITH_HTTP
  auto parsed = detail::parse_duration_with_short_units(text);
  if (!parsed) {
    error = parsed.error();
    return 0;
  }
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(*parsed).count());
#else
  // Without heapgate::http (which holds the duration grammar): milliseconds, "250ms".
  std::string digits = text;
  if (digits.size() > 2 && digits.compare(digits.size() - 2, 2, "ms") == 0) digits.resize(digits.size() - 2);
  auto count = detail::parse_flag_count("--snapshot-every", digits);
  if (!count) {
    error = "expected milliseconds, e.g. 250ms, got " + text;
    return 0;
  }
  return *count;
#endif
}

// libheapgate_record.so: $HEAPGATE_RECORD_LIBRARY, else where an install puts
// it beside bin/, else the build tree's (a build directory's heapgate).
std::optional<std::string> find_record_library() {
  if (const char* chosen = std::getenv("HEAPGATE_RECORD_LIBRARY"); chosen != nullptr && *chosen != '\0') {
    return sys::exists(chosen) ? std::optional<std::string>(chosen) : std::nullopt;
  }
  std::vector<std::filesystem::path> candidates;
  if (auto self = sys::self_exe_path()) {
    const std::filesystem::path bin = std::filesystem::path(*self).parent_path();
    candidates.push_back(bin.parent_path() / HEAPGATE_INSTALL_LIBDIR / "libheapgate_record.so");
    candidates.push_back(bin.parent_path() / "lib" / "libheapgate_record.so");
  }
  candidates.emplace_back(HEAPGATE_RECORD_LIBRARY_BUILT);
  for (const auto& candidate : candidates) {
    if (sys::exists(candidate.string())) return candidate.string();
  }
  return std::nullopt;
}

// The program's path: as given when it names a directory, else from $PATH.
std::optional<std::string> resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return sys::exists(program) ? std::optional<std::string>(program) : std::nullopt;
  }
  return sys::find_program(program);
}

// A fresh DIR: made if missing; an earlier recording in it is replaced; any
// other content is refused rather than mixed with.
int prepare_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    return cannot("-o " + dir + ": exists and is not a directory", "give a new or empty directory");
  }
  if (fs::is_directory(dir, ec) && !fs::is_empty(dir, ec)) {
    if (!is_recording(dir)) {
      return cannot("-o " + dir + ": not empty and not an earlier recording",
                    "give a new or empty directory (an earlier recording's is replaced)");
    }
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      const bool pid_dir = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
      if (pid_dir || name == "record.json" || name == "summary.txt" || name == "report.html") {
        fs::remove_all(entry.path(), ec);
      }
    }
  }
  fs::create_directories(dir, ec);
  // Every process writes here, from a preloaded library that cannot report
  // errors: find out now whether it can.
  const std::string probe = (fs::path(dir) / ".heapgate-probe").string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return cannot("-o " + dir + ": cannot write there: " + std::strerror(errno), "give a directory you can write to");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return 0;
}

// Refuses, with the reason, a program the preloaded library cannot measure.
int check_program(const std::string& given, std::string& path) {
  auto found = resolve_program(given);
  if (!found) {
    return cannot(given + ": no such program", given.find('/') == std::string::npos
                                                   ? "check the name, or give its path (it is not in $PATH)"
                                                   : "check the path (build the program first)");
  }
  path = *found;
  if (::access(path.c_str(), X_OK) != 0) {
    return cannot(path + ": cannot measure this program because it is not executable", "chmod +x it, or build it");
  }
  auto facts = inspect_program(path);
  if (!facts) return cannot(facts.error().where + ": " + facts.error().what, facts.error().fix);
  if (!facts->dynamic) {
    return cannot(path +
                      ": cannot measure this program because it is statically linked (there is no dynamic loader "
                      "to preload heapgate into)",
                  "build it dynamically linked, or link heapgate::measure into it and use ProfileScope");
  }
  if (facts->set_id) {
    return cannot(path +
                      ": cannot measure this program because it is setuid or setgid (the loader ignores "
                      "LD_PRELOAD for it)",
                  "record a copy without the set-id bit");
  }
  if (!facts->own_allocator.empty()) {
    return cannot(path + ": cannot measure this program because it installs its own malloc (" + facts->own_allocator +
                      "), which heapgate's preloaded jemalloc cannot replace",
                  "build it without the sanitizer or allocator (heapgate measures jemalloc's allocations)");
  }
  return 0;
}

// The recording's process directories, the root first.
std::vector<RecordedProcess> process_dirs(const std::string& dir, pid_t root) {
  std::vector<std::uint64_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
      pids.push_back(std::stoull(name));
    }
  }
  if (std::find(pids.begin(), pids.end(), static_cast<std::uint64_t>(root)) == pids.end()) pids.push_back(root);
  std::sort(pids.begin(), pids.end(), [root](std::uint64_t a, std::uint64_t b) {
    return (a == static_cast<std::uint64_t>(root)) != (b == static_cast<std::uint64_t>(root))
               ? a == static_cast<std::uint64_t>(root)
               : a < b;
  });
  std::vector<RecordedProcess> out;
  for (std::uint64_t pid : pids) {
    RecordedProcess p;
    p.pid = pid;
    out.push_back(p);
  }
  return out;
}

pid_t g_child = 0;
// SIGINT's and SIGQUIT's dispositions before heapgate ignored them: the
// program gets them back (an ignored signal would stay ignored across exec).
struct sigaction g_program_int = {};
struct sigaction g_program_quit = {};
// A signal sent to heapgate alone (not its process group) goes on to the program.
void forward_signal(int signo) {
  if (g_child > 0) (void)::kill(g_child, signo);
}

struct Started {
  pid_t pid = -1;
  std::string error;
};

// fork + execve, stdio inherited: the program's output is the user's. An exec
// failure comes back through a close-on-exec pipe.
Started start_program(const std::string& path, const std::vector<std::string>& command,
                      const std::vector<std::string>& env) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {-1, std::strerror(errno)};
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return {-1, std::strerror(errno)};
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::sigaction(SIGINT, &g_program_int, nullptr);
    ::sigaction(SIGQUIT, &g_program_quit, nullptr);
    ::execve(path.c_str(), argv.data(), envp.data());
    const int err = errno;
    (void)!::write(pipe_fds[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  int err = 0;
  ssize_t got;
  do {
    got = ::read(pipe_fds[0], &err, sizeof err);
  } while (got < 0 && errno == EINTR);
  ::close(pipe_fds[0]);
  if (got == static_cast<ssize_t>(sizeof err)) {
    (void)::waitpid(pid, nullptr, 0);
    return {-1, std::strerror(err)};
  }
  return {pid, ""};
}

std::vector<std::string> program_environment(const std::string& library, const std::string& jemalloc,
                                             const std::string& dir, const RecordOptions& options,
                                             std::uint64_t snapshot_ms) {
  std::vector<std::string> env;
  std::string preload = library + ":" + jemalloc;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("LD_PRELOAD=", 0) == 0) {
      // heapgate's first: its malloc must be the one callers reach.
      if (entry.size() > 11) preload += ":" + entry.substr(11);
      continue;
    }
    if (entry.rfind("HEAPGATE_RECORD_", 0) == 0) continue;
    env.push_back(entry);
  }
  env.push_back("LD_PRELOAD=" + preload);
  env.push_back("HEAPGATE_RECORD_DIR=" + dir);
  env.push_back("HEAPGATE_RECORD_MODE=" + options.mode);
  if (snapshot_ms > 0) env.push_back("HEAPGATE_RECORD_SNAPSHOT_MS=" + std::to_string(snapshot_ms));
  if (options.snapshot_signal) env.push_back("HEAPGATE_RECORD_SNAPSHOT_SIGNAL=1");
  return env;
}

int run_record(const RecordOptions& options) {
  if (options.command.empty()) {
    return cannot("no program", "heapgate record [--mode exact|counters] [-o DIR] -- PROGRAM [ARGS...]");
  }
  std::uint64_t snapshot_ms = 0;
  if (!options.snapshot_every.empty()) {
    std::string error;
    snapshot_ms = snapshot_interval_ms(options.snapshot_every, error);
    if (snapshot_ms == 0) {
      return cannot("--snapshot-every: " + (error.empty() ? "must be more than 0" : error),
                    "give a duration such as 1s or 250ms");
    }
  }
  if ((snapshot_ms > 0 || options.snapshot_signal) && options.mode != "exact") {
    return cannot("--snapshot-every and --snapshot-signal need --mode exact (counters keeps no stacks)",
                  "drop --mode counters");
  }
  std::string path;
  if (int refused = check_program(options.command.front(), path); refused != 0) return refused;
  auto library = find_record_library();
  if (!library) {
    return cannot("libheapgate_record.so not found beside heapgate nor in its build tree",
                  "set HEAPGATE_RECORD_LIBRARY to its path (cmake --build BUILD --target heapgate_record)");
  }
  auto jemalloc = find_system_jemalloc();
  if (!jemalloc) {
    return cannot("libjemalloc.so.2 not found", "apt-get install libjemalloc2, or set HEAPGATE_JEMALLOC to its path");
  }
  if (int refused = prepare_dir(options.dir); refused != 0) return refused;
  std::error_code ec;
  const std::string dir = std::filesystem::absolute(options.dir, ec).lexically_normal().string();

  // The terminal's Ctrl-C reaches the program too: heapgate waits for it to
  // write its profiles, then reports.
  struct sigaction ignore = {};
  struct sigaction forward = {};
  struct sigaction old_term = {};
  struct sigaction old_hup = {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  ::sigaction(SIGINT, &ignore, &g_program_int);
  ::sigaction(SIGQUIT, &ignore, &g_program_quit);
  const Started started =
      start_program(path, options.command, program_environment(*library, *jemalloc, dir, options, snapshot_ms));
  if (started.pid < 0) {
    ::sigaction(SIGINT, &g_program_int, nullptr);
    ::sigaction(SIGQUIT, &g_program_quit, nullptr);
    return cannot(path + ": cannot start it: " + started.error, "check that the program runs on its own");
  }
  g_child = started.pid;
  ::sigaction(SIGTERM, &forward, &old_term);
  ::sigaction(SIGHUP, &forward, &old_hup);
  int status = 0;
  while (::waitpid(started.pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  ::sigaction(SIGINT, &g_program_int, nullptr);
  ::sigaction(SIGQUIT, &g_program_quit, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);

  Recording recording;
  recording.dir = dir;
  recording.command = options.command;
  recording.mode = options.mode;
  recording.root_pid = static_cast<std::uint64_t>(started.pid);
  recording.snapshot_every_ms = snapshot_ms;
  if (WIFSIGNALED(status)) {
    recording.term_signal = WTERMSIG(status);
    recording.exit_code = 128 + recording.term_signal;
  } else {
    recording.exit_code = WEXITSTATUS(status);
  }
  recording.processes = process_dirs(dir, started.pid);
  if (auto written = write_recording_json(recording); !written) {
    (void)bad_input(written.error());
    return recording.exit_code;
  }
  // From here on the program's exit code is what heapgate returns: the
  // recording is there even when explaining it fails.
  auto read = read_recording(dir);
  if (!read) {
    (void)bad_input(read.error());
    return recording.exit_code;
  }
  Symbolizer symbolizer;
  ReadProfiles profiles;  // read once: for the sidecars, then the summary
  if (auto sidecars = write_recording_sidecars(*read, symbolizer, &profiles); !sidecars) {
    (void)bad_input(sidecars.error());
  }
  auto analysis = analyze_recording(*read, symbolizer, &profiles);
  if (!analysis) {
    (void)bad_input(analysis.error());
    return recording.exit_code;
  }
  const std::string summary = recording_summary(*read, *analysis, options.top);
  std::fputs(summary.c_str(), stderr);
  // The summary was printed above; a copy that cannot be written is said, not fatal.
  if (auto copy = sys::write_file_atomic((std::filesystem::path(dir) / "summary.txt").string(), summary); !copy) {
    std::fprintf(stderr, "heapgate record: %s\n", copy.error().message().c_str());
  }
  return recording.exit_code;
}

}  // namespace

void add_record_command(CLI::App& app, int& exit_code, const std::vector<std::string>& program) {
  auto options = std::make_shared<RecordOptions>();
  CLI::App* record = app.add_subcommand(
      "record",
      "Run any dynamically linked program with heapgate preloaded and record its heap: the peak, every allocation "
      "and what was live at exit, by call site. Exit code: the program's (128+N when signal N ended it); 2 when "
      "heapgate refuses the program or DIR before starting it.");
  record->add_option("--mode", options->mode, "exact (every allocation's stack) or counters (numbers only, cheaper)")
      ->check(CLI::IsMember({"exact", "counters"}))
      ->capture_default_str();
  record
      ->add_option("-o,--output", options->dir, "Directory for the recording (an earlier recording there is replaced)")
      ->type_name("DIR")
      ->capture_default_str();
  record
      ->add_option("--snapshot-every", options->snapshot_every,
                   "Also write a live-heap profile every DURATION (1s, 250ms): growth over time tells leaks from "
                   "one-time setup")
      ->type_name("DURATION");
  record->add_flag("--snapshot-signal", options->snapshot_signal,
                   "Also write a live-heap profile whenever the program gets SIGUSR2 (kill -USR2 PID)");
  record->add_option("--top", options->top, "Call sites shown per list in the summary")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  record->add_option("command", options->command, "-- PROGRAM [ARGS...]");
  record->callback([options, &exit_code, &program] {
    options->command.insert(options->command.end(), program.begin(), program.end());
    exit_code = run_record(*options);
  });
}

}  // namespace heapgate::runner
