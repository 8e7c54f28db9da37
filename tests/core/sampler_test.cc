#include "core/graph/sampler.h"

#include <cmath>
#include <map>

#include "gtest/gtest.h"

namespace dynsparse {
namespace {

TEST(SamplerTest, GreedyTakesTheLargestLogitAndLowestIdOnTies) {
  Sampler sampler({.greedy = true});
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(sampler.Next(logits), 1);
}

TEST(SamplerTest, SameSeedSameSequence) {
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.0f};
  SamplingOptions o{.greedy = false, .temperature = 1.0, .seed = 42};
  Sampler a(o), b(o);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.Next(logits), b.Next(logits));
}

TEST(SamplerTest, TopKOneIsGreedy) {
  Sampler sampler({.greedy = false, .temperature = 2.0, .top_k = 1, .seed = 3});
  const std::vector<float> logits = {0.0f, 0.1f, 3.0f, 0.2f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(sampler.Next(logits), 2);
}

TEST(SamplerTest, TopPExcludesTheTail) {
  // Softmax mass: ~0.665, ~0.245, ~0.09. top_p 0.8 keeps ids 0 and 1 only.
  Sampler sampler(
      {.greedy = false, .temperature = 1.0, .top_p = 0.8, .seed = 1});
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  std::map<int, int> counts;
  for (int i = 0; i < 2000; ++i) ++counts[sampler.Next(logits)];
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[1], 400);  // ~27% of draws after renormalisation.
  EXPECT_GT(counts[0], 1200);
}

TEST(SamplerTest, FrequenciesFollowTheSoftmax) {
  Sampler sampler({.greedy = false, .temperature = 1.0, .seed = 9});
  const std::vector<float> logits = {0.0f, std::log(3.0f)};  // 1:3
  int ones = 0;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ones += sampler.Next(logits);
  EXPECT_NEAR(static_cast<double>(ones) / draws, 0.75, 0.015);
}

TEST(SamplerTest, ValidationNamesTheFlag) {
  EXPECT_EQ(
      ValidateSamplingOptions({.greedy = false, .temperature = -1}).message(),
      "--temperature must be > 0, got -1");
  EXPECT_EQ(ValidateSamplingOptions({.greedy = false, .top_p = 1.5}).message(),
            "--top-p must be in (0, 1], got 1.5");
}

}  // namespace
}  // namespace dynsparse
