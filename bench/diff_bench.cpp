// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate diff` of two profiles from two processes, against
// `jeprof --text --base` on the same pair (base rebased so jeprof can cancel
// the shared stacks). Profiles come from profile_gen; see scripts/bench.sh.
//   bench_diff HEAPGATE_CLI BINARY BASE.heap CURRENT.heap [google benchmark flags]
// Each side runs as a child process, as a user runs it, so wall time includes
// start-up and symbol loading, and peak RSS is that child's own (wait4), not
// this process' or the other side's. The counter rss_per_input is peak RSS
// over the two files' combined size.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "heapgate/jeprof.h"
#include "heapgate/profile.h"
#include "heapgate/rebase.h"
#include "heapgate/sys.h"

extern char** environ;

namespace {

std::string g_cli;
std::string g_binary;
std::string g_base;
std::string g_current;
std::string g_rebased;  // g_base rebased onto g_current, written once

double file_mb(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) / (1024.0 * 1024.0) : 0.0;
}

struct ChildUsage {
  double peak_rss_mb = 0;
  double cpu_seconds = 0;  // user + system
};

// Waits for `pid`: its peak RSS and CPU time (both cover its own waited-for
// children too), or nothing when it did not exit 0. CPU time is the number to
// compare on a loaded machine: wall time there measures the scheduler.
std::optional<ChildUsage> wait_child(pid_t pid) {
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return ChildUsage{static_cast<double>(usage.ru_maxrss) / 1024.0,  // KiB on Linux
                    seconds(usage.ru_utime) + seconds(usage.ru_stime)};
}

void report(benchmark::State& state, double peak_mb, double cpu_seconds) {
  state.counters["peak_rss_MB"] = peak_mb;
  state.counters["rss_per_input"] = peak_mb / (file_mb(g_base) + file_mb(g_current));
  state.counters["cpu_s"] = benchmark::Counter(cpu_seconds, benchmark::Counter::kAvgIterations);
}

void BM_HeapgateDiff(benchmark::State& state) {
  double peak = 0;
  double cpu = 0;
  for (auto _ : state) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    std::vector<std::string> args = {g_cli, "diff", g_base, g_current};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, g_cli.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
      state.SkipWithError("cannot start the heapgate command line");
      return;
    }
    const auto usage = wait_child(pid);
    if (!usage) {
      state.SkipWithError("heapgate diff failed");
      return;
    }
    peak = std::max(peak, usage->peak_rss_mb);
    cpu += usage->cpu_seconds;
  }
  report(state, peak, cpu);
}

void BM_JeprofTextBase(benchmark::State& state) {
  heapgate::JeprofOptions options;
  options.binary = g_binary;
  options.profile = g_current;
  options.base = g_rebased;
  options.format = heapgate::JeprofFormat::text;
  options.timeout = std::chrono::minutes(30);
  double peak = 0;
  double cpu = 0;
  for (auto _ : state) {
    // In a child of its own, so wait4 reports jeprof's peak (and its tools') alone.
    const pid_t pid = ::fork();
    if (pid == 0) {
      auto out = heapgate::run_jeprof(options);
      ::_exit(out ? 0 : 1);
    }
    const auto usage = pid > 0 ? wait_child(pid) : std::nullopt;
    if (!usage) {
      state.SkipWithError("jeprof --text --base failed");
      return;
    }
    peak = std::max(peak, usage->peak_rss_mb);
    cpu += usage->cpu_seconds;
  }
  report(state, peak, cpu);
}

// Writes g_base rebased onto g_current to g_rebased; 0 on success.
int write_rebased() {
  auto base = heapgate::read_profile(g_base);
  auto current = heapgate::read_profile(g_current);
  if (!base || !current) {
    std::fprintf(stderr, "bench_diff: %s\n", (base ? current.error() : base.error()).message().c_str());
    return 2;
  }
  auto rebased = heapgate::rebase_profile(*base, *current);
  if (!rebased) {
    std::fprintf(stderr, "bench_diff: %s\n", rebased.error().message().c_str());
    return 2;
  }
  if (auto written = heapgate::sys::write_file_atomic(g_rebased, heapgate::write_profile(rebased->profile)); !written) {
    std::fprintf(stderr, "bench_diff: %s\n", written.error().message().c_str());
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc != 5) {
    std::fprintf(stderr, "usage: bench_diff HEAPGATE_CLI BINARY BASE.heap CURRENT.heap [benchmark flags]\n");
    return 2;
  }
  g_cli = argv[1];
  g_binary = argv[2];
  g_base = argv[3];
  g_current = argv[4];
  g_rebased = g_base + ".rebased";
  // In a child of its own: this process must stay smaller than either side's
  // peak. A spawned child's peak RSS (wait4) covers the memory it shared with
  // this process until exec, so profiles parsed here would count as theirs.
  const pid_t rebaser = ::fork();
  if (rebaser == 0) ::_exit(write_rebased());
  int status = 0;
  if (rebaser < 0 || ::waitpid(rebaser, &status, 0) != rebaser || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return 2;
  }
  benchmark::RegisterBenchmark("jeprof/--text --base", BM_JeprofTextBase)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
  benchmark::RegisterBenchmark("heapgate/diff", BM_HeapgateDiff)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(5);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
