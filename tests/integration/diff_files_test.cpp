// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate diff`'s lean path (diff_profile_files, read_profile_records) gives
// what the model path gives: the same records, the same errors, the same
// ProfileDiff field for field, on real dumps of many distinct stacks
// (many_stacks_profile, built from bench/profile_gen.cpp) and on the fixtures.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/diff.h"
#include "heapgate/diff_files.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/profile_records.h"
#include "heapgate/symbols_sidecar.h"
#include "heapgate/symbolizer.h"
#include "heapgate/sys.h"
#include "test_support.h"
#include "workload_runner.h"

namespace heapgate {
namespace {

constexpr std::size_t kAllStacks = std::numeric_limits<std::size_t>::max();

// The model path: what `heapgate diff` computed before diff_profile_files.
ProfileDiff reference_diff(const std::string& base_path, const std::string& current_path) {
  Symbolizer symbolizer;
  auto base = read_profile(base_path);
  auto current = read_profile(current_path);
  EXPECT_TRUE(base.has_value()) << base_path;
  EXPECT_TRUE(current.has_value()) << current_path;
  if (!base || !current) return {};
  return diff_profiles(normalize_profile(*base, symbolizer), normalize_profile(*current, symbolizer));
}

void expect_same_counts(const ScaledCounts& a, const ScaledCounts& b, const std::string& what) {
  EXPECT_EQ(a.live_objects, b.live_objects) << what;
  EXPECT_EQ(a.live_bytes, b.live_bytes) << what;
  EXPECT_EQ(a.accum_objects, b.accum_objects) << what;
  EXPECT_EQ(a.accum_bytes, b.accum_bytes) << what;
}

// Field for field, then the text a user reads.
void expect_same_diff(const std::string& base_path, const std::string& current_path) {
  SCOPED_TRACE(base_path + " -> " + current_path);
  const ProfileDiff expected = reference_diff(base_path, current_path);
  Symbolizer symbolizer;
  auto got = diff_profile_files(base_path, current_path, symbolizer);
  ASSERT_TRUE(got.has_value()) << got.error().message();
  EXPECT_EQ(got->estimated, expected.estimated);
  EXPECT_EQ(got->unchanged_stacks, expected.unchanged_stacks);
  expect_same_counts(got->base_totals, expected.base_totals, "base totals");
  expect_same_counts(got->current_totals, expected.current_totals, "current totals");
  expect_same_counts(got->delta_totals, expected.delta_totals, "delta totals");
  ASSERT_EQ(got->entries.size(), expected.entries.size());
  for (std::size_t i = 0; i < expected.entries.size(); ++i) {
    const std::string what = "entry " + std::to_string(i);
    EXPECT_EQ(got->entries[i].frames, expected.entries[i].frames) << what;
    expect_same_counts(got->entries[i].base, expected.entries[i].base, what);
    expect_same_counts(got->entries[i].current, expected.entries[i].current, what);
    expect_same_counts(got->entries[i].delta, expected.entries[i].delta, what);
  }
  EXPECT_EQ(render_diff_text(*got, kAllStacks), render_diff_text(expected, kAllStacks));
}

// Dumps of many_stacks_profile: stacks 0..n-1 of its binary descent, plus `extra` allocations elsewhere.
std::string many_stacks(const std::string& dir, const std::string& name, int stacks, int extra) {
  const std::string path = dir + "/" + name;
  const Profile profile = testing::run_dumping_helper(
      "many_stacks_profile", path, {"--stacks", std::to_string(stacks), "--extra", std::to_string(extra)});
  EXPECT_GE(profile.stacks.size(), static_cast<std::size_t>(stacks));
  return path;
}

class DiffFiles : public ::testing::Test {
 protected:
  void SetUp() override { HEAPGATE_REQUIRE_PROFILING(); }
};

TEST_F(DiffFiles, SameDiffAsTheModelPathAcrossProcesses) {
  const std::string dir = testing::make_temp_dir();
  const std::string small = many_stacks(dir, "small.heap", 300, 0);
  const std::string large = many_stacks(dir, "large.heap", 700, 40);
  const std::string again = many_stacks(dir, "again.heap", 700, 40);
  // New stacks, vanished stacks, stacks whose counts changed, and none at all.
  expect_same_diff(small, large);
  expect_same_diff(large, small);
  expect_same_diff(large, again);
  expect_same_diff(small, small);

  Symbolizer symbolizer;
  auto grown = diff_profile_files(small, large, symbolizer);
  ASSERT_TRUE(grown.has_value());
  // Stacks 300..699 are new and keep every other block: the diff must see them.
  EXPECT_GE(grown->entries.size(), 400u);
  EXPECT_EQ(grown->delta_totals.live_objects, 200.0);
}

// A base read through its sidecar must not lend its names to a current
// without one, even at the very same addresses (a copy of the same dump).
TEST_F(DiffFiles, EachSideIsReadThroughItsOwnSidecar) {
  const std::string dir = testing::make_temp_dir();
  const std::string base = many_stacks(dir, "base.heap", 64, 0);
  const std::string current = dir + "/current.heap";
  std::filesystem::copy_file(base, current);
  {
    auto profile = read_profile(base);
    ASSERT_TRUE(profile.has_value());
    Symbolizer symbolizer;
    ASSERT_TRUE(write_symbols_sidecar(base, *profile, symbolizer).has_value());
  }
  auto sidecar = sys::read_file(symbols_sidecar_path(base));
  ASSERT_TRUE(sidecar.has_value());
  std::string renamed = *sidecar;
  std::size_t replaced = 0;
  for (std::size_t at = renamed.find("::left("); at != std::string::npos; at = renamed.find("::left(", at)) {
    renamed.replace(at, 7, "::renamed_left(");
    at += 15;
    ++replaced;
  }
  ASSERT_GT(replaced, 0u);
  ASSERT_TRUE(sys::write_file_atomic(symbols_sidecar_path(base), renamed).has_value());

  Symbolizer symbolizer;
  auto diff = diff_profile_files(base, current, symbolizer);
  ASSERT_TRUE(diff.has_value()) << diff.error().message();
  bool base_renamed = false;
  bool current_from_disk = false;
  for (const StackDelta& e : diff->entries) {
    for (const FrameName& f : e.frames) {
      if (f.view().find("::renamed_left(") != std::string_view::npos && e.current.accum_objects == 0)
        base_renamed = true;
      if (f.view().find("::left(") != std::string_view::npos && e.base.accum_objects == 0) current_from_disk = true;
    }
  }
  EXPECT_TRUE(base_renamed) << render_diff_text(*diff, kAllStacks);
  EXPECT_TRUE(current_from_disk) << render_diff_text(*diff, kAllStacks);
}

TEST(DiffFilesFixtures, SameDiffAsTheModelPathOnFixtures) {
  const std::vector<std::string> fixtures = {"profiles/period1.heap", "profiles/sampled.heap",
                                             "profiles/thread_names.heap", "profiles/workload_recorded.heap",
                                             "profiles/no_maps.heap"};
  for (const std::string& base : fixtures) {
    for (const std::string& current : fixtures) {
      expect_same_diff(testing::data_path(base), testing::data_path(current));
    }
  }
}

TEST(DiffFilesFixtures, ErrorsNameTheFileThatFailed) {
  Symbolizer symbolizer;
  const std::string good = testing::data_path("profiles/period1.heap");
  const std::string bad = testing::data_path("profiles/malformed/bad_frame.heap");
  auto in_current = diff_profile_files(good, bad, symbolizer);
  ASSERT_FALSE(in_current.has_value());
  EXPECT_EQ(in_current.error().message(), read_profile(bad).error().message());
  auto in_base = diff_profile_files(bad, testing::data_path("profiles/malformed/empty.heap"), symbolizer);
  ASSERT_FALSE(in_base.has_value());
  EXPECT_EQ(in_base.error().message(), read_profile(bad).error().message());
}

// read_profile_records hands over exactly the records read_profile keeps, and
// everything else read_profile returns.
void expect_same_records(const std::string& path) {
  SCOPED_TRACE(path);
  auto whole = read_profile(path);
  std::vector<StackRecord> seen;
  auto rest = read_profile_records(path, [&](const StackRecord& record) { seen.push_back(record); });
  ASSERT_EQ(whole.has_value(), rest.has_value());
  if (!whole) {
    EXPECT_EQ(rest.error().message(), whole.error().message());
    // The records before the bad line were handed over.
    return;
  }
  EXPECT_TRUE(rest->stacks.empty());
  EXPECT_EQ(seen, whole->stacks);
  rest->stacks = whole->stacks;
  EXPECT_EQ(*rest, *whole);
}

TEST(ProfileRecords, SameRecordsAndErrorsAsReadProfile) {
  std::size_t files = 0;
  for (const char* dir : {"profiles", "profiles/malformed"}) {
    for (const auto& entry : std::filesystem::directory_iterator(testing::data_path(dir))) {
      if (entry.path().extension() != ".heap") continue;
      expect_same_records(entry.path().string());
      ++files;
    }
  }
  EXPECT_GE(files, 20u);
}

TEST_F(DiffFiles, LargeDumpRoundTripsAndStreamsTheSameRecords) {
  const std::string dir = testing::make_temp_dir();
  const std::string path = many_stacks(dir, "big.heap", 3000, 5);
  auto text = sys::read_file(path, sys::kProfileSizeLimit);
  ASSERT_TRUE(text.has_value());
  auto profile = read_profile(path);
  ASSERT_TRUE(profile.has_value()) << profile.error().message();
  // Every frame of every record read back as jemalloc wrote it.
  EXPECT_EQ(write_profile(*profile), *text);
  expect_same_records(path);
}

}  // namespace
}  // namespace heapgate
