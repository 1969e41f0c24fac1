// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// pprof export read back with the protobuf library: profiles of the
// heap_workload child program (known allocations), their diff, the allocator
// frames dropped, and the CLI verbs that write pprof files. `pprof -top` runs
// too when a pprof binary is on PATH.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/allocator_frames.h"
#include "heapgate/diff.h"
#include "heapgate/normalize.h"
#include "heapgate/pprof.h"
#include "heapgate/report.h"
#include "heapgate/symbolizer.h"
#include "heapgate/sys.h"
#include "gunzip_test_support.h"
#include "profile.pb.h"
#include "test_support.h"
#include "workload_runner.h"

namespace heapgate {
namespace {

namespace pb = perftools::profiles;
using testing::gunzip;

pb::Profile parsed(const std::string& gz) {
  pb::Profile profile;
  EXPECT_TRUE(profile.ParseFromString(gunzip(gz))) << "not a profile.proto message";
  return profile;
}

std::vector<std::string> sample_types(const pb::Profile& p) {
  std::vector<std::string> out;
  for (const auto& t : p.sample_type()) out.push_back(p.string_table(t.type()) + "/" + p.string_table(t.unit()));
  return out;
}

// The innermost function name of each sample, with the sample's values summed.
std::map<std::string, std::vector<std::int64_t>> by_leaf(const pb::Profile& p) {
  std::map<std::uint64_t, const pb::Location*> locations;
  for (const auto& l : p.location()) locations[l.id()] = &l;
  std::map<std::uint64_t, std::string> functions;
  for (const auto& f : p.function()) functions[f.id()] = p.string_table(f.name());
  std::map<std::string, std::vector<std::int64_t>> out;
  for (const auto& s : p.sample()) {
    if (s.location_id_size() == 0) continue;
    const pb::Location* leaf = locations.at(s.location_id(0));
    if (leaf->line_size() == 0) continue;
    std::string name = functions.at(leaf->line(0).function_id());
    auto& values = out[name];
    values.resize(static_cast<std::size_t>(s.value_size()));
    for (int i = 0; i < s.value_size(); ++i) values[static_cast<std::size_t>(i)] += s.value(i);
  }
  return out;
}

const std::vector<std::int64_t>* leaf_named(const std::map<std::string, std::vector<std::int64_t>>& leaves,
                                            std::string_view part) {
  for (const auto& [name, values] : leaves) {
    if (name.find(part) != std::string::npos) return &values;
  }
  return nullptr;
}

// The pprof binary, when there is one (Debian ships pprof only as Go sources).
void run_pprof_top(const std::string& file, const std::string& expected) {
  auto pprof = sys::find_program("pprof");
  if (!pprof) {
    std::printf("[ SKIPPED  ] pprof -top: no pprof binary on PATH (the file was checked with libprotobuf only)\n");
    return;
  }
  sys::ProcessOptions options;
  options.timeout = std::chrono::seconds(60);
  auto run = sys::run_process({*pprof, "-top", file}, options);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 0) << run->stderr_text;
  EXPECT_NE(run->stdout_text.find(expected), std::string::npos) << run->stdout_text;
}

class PprofExport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pprof_supported()) GTEST_SKIP() << "built with HEAPGATE_PPROF=OFF";
    HEAPGATE_REQUIRE_PROFILING();
    dir_ = testing::make_temp_dir();
  }
  std::string dir_;
};

