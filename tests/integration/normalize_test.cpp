// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// normalize_profile on the real frames of a real GoogleTest test's dump, and
// on hand-built profiles for merging, ordering and the unknown-frame names.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "test_support.h"

// Deliberately in namespace heapgate, as heapgate's own tests are: test code
// there must survive the dropping of heapgate's library frames.
namespace heapgate {
namespace {

int g_leak_line = 0;

void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

__attribute__((noinline)) void normalize_leak(std::vector<void*>& keep) {
  // clang-format off
  void* p = std::malloc(700); g_leak_line = __LINE__;  // NOLINT: one line, so __LINE__ is the call's
  // clang-format on
  escape(p);
  keep.push_back(p);
}

__attribute__((noinline)) void normalize_new(std::vector<int*>& keep) {
  int* p = new int[300];
  escape(p);
  keep.push_back(p);
}

__attribute__((noinline)) void normalize_vector(std::vector<std::vector<int>>& keep) {
  std::vector<int> v;
  for (int i = 0; i < 1000; ++i) v.push_back(i);
  keep.push_back(std::move(v));
}

__attribute__((noinline)) void normalize_through_heapgate(std::vector<std::string>& keep) {
  keep.push_back(write_profile(Profile{}));  // heapgate's library allocates the text
}

__attribute__((noinline)) void normalize_thread_leak(std::vector<void*>& keep) {
  void* p = std::malloc(900);
  escape(p);
  keep.push_back(p);
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

const NormalizedStack* find_stack(const NormalizedProfile& profile, std::string_view function) {
  for (const auto& s : profile.stacks) {
    for (const auto& f : s.frames) {
      if (contains(f, function)) return &s;
    }
  }
  return nullptr;
}

std::string describe(const NormalizedProfile& profile) {
  std::string out;
  for (const auto& s : profile.stacks) {
    out += "stack:\n";
    for (const auto& f : s.frames) out += "  " + f.str() + "\n";
  }
  return out;
}

TEST(Normalize, DropsFrameworkFramesOfARealTest) {
  HEAPGATE_REQUIRE_PROFILING();
  std::vector<void*> raw;
  raw.reserve(16);
  std::vector<int*> ints;
  ints.reserve(4);
  std::vector<std::vector<int>> vectors;
  vectors.reserve(4);
  std::vector<std::string> texts;
  texts.reserve(4);
  std::vector<void*> thread_keep;
  thread_keep.reserve(4);
  const std::string path = testing::make_temp_dir() + "/real_test.heap";
  {
    ProfileScope scope{"normalize", {Mode::exact, path}};
    normalize_leak(raw);
    normalize_new(ints);
    normalize_vector(vectors);
    normalize_through_heapgate(texts);
    std::thread worker([&] { normalize_thread_leak(thread_keep); });
    worker.join();
    auto result = scope.finish();
    ASSERT_TRUE(result) << result.error().message();
  }
  auto profile = read_profile(path);
  ASSERT_TRUE(profile) << profile.error().message();
  Symbolizer symbolizer;
  const NormalizedProfile normalized = normalize_profile(*profile, symbolizer);
  SCOPED_TRACE(describe(normalized));

  const std::string test_body =
      "heapgate::(anonymous namespace)::Normalize_DropsFrameworkFramesOfARealTest_Test::TestBody()";
  for (const auto& s : normalized.stacks) {
    ASSERT_FALSE(s.frames.empty());
    for (const auto& f : s.frames) {
      EXPECT_FALSE(starts_with(f, "testing::")) << f;
      EXPECT_FALSE(starts_with(f, "operator new")) << f;
      EXPECT_FALSE(starts_with(f, "malloc")) << f;
      EXPECT_FALSE(starts_with(f, "je_")) << f;
      EXPECT_FALSE(contains(f, "libjemalloc")) << f;
      EXPECT_FALSE(contains(f, "std::__new_allocator")) << f;
      EXPECT_FALSE(contains(f, "heapgate::write_profile")) << f;
      EXPECT_NE(f, "start_thread");
      EXPECT_FALSE(starts_with(f, "clone")) << f;
      EXPECT_FALSE(starts_with(f, "__clone")) << f;
      EXPECT_FALSE(starts_with(f, "std::thread::_State_impl")) << f;
      EXPECT_FALSE(starts_with(f, "std::__invoke")) << f;
      EXPECT_FALSE(contains(f, "execute_native_thread_routine")) << f;
      EXPECT_NE(f, "main");
      EXPECT_NE(f, "_start");
      EXPECT_FALSE(starts_with(f, "__libc_start")) << f;
    }
  }

  // malloc: exactly the test's function, then its TestBody.
  const NormalizedStack* leak = find_stack(normalized, "normalize_leak");
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(
      leak->frames,
      (std::vector<FrameName>{
          "heapgate::(anonymous namespace)::normalize_leak(std::vector<void*, std::allocator<void*> >&)", test_body}));
  EXPECT_EQ(leak->counts.live_objects, 1u);
  EXPECT_EQ(leak->counts.accum_objects, 1u);
  EXPECT_EQ(leak->scaled.live_bytes, static_cast<double>(leak->counts.live_bytes));

  // operator new[]: gone, the test's function is innermost.
  const NormalizedStack* news = find_stack(normalized, "normalize_new");
  ASSERT_NE(news, nullptr);
  EXPECT_EQ(news->frames.size(), 2u);
  EXPECT_TRUE(contains(news->frames.front(), "normalize_new(")) << news->frames.front();
  EXPECT_EQ(news->frames.back(), test_body);
  EXPECT_EQ(news->counts.live_bytes, 1280u);  // 1200 B in the 1280 B class

  // std::vector growth: allocator plumbing gone, the vector's own code stays.
  const NormalizedStack* vec = find_stack(normalized, "normalize_vector");
  ASSERT_NE(vec, nullptr);
  EXPECT_TRUE(starts_with(vec->frames.front(), "std::vector<int")) << vec->frames.front();
  EXPECT_EQ(vec->frames.back(), test_body);

  // Allocations inside heapgate's library count for the test code that called it.
  const NormalizedStack* via = find_stack(normalized, "normalize_through_heapgate");
  ASSERT_NE(via, nullptr);
  EXPECT_EQ(via->frames.back(), test_body);

  // A thread's stack ends at the code the thread ran.
  const NormalizedStack* thread = find_stack(normalized, "normalize_thread_leak");
  ASSERT_NE(thread, nullptr);
  EXPECT_TRUE(contains(thread->frames.front(), "normalize_thread_leak(")) << thread->frames.front();
  EXPECT_TRUE(contains(thread->frames.back(), "TestBody()::{lambda()}::operator()() const")) << thread->frames.back();
  EXPECT_EQ(thread->counts.live_objects, 1u);

  // Every main-thread stack ends at this test's TestBody.
  for (const auto& s : normalized.stacks) {
    if (&s == thread) continue;
    EXPECT_EQ(s.frames.back(), test_body);
  }

  // Keys with lines: the source position of each frame.
  NormalizeOptions with_lines;
  with_lines.with_lines = true;
  const NormalizedProfile lined = normalize_profile(*profile, symbolizer, with_lines);
  const NormalizedStack* lined_leak = find_stack(lined, "normalize_leak");
  ASSERT_NE(lined_leak, nullptr);
  EXPECT_TRUE(contains(lined_leak->frames.front(), " at normalize_test.cpp:" + std::to_string(g_leak_line)))
      << lined_leak->frames.front();

  // Extra drop patterns.
  NormalizeOptions drop;
  drop.drop_frames = {"normalize_leak"};
  const NormalizedProfile dropped = normalize_profile(*profile, symbolizer, drop);
  EXPECT_EQ(find_stack(dropped, "normalize_leak"), nullptr);

  for (void* p : raw) std::free(p);
  for (int* p : ints) delete[] p;
  for (void* p : thread_keep) std::free(p);
}

// A profile of made-up modules that do not exist on disk.
Profile fake_profile() {
  Profile p;
  p.sample_period = 1;
  p.mappings.push_back(Mapping{0x1000, 0x2000, "r-xp", 0, "fe:00", 11, "/nonexistent/heapgate/libjemalloc.so.2"});
  p.mappings.push_back(Mapping{0x10000, 0x20000, "r-xp", 0x3000, "fe:00", 12, "/nonexistent/heapgate/libapp.so"});
  auto record = [](std::vector<std::uint64_t> frames, Counts counts) {
    StackRecord r;
    r.frames = std::move(frames);
    r.counts = counts;
    return r;
  };
  // Two records that differ only in jemalloc's frames: one key.
  p.stacks.push_back(record({0x1100, 0x1200, 0x10100, 0x10200}, {1, 64, 2, 128}));
  p.stacks.push_back(record({0x1300, 0x1400, 0x10100, 0x10200}, {3, 192, 5, 320}));
  p.stacks.push_back(record({0x1100, 0x10500}, {0, 0, 1, 16}));
  p.stacks.push_back(record({0x1100, 0x1200}, {2, 32, 2, 32}));          // allocator frames only
  p.stacks.push_back(record({0x1100, 0x50000, 0x10200}, {1, 8, 1, 8}));  // 0x50000: in no mapping
  for (const auto& r : p.stacks) {
    p.totals.live_objects += r.counts.live_objects;
    p.totals.live_bytes += r.counts.live_bytes;
    p.totals.accum_objects += r.counts.accum_objects;
    p.totals.accum_bytes += r.counts.accum_bytes;
  }
  return p;
}

TEST(Normalize, MergesEqualKeysAndNamesUnknownFramesByModuleAndOffset) {
  Symbolizer symbolizer;
  const NormalizedProfile n = normalize_profile(fake_profile(), symbolizer);
  ASSERT_EQ(n.stacks.size(), 4u);
  // Sorted by key text; return addresses are looked up one byte back.
  EXPECT_EQ(n.stacks[0].frames, (std::vector<FrameName>{"0x4ffff", "libapp.so+0x31ff"}));
  EXPECT_EQ(n.stacks[1].frames, (std::vector<FrameName>{kAllocatorOnlyFrame}));
  EXPECT_EQ(n.stacks[2].frames, (std::vector<FrameName>{"libapp.so+0x30ff", "libapp.so+0x31ff"}));
  EXPECT_EQ(n.stacks[2].counts, (Counts{4, 256, 7, 448}));
  EXPECT_EQ(n.stacks[2].scaled.accum_bytes, 448.0);
  EXPECT_EQ(n.stacks[3].frames, (std::vector<FrameName>{"libapp.so+0x34ff"}));
  EXPECT_EQ(n.totals, fake_profile().totals);
  EXPECT_EQ(n.scaled_totals.live_bytes, 256.0 + 32 + 8);
  EXPECT_EQ(symbolizer.modules_loaded(), 0u);  // nothing to open
}

TEST(Normalize, IsDeterministicWhateverTheRecordOrder) {
  Profile forward = fake_profile();
  Profile backward = forward;
  std::reverse(backward.stacks.begin(), backward.stacks.end());
  Symbolizer symbolizer;
  const NormalizedProfile a = normalize_profile(forward, symbolizer);
  const NormalizedProfile b = normalize_profile(backward, symbolizer);
  ASSERT_EQ(a.stacks.size(), b.stacks.size());
  for (std::size_t i = 0; i < a.stacks.size(); ++i) {
    EXPECT_EQ(a.stacks[i].frames, b.stacks[i].frames);
    EXPECT_EQ(a.stacks[i].counts, b.stacks[i].counts);
  }
}

TEST(Normalize, UnsamplesSampledProfilesPerRecord) {
  Profile p = fake_profile();
  p.sample_period = 1 << 19;
  Symbolizer symbolizer;
  const NormalizedProfile n = normalize_profile(p, symbolizer);
  EXPECT_TRUE(n.sampled());
  const NormalizedStack& merged = n.stacks[2];
  const ScaledCounts first = unsample(p.stacks[0].counts, p.sample_period);
  const ScaledCounts second = unsample(p.stacks[1].counts, p.sample_period);
  EXPECT_DOUBLE_EQ(merged.scaled.live_bytes, first.live_bytes + second.live_bytes);
  EXPECT_GT(merged.scaled.live_bytes, 256.0);
  EXPECT_EQ(merged.counts.live_bytes, 256u);
}

TEST(Normalize, DropPatternsApplyToUnknownFramesToo) {
  NormalizeOptions options;
  options.drop_frames = {"libapp.so+0x31ff"};
  Symbolizer symbolizer;
  const NormalizedProfile n = normalize_profile(fake_profile(), symbolizer, options);
  for (const auto& s : n.stacks) {
    for (const auto& f : s.frames) EXPECT_NE(f, "libapp.so+0x31ff");
  }
}

// One ProfileNormalizer kept across profiles (the exact run that records
// every test's call sites) names each one as normalize_profile() does alone,
// whatever profiles it met before: its names and classes carry over, and
// each result is ordered by the names that profile uses.
TEST(Normalize, OneNormalizerAcrossProfilesNamesEachAsNormalizeProfileDoes) {
  HEAPGATE_REQUIRE_PROFILING();
  std::vector<void*> raw;
  raw.reserve(16);
  std::vector<int*> ints;
  ints.reserve(4);
  const std::string path = testing::make_temp_dir() + "/two.heap";
  {
    ProfileScope scope{"normalize", {Mode::exact, path}};
    normalize_leak(raw);
    normalize_new(ints);
    auto result = scope.finish();
    ASSERT_TRUE(result) << result.error().message();
  }
  const auto read = read_profile(path);
  ASSERT_TRUE(read) << read.error().message();
  const Profile& real = *read;
  const Profile fake = fake_profile();
  Symbolizer symbolizer;
  NormalizeOptions with_lines;
  with_lines.with_lines = true;
  ProfileNormalizer many(symbolizer, with_lines);
  for (const Profile* p : {&fake, &real, &fake, &real}) {
    const NormalizedProfile kept = many.normalize(*p);
    const NormalizedProfile alone = normalize_profile(*p, symbolizer, with_lines);
    ASSERT_EQ(kept.stacks.size(), alone.stacks.size());
    for (std::size_t i = 0; i < kept.stacks.size(); ++i) {
      EXPECT_EQ(kept.stacks[i].frames, alone.stacks[i].frames) << "stack " << i;
      EXPECT_EQ(kept.stacks[i].counts, alone.stacks[i].counts) << "stack " << i;
    }
  }
  for (void* p : raw) std::free(p);
  for (int* p : ints) delete[] p;
}

}  // namespace
}  // namespace heapgate
