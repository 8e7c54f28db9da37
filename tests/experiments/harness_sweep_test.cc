// Sweep expansion (grid and zip), job identity and shards.
#include <set>

#include "experiments/harness/sweep.h"
#include "gtest/gtest.h"
#include "tests/experiments/harness_fakes.h"

namespace dynsparse {
namespace {

using nlohmann::json;

MethodSpec Toy(json params, std::vector<std::vector<std::string>> zip = {}) {
  MethodSpec spec;
  spec.name = "toy";
  spec.path = "methods[0]";
  spec.params = std::move(params);
  spec.zip = std::move(zip);
  return spec;
}

std::vector<std::string> Describe(const std::vector<MethodVariant>& variants) {
  std::vector<std::string> out;
  for (const MethodVariant& v : variants) out.push_back(DescribeVariant(v));
  return out;
}

TEST(HarnessSweepTest, ScalarsMakeOnePoint) {
  EXPECT_EQ(Describe(ExpandMethod(Toy({{"keep", 0.5}, {"mode", "a"}}))),
            std::vector<std::string>{"toy keep=0.5 mode=a"});
  EXPECT_EQ(Describe(ExpandMethod(Toy(json::object()))),
            std::vector<std::string>{"toy"});
}

TEST(HarnessSweepTest, ListsAreAGridFirstKeySlowest) {
  EXPECT_EQ(Describe(ExpandMethod(
                Toy({{"keep", {0.5, 0.25}}, {"mode", {"a", "b", "c"}}}))),
            (std::vector<std::string>{
                "toy keep=0.5 mode=a", "toy keep=0.5 mode=b",
                "toy keep=0.5 mode=c", "toy keep=0.25 mode=a",
                "toy keep=0.25 mode=b", "toy keep=0.25 mode=c"}));
}

TEST(HarnessSweepTest, ZipMovesAxesTogether) {
  EXPECT_EQ(Describe(ExpandMethod(Toy(
                {{"keep", {0.5, 0.25}}, {"mode", {"a", "b"}}, {"x", {1, 2}}},
                {{"keep", "mode"}}))),
            (std::vector<std::string>{
                "toy keep=0.5 mode=a x=1", "toy keep=0.5 mode=a x=2",
                "toy keep=0.25 mode=b x=1", "toy keep=0.25 mode=b x=2"}));
}

TEST(HarnessSweepTest, VariantArgsCarryYamlValuesAsText) {
  auto variants = ExpandMethod(Toy({{"keep", 0.1}, {"mode", true}}));
  ASSERT_EQ(variants.size(), 1u);
  const MethodArgs args = VariantArgs(variants[0]);
  EXPECT_EQ(args.GetString("keep", ""), "0.1");
  EXPECT_EQ(args.GetString("mode", ""), "true");
}

ExperimentConfig TwoModels() {
  ExperimentConfig c;
  c.models.resize(2);
  c.models[0].label = "m0";
  c.models[1].label = "m1";
  MethodSpec dense;
  dense.name = "dense";
  dense.variants = ExpandMethod(dense);
  c.methods.push_back(dense);
  MethodSpec toy = Toy({{"keep", {0.5, 0.25, 0.1}}});
  toy.variants = ExpandMethod(toy);
  c.methods.push_back(toy);
  return c;
}

TEST(HarnessSweepTest, JobsAreModelsTimesMethodPointsModelMajor) {
  const std::vector<Job> jobs = ExpandJobs(TwoModels());
  ASSERT_EQ(jobs.size(), 8u);
  EXPECT_EQ(jobs[0].key, "m0|cpu|f32|dense");
  EXPECT_EQ(jobs[1].key, "m0|cpu|f32|toy keep=0.5");
  EXPECT_EQ(jobs[4].key, "m1|cpu|f32|dense");
  std::set<std::string> keys;
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].index, i);
    keys.insert(jobs[i].key);
  }
  EXPECT_EQ(keys.size(), jobs.size());
}

TEST(HarnessSweepTest, ShardsPartitionTheJobs) {
  const std::vector<Job> jobs = ExpandJobs(TwoModels());
  for (int count : {1, 3, 8, 11}) {
    std::multiset<size_t> seen;
    for (int i = 0; i < count; ++i) {
      for (const Job& job : SelectShard(jobs, {i, count})) {
        EXPECT_EQ(static_cast<int>(job.index % count), i);
        seen.insert(job.index);
      }
    }
    EXPECT_EQ(seen.size(), jobs.size()) << count;
    for (size_t j = 0; j < jobs.size(); ++j) EXPECT_EQ(seen.count(j), 1u);
  }
}

TEST(HarnessSweepTest, ShardParsing) {
  auto ok = ParseShard("2/4");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->index, 2);
  EXPECT_EQ(ok->count, 4);
  for (const char* bad : {"4/4", "-1/4", "1/0", "1", "a/b", "1/2/3"}) {
    auto s = ParseShard(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().message(),
              absl::StrCat("--shard '", bad,
                           "': expected I/N with 0 <= I < N (e.g. --shard 0/4 "
                           "for $SLURM_ARRAY_TASK_ID/4)"));
  }
}

}  // namespace
}  // namespace dynsparse
