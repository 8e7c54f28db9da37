// The token-pruning instrumentation reaches the results: longctx and latency
// rows of a lazyllm run carry the computed fraction of prompt token-layers
// and the ideal TTFT speedup it implies; dense runs carry neither.
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

}  // namespace
}  // namespace dynsparse
