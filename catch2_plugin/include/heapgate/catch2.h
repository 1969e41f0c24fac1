// SPDX-License-Identifier: MIT
// The Catch2 face: Catch2 v2 suites gated as GoogleTest suites are. Link
// heapgate::catch2_main for a drop-in main(); a suite with its own main()
// defines CATCH_CONFIG_RUNNER and calls heapgate::catch2::run() from it.
#pragma once

// The refusals come before any include: a build that trips one stops here,
// with nothing else in the way.
// Catch2 v3 moved to <catch2/catch_test_macros.hpp> and a compiled library,
// with another listener interface; this face is written against v2's.
#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR != 2
#error \
    "heapgate::catch2 supports Catch2 v2 (catch2/catch.hpp, 2.13 or later) only; Catch2 v3 is not covered yet; fix: build the suite against Catch2 2.13 (Debian 12's catch2), or gate it another way until heapgate covers v3"
#endif
#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR == 2 && CATCH_VERSION_MINOR < 13
#error "heapgate::catch2 needs Catch2 2.13 or later (the version it is tested with, Debian 12's); fix: update Catch2"
#endif
#if defined(CATCH_CONFIG_MAIN)
#error \
    "heapgate/catch2.h: CATCH_CONFIG_MAIN gives Catch2's own main(), which runs every test unmeasured; fix: link heapgate::catch2_main and drop CATCH_CONFIG_MAIN, or define CATCH_CONFIG_RUNNER and return heapgate::catch2::run(argc, argv) from your main()"
#endif

#include <cstddef>
#include <string>
#include <vector>

#include "heapgate/harness.h"

namespace heapgate::catch2 {

namespace detail {
/// run()'s steps, for the inline run() below: Catch::Session is declared
/// only where CATCH_CONFIG_RUNNER compiles Catch2's implementation.
/// start(): heapgate's flags out of argv (and the one re-exec for
/// jemalloc's settings), heapgate's listener registered; returns how many
/// times the session runs (1, or a re-run child's --heapgate_internal_runs).
int start(int* argc, char** argv);
void iteration_start(int iteration);
void iteration_end(int iteration);
/// Ends the gated run: `catch_status` is the session's exit status; the
/// result fails when heapgate failed a test, though every assertion passed.
int finish(int catch_status);
/// The shard this process runs (`heapgate run -j N`: GoogleTest's sharding
/// variables); false when the run is not sharded.
bool shard(int* index, int* total);
/// The test spec that selects the test case `name` and no other.
std::string test_spec_of(const std::string& name);
/// The command line's own selection, which the children that re-run this
/// shard are given (they select the shard again, as this process did).
void keep_selection(const std::vector<std::string>& tests_or_tags);
}  // namespace detail

#if defined(CATCH_CONFIG_RUNNER)
/// Catch2 v2 cannot shard: a shard runs every `total`-th test case of those
/// the command line selects, from its `index`, in Catch2's run order, as
/// GoogleTest shards.
inline void select_shard(Catch::Session& session) {
  int index = 0;
  int total = 1;
  if (!detail::shard(&index, &total) || total <= 1) return;
  Catch::Config& config = session.config();
  const std::vector<Catch::TestCase> selected =
      Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
  std::string spec;
  for (std::size_t i = static_cast<std::size_t>(index); i < selected.size(); i += static_cast<std::size_t>(total)) {
    spec += (spec.empty() ? "" : ",") + detail::test_spec_of(selected[i].name);
  }
  detail::keep_selection(session.configData().testsOrTags);
  Catch::ConfigData data = session.configData();
  data.testsOrTags = {spec.empty() ? std::string("\"heapgate: this shard has no test case\"") : spec};
  session.useConfigData(data);
}

/// Runs the Catch2 session with heapgate gating every test case: what
/// `Catch::Session().run(argc, argv)` does in an own main(), plus the
/// `--heapgate_*` flags (heapgate/harness.h). One measurement window per
/// TEST_CASE, from its first section to its end (sections share their test
/// case's window: a child process can select a test case, not a section).
/// Returns the exit status: Catch2's, or 1 when only heapgate failed a test.
inline int run(int argc, char** argv) {
  const int runs = detail::start(&argc, argv);
  Catch::Session session;
  if (const int bad = session.applyCommandLine(argc, argv); bad != 0) return bad;
  select_shard(session);
  int status = 0;
  for (int i = 0; i < runs; ++i) {
    detail::iteration_start(i);
    const int ran = session.run();
    if (ran > status) status = ran;
    detail::iteration_end(i);
  }
  return detail::finish(status);
}
#endif

}  // namespace heapgate::catch2