TEST_F(PprofExport, ProfileHasHeapSampleTypesAndTheWorkloadsValues) {
  const Profile profile = testing::run_heap_workload(dir_, "p.heap", 0, 5);
  ASSERT_FALSE(profile.stacks.empty());
  Symbolizer symbols;
  PprofOptions options;
  options.comment = "from heap_workload";
  auto bytes = to_pprof(profile, symbols, options);
  ASSERT_TRUE(bytes) << bytes.error().message();
  ASSERT_GE(bytes->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[1]), 0x8b);
  pb::Profile p = parsed(*bytes);
  ASSERT_GT(p.string_table_size(), 0);
  EXPECT_EQ(p.string_table(0), "");
  // heap_workload runs with prof_accum: all four types.
  EXPECT_EQ(sample_types(p), (std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes",
                                                       "inuse_objects/count", "inuse_space/bytes"}));
  EXPECT_EQ(p.string_table(p.default_sample_type()), "inuse_space");
  EXPECT_EQ(p.period(), 1);
  ASSERT_EQ(p.comment_size(), 1);
  EXPECT_EQ(p.string_table(p.comment(0)), "from heap_workload");
  // Allocator frames dropped: the leaves are the workload's functions.
  auto leaves = by_leaf(p);
  const auto* leak = leaf_named(leaves, "injected_leak");
  ASSERT_NE(leak, nullptr) << "no sample ends in injected_leak";
  EXPECT_EQ((*leak)[2], 5);       // inuse_objects: 5 blocks
  EXPECT_EQ((*leak)[3], 5 * 96);  // inuse_space: 96 B each
  const auto* steady = leaf_named(leaves, "steady_work");
  ASSERT_NE(steady, nullptr);
  EXPECT_EQ((*steady)[0], 210);    // alloc_objects: 200 freed + 10 kept
  EXPECT_EQ((*steady)[2], 10);     // inuse_objects
  EXPECT_EQ((*steady)[3], 10240);  // inuse_space
  for (const auto& [name, values] : leaves) {
    EXPECT_EQ(name.find("malloc"), std::string::npos) << "an allocator frame is a leaf: " << name;
  }
  // Mappings from the profile's maps, with file names and line numbers.
  ASSERT_GT(p.mapping_size(), 0);
  bool workload_mapped = false;
  for (const auto& m : p.mapping()) {
    EXPECT_NE(m.id(), 0u);
    EXPECT_LT(m.memory_start(), m.memory_limit());
    if (p.string_table(m.filename()).find("heap_workload") != std::string::npos) {
      workload_mapped = true;
      EXPECT_TRUE(m.has_functions());
      EXPECT_TRUE(m.has_line_numbers());
    }
  }
  EXPECT_TRUE(workload_mapped);
  bool source_line = false;
  for (const auto& f : p.function()) {
    if (p.string_table(f.name()).find("injected_leak") != std::string::npos) {
      source_line = p.string_table(f.filename()).find("heap_workload.cpp") != std::string::npos;
    }
  }
  EXPECT_TRUE(source_line) << "injected_leak's Function names its source file";
  for (const auto& l : p.location()) {
    EXPECT_NE(l.id(), 0u);
    EXPECT_GT(l.line_size(), 0) << "every location carries a function";
  }
  const std::string file = dir_ + "/p.pb.gz";
  ASSERT_TRUE(sys::write_file_atomic(file, *bytes));
  run_pprof_top(file, "injected_leak");
}

TEST_F(PprofExport, KeepingAllocatorFramesPutsThemAtTheLeaves) {
  const Profile profile = testing::run_heap_workload(dir_, "p.heap", 0, 5);
  Symbolizer symbols;
  PprofOptions options;
  options.drop_allocator_frames = false;
  auto bytes = to_pprof(profile, symbols, options);
  ASSERT_TRUE(bytes) << bytes.error().message();
  auto leaves = by_leaf(parsed(*bytes));
  EXPECT_EQ(leaf_named(leaves, "injected_leak"), nullptr) << "with allocator frames, malloc is the leaf";
}

TEST_F(PprofExport, WithoutAllocatorFramesStartsAtTheCaller) {
  const Profile profile = testing::run_heap_workload(dir_, "p.heap", 0, 5);
  Symbolizer symbols;
  AllocatorFramesDropped dropped;
  Profile trimmed = without_allocator_frames(profile, symbols, &dropped);
  EXPECT_GT(dropped.frames, 0u);
  EXPECT_EQ(trimmed.totals, profile.totals);
  EXPECT_EQ(trimmed.maps_text, profile.maps_text);
  std::uint64_t live_before = 0;
  std::uint64_t live_after = 0;
  for (const auto& r : profile.stacks) live_before += r.counts.live_bytes;
  for (const auto& r : trimmed.stacks) live_after += r.counts.live_bytes;
  EXPECT_EQ(live_after, live_before) << "merging records keeps every byte";
  bool found = false;
  for (const auto& record : trimmed.stacks) {
    const Location& leaf = symbols.symbolize(trimmed, record.frames.front(), AddressKind::exact);
    if (!leaf.known()) continue;
    if (leaf.frames.back().function.find("injected_leak") != std::string_view::npos) found = true;
    EXPECT_EQ(leaf.frames.back().function.find("malloc"), std::string_view::npos) << leaf.frames.back().function;
  }
  EXPECT_TRUE(found);
}

