// SPDX-License-Identifier: MIT
// Linked with heapgate::gtest_main: every test is gated on its allocations.
#include <gtest/gtest.h>

#include "wordcount.h"

namespace {

const std::string kText = "the quick brown fox jumps over the lazy dog while the cat watches the fox and the dog sleep";

TEST(SplitWords, KeepsOrderAndDropsEmptyWords) {
  const std::vector<std::string> words = wordcount::split_words("  alpha  beta gamma ");
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0], "alpha");
  EXPECT_EQ(words[2], "gamma");
}

TEST(SplitWords, LongText) { EXPECT_EQ(wordcount::split_words(kText).size(), 19u); }

TEST(CountWords, CountsRepeatedWords) {
  const std::map<std::string, int> counts = wordcount::count_words(kText);
  EXPECT_EQ(counts.at("the"), 5);
  EXPECT_EQ(counts.at("fox"), 2);
}

// Four workers share the lines: how many map nodes each makes depends on
// which lines it took, so the allocation count varies from run to run. The
// gate learns that spread when it records the baseline.
TEST(CountWordsParallel, MatchesTheSerialCount) {
  std::vector<std::string> lines;
  for (int i = 0; i < 64; ++i) lines.push_back(kText + " line" + std::to_string(i % 16));
  const std::map<std::string, int> counts = wordcount::count_words_parallel(lines, 4);
  EXPECT_EQ(counts.at("the"), 5 * 64);
  EXPECT_EQ(counts.at("line3"), 4);
}

}  // namespace
