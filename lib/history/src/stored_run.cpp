// SPDX-License-Identifier: MIT
// Reports and baseline versions as runs to store.
#include <cstdio>

#include "heapgate/history.h"

namespace heapgate {
namespace {

std::uint64_t fnv1a(std::string_view text, std::uint64_t basis) {
  std::uint64_t h = basis;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  // The length too, so that texts differing only by trailing NULs differ.
  for (std::size_t n = text.size(); n != 0; n >>= 8) {
    h ^= n & 0xffU;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string content_hash(std::string_view text) {
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(fnv1a(text, 0xcbf29ce484222325ULL)),
                static_cast<unsigned long long>(fnv1a(text, 0x84222325cbf29ce4ULL)));
  return hex;
}

StoredRun stored_run_from_report(const Report& report, const RunContext& context, std::string source) {
  StoredRun run;
  run.context = context;
  run.binary = report.run.binary;
  run.mode = report.run.mode;
  run.fingerprint = report.run.fingerprint;
  run.source = std::move(source);
  // The commit too: the same report filed at the same commit is one run.
  run.content_hash = content_hash(to_json(report) + '\0' + context.commit);
  run.results.reserve(report.tests.size());
  for (const TestRecord& test : report.tests) {
    StoredResult result;
    result.test = test.name;
    result.verdict = std::string(to_string(test.verdict));
    result.mode = test.mode;
    result.metrics = test.metrics;
    result.band = test.baseline_noise;
    run.results.push_back(std::move(result));
  }
  return run;
}

StoredRun stored_run_from_baseline(const Baseline& baseline, std::string_view text, const RunContext& context,
                                   std::string source) {
  StoredRun run;
  run.context = context;
  run.binary = baseline.binary;
  run.fingerprint = baseline.fingerprint;
  run.source = std::move(source);
  // The commit too: a version that comes back later is a point there as well.
  run.content_hash = content_hash(std::string(text) + '\0' + context.commit);
  run.mode = baseline.tests.empty() ? Mode::counters : baseline.tests.begin()->second.mode;
  for (const auto& [name, entry] : baseline.tests) {
    StoredResult result;
    result.test = name;
    result.verdict = "baseline";
    result.mode = entry.mode;
    result.metrics = entry.metrics;
    result.band = entry.noise;
    run.results.push_back(std::move(result));
  }
  return run;
}

}  // namespace heapgate
