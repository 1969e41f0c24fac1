// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The one baseline author (heapgate/baseline_merge.h): every path that
// writes a baseline, against every refusal, in one table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "heapgate/baseline_merge.h"
#include "heapgate/gate.h"

namespace heapgate {
namespace {

Metrics metrics(std::uint64_t allocations) {
  Metrics m;
  m.allocations = allocations;
  m.allocated_bytes = allocations * 32;
  m.peak_bytes = allocations * 32;
  return m;
}

TestRecord record(const std::string& name, Verdict verdict, Mode mode = Mode::counters) {
  TestRecord t;
  t.name = name;
  t.mode = mode;
  t.verdict = verdict;
  t.metrics = metrics(50);
  return t;
}

// A run with one record of each kind a author must tell apart.
Report every_kind() {
  Report run;
  run.tests.push_back(record("K.pass", Verdict::pass));
  run.tests.push_back(record("K.improved", Verdict::improved));
  run.tests.push_back(record("K.regressed", Verdict::regressed));
  TestRecord failed = record("K.own_failure", Verdict::pass);
  failed.gtest_failed = true;
  run.tests.push_back(failed);
  run.tests.push_back(record("K.unmeasured", Verdict::unavailable));
  TestRecord off = record("K.off", Verdict::pass, Mode::off);
  run.tests.push_back(off);
  run.tests.push_back(interrupted_record("K.interrupted", Interruption::crashed, "signal 11 (SIGSEGV)"));
  run.tests.back().verdict = Verdict::pass;  // even so
  return run;
}

Baseline exact_baseline() {
  Baseline b;
  b.exists = true;
  for (const char* name : {"K.pass", "K.improved", "K.regressed"}) {
    BaselineEntry e;
    e.metrics = metrics(40);
    e.mode = Mode::counters;
    b.tests[name] = e;
  }
  return b;
}

struct Row {
  BaselineAuthor author;
  const char* test;
  bool written;
  const char* refusal;  // "" when not refused (written, or silently not selected)
};

TEST(BaselineAuthor, EveryPathRefusesTheSame) {
  const std::vector<Row> rows = {
      // Measured records are written by every path but the ratchet, which writes improvements only.
      {BaselineAuthor::first_run, "K.pass", true, ""},
      {BaselineAuthor::update, "K.regressed", true, ""},
      {BaselineAuthor::accept, "K.regressed", true, ""},
      {BaselineAuthor::ratchet, "K.improved", true, ""},
      {BaselineAuthor::ratchet, "K.pass", false, ""},
      {BaselineAuthor::ratchet, "K.regressed", false, "it regressed, and a ratchet writes improvements only"},
  };
  const std::vector<const char*> refused_everywhere = {"K.own_failure", "K.unmeasured", "K.off", "K.interrupted"};
  const std::vector<std::string> reasons = {"it failed its own assertions", "nothing was measured",
                                            "nothing was measured", "it did not finish"};
  for (BaselineAuthor author :
       {BaselineAuthor::first_run, BaselineAuthor::update, BaselineAuthor::accept, BaselineAuthor::ratchet}) {
    Baseline baseline = exact_baseline();
    BaselineMergeRules rules;
    rules.author = author;
    const BaselineMerge write = merge_run_into(baseline, every_kind(), rules);
    EXPECT_TRUE(write.blocked.empty()) << write.blocked;
    for (std::size_t i = 0; i < refused_everywhere.size(); ++i) {
      const std::string name = refused_everywhere[i];
      EXPECT_EQ(baseline.tests.count(name), 0u) << name << " written by author " << static_cast<int>(author);
      bool said = false;
      for (const BaselineRefusal& r : write.refused) said = said || (r.test == name && r.reason == reasons[i]);
      EXPECT_TRUE(said) << name << ": " << reasons[i];
    }
    for (const Row& row : rows) {
      if (row.author != author) continue;
      const bool now = baseline.tests.count(row.test) != 0 && baseline.tests.at(row.test).metrics == metrics(50);
      EXPECT_EQ(now, row.written) << row.test << " by author " << static_cast<int>(author);
      bool said = false;
      for (const BaselineRefusal& r : write.refused) said = said || (r.test == row.test && r.reason == row.refusal);
      EXPECT_EQ(said, std::string(row.refusal) != "") << row.test;
    }
  }
}

TEST(BaselineAuthor, ARunThatDidNotFinishWritesNothing) {
  for (BaselineAuthor author :
       {BaselineAuthor::first_run, BaselineAuthor::update, BaselineAuthor::accept, BaselineAuthor::ratchet}) {
    Report run = every_kind();
    run.run.complete = false;
    Baseline baseline = exact_baseline();
    const Baseline before = baseline;
    BaselineMergeRules rules;
    rules.author = author;
    const BaselineMerge write = merge_run_into(baseline, run, rules);
    EXPECT_NE(write.blocked.find("did not finish"), std::string::npos);
    EXPECT_EQ(baseline, before);
  }
  Report run = every_kind();
  run.run.complete = false;
  Baseline baseline = exact_baseline();
  BaselineMergeRules rules;
  rules.author = BaselineAuthor::calibrate;
  EXPECT_FALSE(merge_runs_into(baseline, {every_kind(), run}, rules).blocked.empty());
}

TEST(BaselineAuthor, SampledEstimatesNeverReplaceExactEntriesUnlessForced) {
  Report sampled;
  sampled.tests.push_back(record("K.pass", Verdict::pass, Mode::sampled));
  for (BaselineAuthor author : {BaselineAuthor::update, BaselineAuthor::accept}) {
    Baseline baseline = exact_baseline();
    const Baseline before = baseline;
    BaselineMergeRules rules;
    rules.author = author;
    const BaselineMerge write = merge_run_into(baseline, sampled, rules);
    EXPECT_NE(write.blocked.find("sampled (estimates) but the baseline of K.pass is exact"), std::string::npos)
        << write.blocked;
    EXPECT_NE(write.blocked_fix.find("--force"), std::string::npos);
    EXPECT_EQ(baseline, before);
  }
  Baseline baseline = exact_baseline();
  BaselineMergeRules forced;
  forced.author = BaselineAuthor::accept;
  forced.force = true;
  EXPECT_TRUE(merge_run_into(baseline, sampled, forced).blocked.empty());
  EXPECT_EQ(baseline.tests.at("K.pass").mode, Mode::sampled);
}

TEST(BaselineAuthor, TheFirstRunRecordsAndAskingRecords) {
  EXPECT_TRUE(run_records_baseline(false, false));
  EXPECT_TRUE(run_records_baseline(true, true));
  EXPECT_FALSE(run_records_baseline(true, false));
  Baseline empty;
  BaselineMergeRules rules;
  rules.author = BaselineAuthor::first_run;
  const BaselineMerge write = merge_run_into(empty, every_kind(), rules);
  EXPECT_EQ(describe_baseline_write("b/x.json", false, write), "created b/x.json (3 tests)");
}

}  // namespace
}  // namespace heapgate
