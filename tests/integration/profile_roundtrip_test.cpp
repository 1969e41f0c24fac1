// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The parser and writer on dumps this process makes itself: exact mode,
// several named threads, a MAPPED_LIBRARIES section from the live process.
#include <algorithm>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/allocator.h"
#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "heapgate/sys.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

constexpr int kThreads = 3;
constexpr std::size_t kPerThread = 100;
constexpr std::size_t kThreadBlock = 256;
constexpr std::size_t kMainBlocks = 5;
constexpr std::size_t kMainBlock = 4096;
constexpr std::size_t kFreedBlocks = 40;
constexpr std::size_t kFreedBlock = 64;

// Threads started before the scope and parked; inside it each names itself
// (thread.prof.name, the name jemalloc writes on its header line) and allocates.
class NamedWorkers {
 public:
  NamedWorkers() : blocks_(kThreads) {
    for (auto& b : blocks_) b.reserve(kPerThread);
    for (int t = 0; t < kThreads; ++t) {
      threads_.emplace_back([this, t] {
        while (!go_.load(std::memory_order_acquire)) std::this_thread::yield();
        if (!quit_.load()) {
          char name[32];  // not a std::string: its allocation would count too
          std::snprintf(name, sizeof name, "heapgate worker %d", t);
          named_ += jemalloc::write<const char*>("thread.prof.name", name) ? 1 : 0;
          testing::allocate_blocks(blocks_[static_cast<std::size_t>(t)], kPerThread, kThreadBlock);
        }
        done_.fetch_add(1, std::memory_order_release);
        // Stay alive until the dump: a live thread's tdata is always written.
        while (!quit_.load(std::memory_order_acquire)) std::this_thread::yield();
      });
    }
  }
  void run() {
    go_.store(true, std::memory_order_release);
    while (done_.load(std::memory_order_acquire) != kThreads) std::this_thread::yield();
  }
  int named() const { return named_.load(); }
  ~NamedWorkers() {
    quit_.store(true);
    go_.store(true);
    for (auto& t : threads_) t.join();
    for (auto& b : blocks_) testing::free_blocks(b);
  }

 private:
  std::vector<std::vector<void*>> blocks_;
  std::vector<std::thread> threads_;
  std::atomic<bool> go_{false};
  std::atomic<bool> quit_{false};
  std::atomic<int> done_{0};
  std::atomic<int> named_{0};
};

struct Dump {
  ScopeResult result;
  std::string text;
};

Dump make_dump(const std::string& path) {
  NamedWorkers workers;
  std::vector<void*> keep;
  keep.reserve(kMainBlocks);
  std::vector<void*> temp;
  temp.reserve(kFreedBlocks);
  Dump dump;
  {
    // jemalloc's own dump, with its per-thread lines and thread names (the
    // hooks' recording writes neither).
    ::setenv("HEAPGATE_EXACT_STACKS", "jemalloc", 1);
    ProfileScope scope{"roundtrip", {Mode::exact, path}};
    ::unsetenv("HEAPGATE_EXACT_STACKS");
    workers.run();
    testing::allocate_blocks(keep, kMainBlocks, kMainBlock);
    testing::allocate_blocks(temp, kFreedBlocks, kFreedBlock);
    testing::free_blocks(temp);
    auto r = scope.finish();
    EXPECT_TRUE(r) << r.error().message();
    if (r) dump.result = *r;
  }
  EXPECT_EQ(workers.named(), kThreads);
  testing::free_blocks(keep);
  auto text = sys::read_file(path);
  EXPECT_TRUE(text) << text.error().message();
  if (text) dump.text = *text;
  return dump;
}

Counts add(Counts a, const Counts& b) {
  a.live_objects += b.live_objects;
  a.live_bytes += b.live_bytes;
  a.accum_objects += b.accum_objects;
  a.accum_bytes += b.accum_bytes;
  return a;
}