TEST_F(PprofExport, DiffHoldsSignedDeltas) {
  const Profile base_profile = testing::run_heap_workload(dir_, "base.heap", 0, 5);
  const Profile current_profile = testing::run_heap_workload(dir_, "current.heap", 0, 2);
  Symbolizer symbols;
  ProfileDiff diff =
      diff_profiles(normalize_profile(base_profile, symbols), normalize_profile(current_profile, symbols));
  auto bytes = to_pprof(diff, "base -> current");
  ASSERT_TRUE(bytes) << bytes.error().message();
  pb::Profile p = parsed(*bytes);
  EXPECT_EQ(p.string_table(0), "");
  EXPECT_EQ(sample_types(p), (std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes",
                                                       "inuse_objects/count", "inuse_space/bytes"}));
  auto leaves = by_leaf(p);
  const auto* leak = leaf_named(leaves, "injected_leak");
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ((*leak)[2], -3);       // 3 blocks fewer
  EXPECT_EQ((*leak)[3], -3 * 96);  // negative: pprof allows it
  EXPECT_EQ(leaf_named(leaves, "steady_work"), nullptr) << "unchanged stacks are not in a diff";
}

// --- the CLI ---------------------------------------------------------------

sys::ProcessResult cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv{HEAPGATE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.timeout = std::chrono::seconds(120);
  auto run = sys::run_process(argv, options);
  EXPECT_TRUE(run) << run.error().message();
  return run ? *run : sys::ProcessResult{};
}

std::string slurp(const std::string& path) {
  auto text = sys::read_file(path);
  EXPECT_TRUE(text) << path;
  return text ? *text : std::string();
}

TEST_F(PprofExport, CliDiffFormatPprof) {
  testing::run_heap_workload(dir_, "base.heap", 0, 0);
  testing::run_heap_workload(dir_, "current.heap", 0, 4);
  const std::string out = dir_ + "/diff.pb.gz";
  auto run = cli({"diff", "--format", "pprof", "-o", out, dir_ + "/base.heap", dir_ + "/current.heap"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  auto leaves = by_leaf(parsed(slurp(out)));
  const auto* leak = leaf_named(leaves, "injected_leak");
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ((*leak)[3], 4 * 96);
  run_pprof_top(out, "injected_leak");

  // Binary output needs a file.
  auto no_output = cli({"diff", "--format", "pprof", dir_ + "/base.heap", dir_ + "/current.heap"});
  EXPECT_EQ(no_output.exit_code, 2);
  EXPECT_NE(no_output.stderr_text.find("fix: add -o FILE.pb.gz"), std::string::npos) << no_output.stderr_text;
}

TEST_F(PprofExport, CliReportWritesFailingTestsProfiles) {
  testing::run_heap_workload(dir_, "Cache.Leaks.heap", 0, 3);
  testing::run_heap_workload(dir_, "Cache.Fine.heap", 0, 0);
  Report report;
  report.run.binary = "cache_test";
  TestRecord failing;
  failing.name = "Cache.Leaks";
  failing.suite = "Cache";
  failing.test = "Leaks";
  failing.verdict = Verdict::leaked;
  failing.profiles = {"Cache.Leaks.heap"};  // relative: found beside the report
  TestRecord passing = failing;
  passing.name = "Cache.Fine";
  passing.test = "Fine";
  passing.verdict = Verdict::pass;
  passing.profiles = {"Cache.Fine.heap"};
  report.tests = {failing, passing};
  ASSERT_TRUE(write_report(dir_ + "/report.json", report));
  const std::string out = dir_ + "/pprof";
  auto run = cli({"report", dir_ + "/report.json", "--pprof", out});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_TRUE(std::filesystem::exists(out + "/Cache.Leaks.pb.gz"));
  EXPECT_FALSE(std::filesystem::exists(out + "/Cache.Fine.pb.gz")) << "only failing tests";
  pb::Profile p = parsed(slurp(out + "/Cache.Leaks.pb.gz"));
  ASSERT_EQ(p.comment_size(), 1);
  EXPECT_NE(p.string_table(p.comment(0)).find("Cache.Leaks (leaked)"), std::string::npos);
  const auto* leak = leaf_named(by_leaf(p), "injected_leak");
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ((*leak)[3], 3 * 96);

  // With an action, both: the markdown on stdout and the files.
  auto both = cli({"report", "markdown", dir_ + "/report.json", "--pprof", dir_ + "/pprof2"});
  ASSERT_EQ(both.exit_code, 0) << both.stderr_text;
  EXPECT_NE(both.stdout_text.find("Cache.Leaks"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/pprof2/Cache.Leaks.pb.gz"));

  // A profile that is gone: one line naming it, exit 2.
  std::filesystem::remove(dir_ + "/Cache.Leaks.heap");
  auto missing = cli({"report", dir_ + "/report.json", "--pprof", dir_ + "/pprof3"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("Cache.Leaks.heap"), std::string::npos) << missing.stderr_text;
}

}  // namespace
}  // namespace heapgate
