// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The allocation hooks' block stamps (lib/measure/src/block_stamps.h) on
// their own: which stamp an address and a size find, and what a page that
// changes size class does to its run. The stamps are computed from address
// values alone, so the tests use made-up addresses in a region no real heap
// of this process touches, each test with its own BlockStamps.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "block_stamps.h"

namespace heapgate::detail {
namespace {

constexpr std::uintptr_t kPage = 4096;
// A page-aligned made-up address below 2^48.
constexpr std::uintptr_t kBase = std::uintptr_t{0x5a5a} << 32;

class BlockStampsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(stamps_.init()) << "no address space for the stamps' top level"; }
  BlockStamps stamps_;
};

TEST_F(BlockStampsTest, EveryGranuleOfAPageHasItsOwnStamp) {
  // Two neighbouring pages of 8-byte blocks, every stamp written with a value
  // of its own: a run one stamp too short would overwrite its neighbour's.
  std::vector<BlockStamps::Stamp*> seen;
  for (std::uintptr_t address = kBase; address < kBase + 2 * kPage; address += 8) {
    BlockStamps::Stamp* stamp = stamps_.find_or_add(address, 8);
    ASSERT_NE(stamp, nullptr) << std::hex << address;
    stamp->store(static_cast<std::uint32_t>(address - kBase + 1));
    seen.push_back(stamp);
  }
  for (std::uintptr_t address = kBase; address < kBase + 2 * kPage; address += 8) {
    BlockStamps::Stamp* stamp = stamps_.find(address, 8);
    ASSERT_EQ(stamp, seen[(address - kBase) / 8]) << std::hex << address;
    EXPECT_EQ(stamp->load(), address - kBase + 1) << std::hex << address;
  }
}

TEST_F(BlockStampsTest, GranulesGrowWithTheBlockUpToAPage) {
  // 48-byte blocks are stamped per 32 bytes: neighbours at 0, 48 and 96
  // fall in granules 0, 1 and 3.
  BlockStamps::Stamp* first = stamps_.find_or_add(kBase, 48);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(stamps_.find_or_add(kBase + 48, 48), first + 1);
  EXPECT_EQ(stamps_.find_or_add(kBase + 96, 48), first + 3);
  // Every block of a page or more is stamped per page.
  BlockStamps::Stamp* large = stamps_.find_or_add(kBase + kPage + 64, 1 << 20);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(stamps_.find(kBase + kPage + 64, 1 << 20), large);
  EXPECT_EQ(stamps_.find(kBase + kPage + 64, 4096), nullptr) << "one granule, another size";
  EXPECT_NE(stamps_.find_or_add(kBase + 2 * kPage + 64, 1 << 20), large);
}

TEST_F(BlockStampsTest, APagesEntryGivesTheStampAndTheSizeOfItsBlocks) {
  // A free that is not told the block's size finds both by the page.
  stamps_.find_or_add(kBase + 96, 48)->store(3);
  std::uint64_t usize = 0;
  BlockStamps::Stamp* stamp = stamps_.find_by_page(kBase + 96, &usize);
  ASSERT_NE(stamp, nullptr);
  EXPECT_EQ(usize, 48u);
  EXPECT_EQ(stamp->load(), 3u);
  EXPECT_EQ(stamps_.find_by_page(kBase + 5 * kPage, &usize), nullptr) << "a page nothing was stamped in";
  // Classes of one granule (80 and 96: 64 bytes) differ by their size now.
  stamps_.find_or_add(kBase + kPage, 80)->store(4);
  EXPECT_EQ(stamps_.find(kBase + kPage, 96), nullptr);
  ASSERT_NE(stamps_.find_by_page(kBase + kPage, &usize), nullptr);
  EXPECT_EQ(usize, 80u);
  // Large blocks in pages, up to 128 MiB; beyond, no stamp (the caller keeps a table).
  ASSERT_NE(stamps_.find_or_add(kBase + 2 * kPage, std::uint64_t{40} << 20), nullptr);
  ASSERT_NE(stamps_.find_by_page(kBase + 2 * kPage, &usize), nullptr);
  EXPECT_EQ(usize, std::uint64_t{40} << 20);
  EXPECT_EQ(stamps_.find_or_add(kBase + 3 * kPage, std::uint64_t{256} << 20), nullptr);
}

