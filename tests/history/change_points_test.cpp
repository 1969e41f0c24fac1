// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// find_change_points(): planted steps are found at their commit; noise
// within a band and outliers that come back are not steps.
#include <random>

#include <gtest/gtest.h>

#include "heapgate/change_points.h"

namespace heapgate {
namespace {

std::vector<SeriesValue> exact(const std::vector<std::uint64_t>& values) {
  std::vector<SeriesValue> series;
  for (std::uint64_t v : values) series.push_back(SeriesValue{v, 0});
  return series;
}

// `n` values drawn uniformly from [level, level + spread], each carrying its band's spread.
void noisy(std::vector<SeriesValue>& series, std::mt19937& random, std::size_t n, std::uint64_t level,
           std::uint64_t spread) {
  std::uniform_int_distribution<std::uint64_t> noise(0, spread);
  for (std::size_t i = 0; i < n; ++i) series.push_back(SeriesValue{level + noise(random), spread});
}

TEST(ChangePoints, PlantedStepIsFoundAtItsCommit) {
  std::vector<std::uint64_t> values(20, 301);
  values.resize(62, 308);
  const auto found = find_change_points(exact(values));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 20u);
  EXPECT_EQ(found[0].before, 301u);
  EXPECT_EQ(found[0].after, 308u);
  EXPECT_EQ(found[0].stable_for, 41u);
}

TEST(ChangePoints, SeveralPlantedStepsUpAndDown) {
  std::vector<std::uint64_t> values(10, 100);
  values.resize(25, 140);
  values.resize(40, 90);
  const auto found = find_change_points(exact(values));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].index, 10u);
  EXPECT_EQ(found[0].after, 140u);
  EXPECT_EQ(found[0].stable_for, 14u);
  EXPECT_EQ(found[1].index, 25u);
  EXPECT_EQ(found[1].before, 140u);
  EXPECT_EQ(found[1].after, 90u);
  EXPECT_EQ(found[1].stable_for, 14u);
}

TEST(ChangePoints, NoiseWithinItsBandIsNoStep) {
  std::mt19937 random(45);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<SeriesValue> series;
    noisy(series, random, 200, 1000, 40);
    EXPECT_TRUE(find_change_points(series).empty()) << "trial " << trial;
  }
}

TEST(ChangePoints, StepOutOfANoisyBandIsFoundAtItsCommit) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<SeriesValue> series;
    noisy(series, random, 30, 1000, 40);
    noisy(series, random, 30, 1200, 40);
    const auto found = find_change_points(series);
    ASSERT_EQ(found.size(), 1u) << "trial " << trial;
    EXPECT_EQ(found[0].index, 30u);
    EXPECT_GE(found[0].after, 1200u);
    EXPECT_LE(found[0].after, 1240u);
    EXPECT_EQ(found[0].stable_for, 29u);
  }
}

TEST(ChangePoints, SingleOutlierThatComesBackIsNoStep) {
  std::vector<std::uint64_t> values(30, 500);
  values[12] = 900;
  EXPECT_TRUE(find_change_points(exact(values)).empty());
  // Two in a row, still fewer than the three a step needs.
  values[13] = 900;
  EXPECT_TRUE(find_change_points(exact(values)).empty());
  values[14] = 900;
  const auto found = find_change_points(exact(values));
  ASSERT_EQ(found.size(), 2u);  // up at 12 for three commits, back down at 15
  EXPECT_EQ(found[0].index, 12u);
  EXPECT_EQ(found[1].index, 15u);
}

TEST(ChangePoints, OutliersOnBothSidesAreNotOneStep) {
  // Out above, then below: not the same side, so not a level of its own.
  const auto found = find_change_points(exact({50, 50, 50, 80, 20, 80, 50, 50, 50}));
  EXPECT_TRUE(found.empty());
}

TEST(ChangePoints, StepAtTheEndNeedsItsConfirmations) {
  std::vector<std::uint64_t> values(10, 7);
  values.push_back(9);
  values.push_back(9);
  EXPECT_TRUE(find_change_points(exact(values)).empty());
  values.push_back(9);
  const auto found = find_change_points(exact(values));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 10u);
  EXPECT_EQ(found[0].stable_for, 2u);
}

TEST(ChangePoints, ConfirmOptionSetsHowManyCommitsMakeAStep) {
  std::vector<std::uint64_t> values(10, 7);
  values[5] = 8;
  ChangePointOptions once;
  once.confirm = 1;
  EXPECT_EQ(find_change_points(exact(values), once).size(), 2u);  // up and back down
  EXPECT_TRUE(find_change_points(exact(values)).empty());
}

TEST(ChangePoints, EmptyAndSingleValueSeriesHaveNone) {
  EXPECT_TRUE(find_change_points({}).empty());
  EXPECT_TRUE(find_change_points(exact({5})).empty());
}

}  // namespace
}  // namespace heapgate
