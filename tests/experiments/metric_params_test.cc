// MetricParams: typed getters, YAML-path errors, unknown-key rejection.
#include "experiments/metrics/metric_params.h"

#include "gtest/gtest.h"

namespace dynsparse {
namespace {

using nlohmann::json;

TEST(MetricParamsTest, ReadsNumbersFromJsonAndFromStrings) {
  MetricParams p(json{{"a", 7},
                      {"b", "8"},
                      {"c", 0.5},
                      {"d", "true"},
                      {"e", {1, "2"}},
                      {"f", "x"}},
                 "metrics[0]");
  EXPECT_EQ(*p.GetInt("a", 0), 7);
  EXPECT_EQ(*p.GetInt("b", 0), 8);
  EXPECT_EQ(*p.GetDouble("c", 0), 0.5);
  EXPECT_TRUE(*p.GetBool("d", false));
  EXPECT_EQ(*p.GetIntList("e", {}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(*p.GetStringList("f", {}), (std::vector<std::string>{"x"}));
  EXPECT_EQ(*p.GetInt("missing", 42), 42);
  EXPECT_TRUE(p.CheckAllUsed({"a", "b", "c", "d", "e", "f"}).ok());
}

TEST(MetricParamsTest, ErrorsNameThePathAndKey) {
  MetricParams p(json{{"context", "x"}, {"tasks", {"piqa", json::array()}}},
                 "metrics[1]");
  EXPECT_EQ(p.GetInt("context", 0).status().message(),
            "metrics[1].context: expected an integer, got 'x'");
  EXPECT_EQ(p.GetStringList("tasks", {}).status().message(),
            "metrics[1].tasks[1]: expected a string, got '[]'");
  EXPECT_EQ(MetricParams(json{{"stride", 1.5}}, "m")
                .GetInt("stride", 0)
                .status()
                .message(),
            "m.stride: expected an integer, got '1.5'");
}

TEST(MetricParamsTest, RejectsUnknownKeysListingValidOnes) {
  MetricParams p(json{{"name", "perplexity"}, {"context", 8}, {"strid", 4}},
                 "metrics[0]");
  ASSERT_TRUE(p.GetInt("context", 0).ok());
  EXPECT_EQ(p.CheckAllUsed({"context", "stride"}).message(),
            "metrics[0]: unknown key 'strid' (valid: context, stride)");
}

}  // namespace
}  // namespace dynsparse