TEST_F(BlockStampsTest, ABlockOfAnotherSizeClassThanItsPageIsNotFound) {
  stamps_.find_or_add(kBase, 48)->store(5);
  EXPECT_EQ(stamps_.find(kBase, 80), nullptr) << "a 64-byte granule in a page of 32-byte ones";
  EXPECT_EQ(stamps_.find(kBase + kPage, 48), nullptr) << "a page nothing was stamped in";
  ASSERT_NE(stamps_.find(kBase, 48), nullptr);
  EXPECT_EQ(stamps_.find(kBase, 48)->load(), 5u);
}

TEST_F(BlockStampsTest, APageThatChangesSizeClassStartsAgainAndItsOldRunIsReused) {
  // Two pages of 8-byte blocks, every stamp set.
  for (std::uintptr_t address = kBase; address < kBase + 2 * kPage; address += 8) {
    stamps_.find_or_add(address, 8)->store(7);
  }
  // Both pages now hold a large block: their 8-byte stamps are gone.
  for (std::uintptr_t page = kBase; page < kBase + 2 * kPage; page += kPage) {
    BlockStamps::Stamp* large = stamps_.find_or_add(page, 1 << 16);
    ASSERT_NE(large, nullptr);
    EXPECT_EQ(large->load(), 0u);
    EXPECT_EQ(stamps_.find(page, 8), nullptr);
  }
  // The next page of 8-byte blocks gets a run one of them gave up. Its stale
  // stamps are harmless (older than any window), but the first ones held the
  // link to the other spare run, which must not be left to read as an epoch.
  BlockStamps::Stamp* reused = stamps_.find_or_add(kBase + 2 * kPage, 8);
  ASSERT_NE(reused, nullptr);
  EXPECT_EQ(reused[0].load(), 0u);
  EXPECT_EQ(reused[1].load(), 0u);
  EXPECT_EQ(reused[2].load(), 7u) << "expected a run the first pages gave up";
}

TEST_F(BlockStampsTest, AddressesBeyondTheRangeAreNotStamped) {
  EXPECT_EQ(stamps_.find_or_add(std::uintptr_t{1} << BlockStamps::kAddressBits, 8), nullptr);
  EXPECT_NE(stamps_.find_or_add((std::uintptr_t{1} << BlockStamps::kAddressBits) - 8, 8), nullptr);
}

TEST_F(BlockStampsTest, ClearForgetsEveryStamp) {
  stamps_.find_or_add(kBase, 8)->store(9);
  stamps_.clear();
  EXPECT_EQ(stamps_.find(kBase, 8), nullptr);
  ASSERT_NE(stamps_.find_or_add(kBase, 8), nullptr);
  EXPECT_EQ(stamps_.find_or_add(kBase, 8)->load(), 0u);
}

TEST_F(BlockStampsTest, ThreadsRacingForAPageAgreeOnItsRun) {
  // Each thread asks for the same fresh pages in the same order; every page
  // must end with one run, the one every thread was given.
  constexpr int kThreads = 4;
  constexpr std::uintptr_t kPages = 2000;
  std::vector<std::vector<BlockStamps::Stamp*>> found(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (std::uintptr_t page = 0; page < kPages; ++page) {
        found[t].push_back(stamps_.find_or_add(kBase + page * kPage + 16, 16));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::uintptr_t page = 0; page < kPages; ++page) {
    BlockStamps::Stamp* now = stamps_.find(kBase + page * kPage + 16, 16);
    ASSERT_NE(now, nullptr);
    for (int t = 0; t < kThreads; ++t) ASSERT_EQ(found[t][page], now) << "page " << page << ", thread " << t;
  }
}

}  // namespace
}  // namespace heapgate::detail
