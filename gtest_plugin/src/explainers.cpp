// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "explainers.h"

#include <algorithm>
#include <chrono>

#include "heapgate/diff.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"

namespace heapgate::gtest {

std::vector<StackSummary> summarize_profile(const std::string& profile_path, Symbolizer& symbolizer,
                                            std::size_t limit) {
  std::vector<StackSummary> out;
  auto profile = read_profile(profile_path);
  if (!profile) return out;
  NormalizedProfile normalized = normalize_profile(*profile, symbolizer);
  ProfileDiff all = diff_profiles(NormalizedProfile{}, normalized);
  // Keep the top stacks by live bytes and by allocations: the gate picks per verdict.
  std::vector<StackDelta> by_live = all.entries;
  std::vector<StackDelta> by_count = all.entries;
  std::stable_sort(by_count.begin(), by_count.end(), [](const StackDelta& a, const StackDelta& b) {
    return a.delta.accum_objects > b.delta.accum_objects;
  });
  auto take = [&](const std::vector<StackDelta>& from) {
    for (std::size_t i = 0; i < from.size() && i < limit; ++i) {
      StackSummary s;
      for (const auto& f : from[i].frames) s.frames.push_back(f.str());
      s.delta_live_objects = from[i].delta.live_objects;
      s.delta_live_bytes = from[i].delta.live_bytes;
      s.delta_accum_objects = from[i].delta.accum_objects;
      s.delta_accum_bytes = from[i].delta.accum_bytes;
      bool duplicate = std::any_of(out.begin(), out.end(), [&](const StackSummary& o) { return o.frames == s.frames; });
      if (!duplicate) out.push_back(std::move(s));
    }
  };
  take(by_live);
  take(by_count);
  return out;
}

Result<Explanation> RerunExplainer::explain(const std::string& test) {
  if (!own_profile_.empty()) {
    Explanation e;
    e.stacks = summarize_profile(own_profile_, symbolizer_, options_.top_stacks * 2);
    e.source = "this run";
    return e;
  }
  return rerun(test, /*iteration=*/1);
}

Result<Explanation> RerunExplainer::repeat(const std::string& test) { return rerun(test, /*iteration=*/2); }

Result<Explanation> RerunExplainer::rerun(const std::string& test, int iteration) {
  auto problem = [](std::string what) {
    return fail(make_error(ErrorCode::unavailable, "exact re-run", std::move(what), ""));
  };
  if (binary_path_.empty()) return problem("cannot find this executable's path");
  auto dir = sys::make_private_dir("heapgate-rerun.");
  if (!dir) return fail(dir.error());
  sys::ProcessOptions process;
  process.extra_env = {std::string("MALLOC_CONF=") + kExactMallocConf};
  process.unset_env = {"GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX", "HEAPGATE_MODE", "HEAPGATE_REPORT",
                       "HEAPGATE_BASELINES", "HEAPGATE_UPDATE_BASELINES", "GTEST_OUTPUT"};
  process.timeout = std::chrono::minutes(10);
  std::vector<std::string> argv = {binary_path_,
                                   "--gtest_filter=" + test,
                                   "--gtest_repeat=" + std::to_string(iteration),
                                   "--gtest_also_run_disabled_tests",
                                   "--heapgate_mode=exact",
                                   "--heapgate_report=" + *dir,
                                   "--heapgate_internal_child=" + std::to_string(iteration),
                                   "--heapgate_top_stacks=" + std::to_string(options_.top_stacks)};
  auto ran = sys::run_process(argv, process);
  if (!ran) return fail(ran.error());
  const std::string binary_name = binary_path_.substr(binary_path_.rfind('/') + 1);
  auto report = read_report(*dir + "/" + binary_name + ".json");
  if (!report) {
    return problem("the exact re-run wrote no report (exit " + std::to_string(ran->exit_code) +
                   "): " + ran->stderr_text.substr(0, 500));
  }
  for (auto& t : report->tests) {
    if (t.name != test) continue;
    Explanation e;
    e.metrics = t.metrics;
    e.stacks = std::move(t.stacks);
    e.profiles = std::move(t.profiles);
    e.source = "exact re-run";
    return e;
  }
  return problem("the exact re-run did not run " + test);
}

}  // namespace heapgate::gtest
