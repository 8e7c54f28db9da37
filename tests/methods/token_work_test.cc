// The token-pruning instrumentation reaches the results: longctx and latency
// rows of a lazyllm run carry the computed fraction of prompt token-layers
// and the ideal TTFT speedup it implies; dense runs carry neither.
#include "experiments/bench/token_work.h"

#include <string>

#include "experiments/metrics/registry.h"
#include "gtest/gtest.h"
#include "methods/lazyllm/lazyllm.h"
#include "tests/experiments/metric_test_model.h"

namespace dynsparse {
namespace {

using json = nlohmann::json;

const MetricRow* Find(const std::vector<MetricRow>& rows,
                      const std::string& metric) {
  for (const MetricRow& r : rows) {
    if (r.metric == metric) return &r;
  }
  return nullptr;
}

TEST(TokenWorkTest, LongctxAndLatencyRowsReportComputedFraction) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  auto args = MethodArgs::Parse({"schedule=1:0.5"});
  ASSERT_TRUE(args.ok());
  auto lazy = LazyLlmMethod::Create(*args);
  ASSERT_TRUE(lazy.ok());
  ASSERT_TRUE((*lazy)->Attach(tm->model.config, tm->backend).ok());
  MetricModel view = tm->view();

  auto passkey = CreateMetric("longctx", MetricParams(json{{"task", "passkey"},
                                                           {"context", 256},
                                                           {"depth", {0.5}},
                                                           {"trials", 1}},
                                                      "metrics[0]"));
  ASSERT_TRUE(passkey.ok()) << passkey.status();
  auto dense_rows = (*passkey)->Run(view, nullptr);
  ASSERT_TRUE(dense_rows.ok()) << dense_rows.status();
  EXPECT_EQ(Find(*dense_rows, "computed_fraction"), nullptr);

  view.method = lazy->get();
  auto rows = (*passkey)->Run(view, nullptr);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const MetricRow* fraction = Find(*rows, "computed_fraction");
  const MetricRow* speedup = Find(*rows, "ideal_ttft_speedup");
  ASSERT_NE(fraction, nullptr);
  ASSERT_NE(speedup, nullptr);
  // tiny-llama-chat (4 layers): layer 0 full, layers 1-3 on half the prompt.
  EXPECT_GT(fraction->value, 0.62);
  EXPECT_LT(fraction->value, 0.64);
  EXPECT_DOUBLE_EQ(speedup->value, 1.0 / fraction->value);
  EXPECT_EQ(fraction->task, "passkey@256/0.5");
  EXPECT_DOUBLE_EQ(
      Find(*rows, "passkey_acc")->details["prefill_computed_fraction"],
      fraction->value);

  auto latency =
      CreateMetric("latency", MetricParams(json{{"prompt", 64},
                                                {"new_tokens", 2},
                                                {"repeats", 1},
                                                {"bandwidth_gbps", 10.0}},
                                           "metrics[1]"));
  ASSERT_TRUE(latency.ok()) << latency.status();
  auto lat_rows = (*latency)->Run(view, nullptr);
  ASSERT_TRUE(lat_rows.ok()) << lat_rows.status();
  ASSERT_NE(Find(*lat_rows, "computed_fraction"), nullptr);
  EXPECT_LT(Find(*lat_rows, "computed_fraction")->value, 1.0);
}

// Per-step averages; row groups no layer fell into are left out.
TEST(TokenWorkTest, ProfileJsonAveragesPerStep) {
  TokenProfile p;
  p.steps = 4;
  p.steps_ms = 20;
  p.select_ms = 2;
  p.move_ms = 1;
  p.probes = 12;
  p.probe_wait_ms = 1;
  p.revived = 40;
  const int one = TokenProfile::Bucket(1), many = TokenProfile::Bucket(30);
  p.layers[one] = 8;
  p.rows[one] = 8;
  p.layer_ms[one] = 5;
  p.layers[many] = 4;
  p.rows[many] = 120;
  p.layer_ms[many] = 12;
  p.layer_host_ms[many] = 3;
  const nlohmann::json j = TokenProfileJson(p);
  EXPECT_DOUBLE_EQ(j["ms_per_step"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["select_ms"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["probes"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["revived_token_layers"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["probe_wait_ms"].get<double>(), 0.25);
  EXPECT_FALSE(j["host_only"].get<bool>());
  ASSERT_EQ(j["by_rows"].size(), 2u);
  const nlohmann::json& g = j["by_rows"][1];
  EXPECT_EQ(g["rows"], TokenProfile::BucketName(many));
  EXPECT_DOUBLE_EQ(g["layers"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(g["rows_per_layer"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(g["ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(g["ms_per_layer"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(g["host_ms"].get<double>(), 0.75);
}

}  // namespace
}  // namespace dynsparse
