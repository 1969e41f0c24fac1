// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// How often the sampled gate cries wolf, and how often it catches a real
// change (docs/design.md §6b): a baseline is recorded from one `sampled`
// scope, then N scopes of the same workload and N of the workload grown by
// --change percent are judged against it. Printed per workload size.
//   sampling_gate [--runs N] [--change PERCENT] [--block BYTES] [--fixed] [MiB ...]
// --fixed drops the standard errors, so the gate falls back to the fixed
// Tolerances::for_mode(sampled) (10%, plus 512 KiB on byte metrics): the rule
// the statistical one replaced, for comparison.
// Default: 100 runs, +20%, 1 KiB blocks, 64 256 1024 MiB allocated per run.
// jemalloc samples at its default rate (lg_prof_sample:19, 512 KiB).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heapgate/flags.h"
#include "heapgate/gate.h"
#include "heapgate/malloc_conf.h"
#include "heapgate/profile_scope.h"

HEAPGATE_DEFINE_MALLOC_CONF("prof:true,prof_active:false,prof_accum:true,prof_unbias:false");

namespace {

// Allocates and frees `count` blocks; the volatile write keeps the compiler
// from pairing malloc and free away.
void workload(std::size_t count, std::size_t block) {
  for (std::size_t i = 0; i < count; ++i) {
    auto* p = static_cast<volatile char*>(std::malloc(block));
    p[0] = 1;
    std::free(const_cast<char*>(p));
  }
}

bool g_fixed = false;

struct Run {
  heapgate::Metrics metrics;
  std::optional<heapgate::Metrics> errors;
};

Run measure(std::size_t count, std::size_t block) {
  heapgate::ProfileScope scope{"sampling_gate", heapgate::ScopeOptions{heapgate::Mode::sampled}};
  workload(count, block);
  auto r = scope.finish();
  if (!r || r->mode != heapgate::Mode::sampled) {
    std::fprintf(stderr, "sampling_gate: no sampled measurement: %s\n",
                 r ? "the scope fell back from sampled mode" : r.error().message().c_str());
    std::exit(1);
  }
  if (!r->profile_path.empty()) std::remove(r->profile_path.c_str());
  if (g_fixed) return Run{heapgate::from_scope(*r), std::nullopt};
  return Run{heapgate::from_scope(*r), heapgate::standard_errors_of(*r)};
}

bool regressed(const heapgate::BaselineEntry& entry, const Run& run) {
  heapgate::Observation o;
  o.mode = heapgate::Mode::sampled;
  o.metrics = run.metrics;
  o.standard_errors = run.errors;
  o.check_leaks = false;
  return heapgate::judge(o, &entry, heapgate::GatePolicy{}).verdict == heapgate::Verdict::regressed;
}

// The flag parsers' count rule (heapgate/flags.h), and more than zero.
std::size_t number(const char* flag, const char* text) {
  auto n = heapgate::detail::parse_flag_count(flag, text);
  if (!n || *n == 0) {
    std::fprintf(stderr, "sampling_gate: %s wants a whole number from 1 to 999999999, got \"%s\"\n", flag, text);
    std::exit(2);
  }
  return static_cast<std::size_t>(*n);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t runs = 100;
  std::size_t change = 20;
  std::size_t block = 1024;
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--fixed") {
      g_fixed = true;
    } else if ((arg == "--runs" || arg == "--change" || arg == "--block") && i + 1 < argc) {
      std::size_t v = number(argv[i], argv[i + 1]);
      (arg == "--runs" ? runs : arg == "--change" ? change : block) = v;
      ++i;
    } else {
      sizes.push_back(number("a size in MiB", argv[i]));
    }
  }
  if (sizes.empty()) sizes = {64, 256, 1024};
  std::printf("%zu runs per row, +%zu%% change, %zu-byte blocks, jemalloc's default sample rate, %s tolerance\n", runs,
              change, block, g_fixed ? "the fixed 10% + 512 KiB" : "the statistical");
  std::printf(
      "| MiB per run | baseline allocated_bytes (± 3 se) | false regressions, one baseline | false regressions, "
      "each run vs the one before | +%zu%% detected |\n",
      change);
  std::printf("|---|---|---|---|---|\n");
  for (std::size_t mib : sizes) {
    const std::size_t count = mib * 1024 * 1024 / block;
    const Run base = measure(count, block);
    heapgate::BaselineEntry entry;
    entry.mode = heapgate::Mode::sampled;
    entry.metrics = base.metrics;
    entry.standard_errors = base.errors;
    std::size_t false_alarms = 0;
    std::size_t caught = 0;
    // Also each unchanged run against the one before it: a fresh baseline per
    // pair, so the rate does not hang on one lucky or unlucky baseline.
    std::size_t pair_alarms = 0;
    heapgate::BaselineEntry previous = entry;
    for (std::size_t r = 0; r < runs; ++r) {
      const Run run = measure(count, block);
      false_alarms += regressed(entry, run) ? 1 : 0;
      if (r > 0) pair_alarms += regressed(previous, run) ? 1 : 0;
      previous.metrics = run.metrics;
      previous.standard_errors = run.errors;
    }
    for (std::size_t r = 0; r < runs; ++r)
      caught += regressed(entry, measure(count + count * change / 100, block)) ? 1 : 0;
    const std::string interval =
        heapgate::estimate_interval(base.metrics.allocated_bytes, base.errors ? base.errors->allocated_bytes : 0);
    std::printf("| %zu | %llu (%s) | %zu / %zu | %zu / %zu | %zu / %zu |\n", mib,
                static_cast<unsigned long long>(base.metrics.allocated_bytes), interval.c_str(), false_alarms, runs,
                pair_alarms, runs - 1, caught, runs);
    std::fflush(stdout);
  }
  return 0;
}