TEST(ProfileRoundTrip, OwnMultiThreadDumpParsesAndRoundTrips) {
  HEAPGATE_REQUIRE_PROFILING();
  const std::string path = testing::make_temp_dir() + "/own.heap";
  Dump dump = make_dump(path);
  ASSERT_FALSE(dump.text.empty());

  auto parsed = parse_profile(dump.text, path);
  ASSERT_TRUE(parsed) << parsed.error().message();
  const Profile& p = *parsed;

  // The totals are what the scope measured, and what the workload did.
  const std::uint64_t allocations = kThreads * kPerThread + kMainBlocks + kFreedBlocks;
  const std::uint64_t allocated =
      kThreads * kPerThread * kThreadBlock + kMainBlocks * kMainBlock + kFreedBlocks * kFreedBlock;
  const std::uint64_t live = kThreads * kPerThread + kMainBlocks;
  const std::uint64_t live_bytes = kThreads * kPerThread * kThreadBlock + kMainBlocks * kMainBlock;
  EXPECT_EQ(p.sample_period, 1u);
  EXPECT_EQ(p.totals, (Counts{live, live_bytes, allocations, allocated}));
  EXPECT_EQ(p.totals.accum_objects, dump.result.allocations);
  EXPECT_EQ(p.totals.accum_bytes, dump.result.allocated_bytes);
  EXPECT_EQ(p.totals.live_objects, dump.result.live_allocations);
  EXPECT_EQ(p.totals.live_bytes, dump.result.live_bytes);

  // Records add up to the totals, and each record's thread lines to the record.
  Counts records;
  for (const auto& s : p.stacks) {
    EXPECT_FALSE(s.frames.empty());
    EXPECT_LE(s.frames.size(), kMaxProfileFrames);
    records = add(records, s.counts);
    Counts threads;
    for (const auto& t : s.threads) threads = add(threads, t.counts);
    EXPECT_EQ(threads, s.counts);
  }
  EXPECT_EQ(records, p.totals);

  // Header thread lines: every worker under its name, with exactly its allocations.
  Counts header_threads;
  for (const auto& t : p.threads) header_threads = add(header_threads, t.counts);
  EXPECT_EQ(header_threads, p.totals);
  for (int w = 0; w < kThreads; ++w) {
    const std::string name = "heapgate worker " + std::to_string(w);
    auto it = std::find_if(p.threads.begin(), p.threads.end(),
                           [&](const ThreadCounts& t) { return t.name == std::optional<std::string>(name); });
    ASSERT_NE(it, p.threads.end()) << name << " missing from:\n" << dump.text.substr(0, 600);
    EXPECT_EQ(it->counts, (Counts{kPerThread, kPerThread * kThreadBlock, kPerThread, kPerThread * kThreadBlock}));
  }

  // MAPPED_LIBRARIES is this process' maps, ours included, in address order.
  ASSERT_FALSE(p.mappings.empty());
  auto self = sys::self_exe_path();
  ASSERT_TRUE(self);
  EXPECT_TRUE(std::any_of(p.mappings.begin(), p.mappings.end(),
                          [&](const Mapping& m) { return m.path == *self && m.executable(); }));
  for (std::size_t i = 1; i < p.mappings.size(); ++i) EXPECT_LE(p.mappings[i - 1].end, p.mappings[i].start);
  // The workload's frames lie in mapped code.
  std::size_t mapped = 0;
  std::size_t frames = 0;
  for (const auto& s : p.stacks) {
    for (std::uint64_t f : s.frames) {
      ++frames;
      mapped += p.find_mapping(f) != nullptr ? 1 : 0;
    }
  }
  EXPECT_EQ(mapped, frames);

  // write(parse(t)) == t byte for byte, and parse(write(p)) == p.
  EXPECT_EQ(write_profile(p), dump.text);
  auto again = parse_profile(write_profile(p));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(*again, p);
}

TEST(ProfileRoundTrip, EveryTruncationOfOwnDumpIsAProfileOrAnError) {
  HEAPGATE_REQUIRE_PROFILING();
  const std::string path = testing::make_temp_dir() + "/cut.heap";
  Dump dump = make_dump(path);
  ASSERT_GT(dump.text.size(), 500u);
  for (std::size_t n = 0; n < dump.text.size(); ++n) {
    std::string_view prefix(dump.text.data(), n);
    auto p = parse_profile(prefix, path);
    if (p) {
      ASSERT_EQ(write_profile(*p), prefix) << n;
      continue;
    }
    ASSERT_EQ(p.error().code, ErrorCode::parse_error) << p.error().message();
    ASSERT_EQ(p.error().where.rfind(path + ":", 0), 0u) << p.error().message();
  }
}

}  // namespace
}  // namespace heapgate
