// The perplexity metric through the registry: parameter validation and the
// same numbers as SlidingWindowPerplexity on the fixture model.
#include "experiments/metrics/perplexity_metric.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>

#include "core/graph/session.h"
#include "experiments/metrics/perplexity.h"
#include "experiments/metrics/registry.h"
#include "gmock/gmock.h"
#include "tests/experiments/metric_test_model.h"

namespace dynsparse {
namespace {

using nlohmann::json;

std::string WriteText(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(MetricRegistryTest, UnknownMetricListsValidNames) {
  auto m = CreateMetric("ppl", MetricParams(json::object(), "metrics[2]"));
  ASSERT_FALSE(m.ok());
  const std::string message(m.status().message());
  EXPECT_THAT(message, ::testing::StartsWith(
                           "metrics[2]: unknown metric 'ppl' (valid: "));
  EXPECT_THAT(message, ::testing::HasSubstr("perplexity"));
}

TEST(MetricRegistryTest, PerplexityValidatesParameters) {
  const std::string text = WriteText("ds_ppl_params.txt", "hello world");
  auto bad = [&](json params) {
    auto m = CreateMetric("perplexity", MetricParams(params, "metrics[0]"));
    EXPECT_FALSE(m.ok());
    return std::string(m.status().message());
  };
  EXPECT_EQ(bad({{"corpus", text}, {"context", 8}, {"stride", 9}}),
            "metrics[0].stride: must be in [1, context=8], got 9");
  EXPECT_EQ(bad({{"corpus", text}, {"contxt", 8}}),
            "metrics[0]: unknown key 'contxt' (valid: protocol, corpus, "
            "context, stride, max_tokens, add_special, limit)");
  EXPECT_EQ(bad(json::object()),
            "metrics[0].corpus: required (a registered corpus or a file)");
  EXPECT_THAT(bad({{"corpus", "nope"}}),
              ::testing::StartsWith("metrics[0].corpus: 'nope' is neither a "
                                    "file nor a registered corpus (valid: "));
}

TEST(PerplexityMetricTest, MatchesSlidingWindowAndReportsBitsPerByte) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  const std::string text_body =
      "The quick brown fox jumps over the lazy dog. It was a bright cold day "
      "in April, and the clocks were striking thirteen.";
  const std::string path = WriteText("ds_ppl_metric.txt", text_body);
  auto metric = CreateMetric(
      "perplexity",
      MetricParams(json{{"corpus", path}, {"context", "16"}, {"stride", 8}},
                   "metrics[0]"));
  ASSERT_TRUE(metric.ok()) << metric.status();
  EXPECT_NE((*metric)->Protocol().find("context 16 stride 8"),
            std::string::npos);
  int64_t last_done = -1;
  auto rows = (*metric)->Run(tm->view(),
                             [&](int64_t done, int64_t) { last_done = done; });
  ASSERT_TRUE(rows.ok()) << rows.status();

  const std::vector<int32_t> ids = tm->tokenizer->Encode(text_body, true);
  Session session(tm->model.config, tm->model.weights, tm->backend, tm->method,
                  16);
  auto direct = SlidingWindowPerplexity(session, ids, {16, 8});
  ASSERT_TRUE(direct.ok());
  ASSERT_EQ(rows->size(), 2u);  // The fixture's tokenizer adds BOS.
  EXPECT_EQ((*rows)[0].metric, "perplexity");
  EXPECT_DOUBLE_EQ((*rows)[0].value, direct->perplexity());
  EXPECT_EQ((*rows)[0].n, static_cast<int64_t>(ids.size()) - 1);
  EXPECT_EQ(last_done, (*rows)[0].n);
  EXPECT_EQ((*rows)[1].metric, "bits_per_byte");
  EXPECT_DOUBLE_EQ((*rows)[1].value, direct->nll_sum / std::numbers::ln2 /
                                         static_cast<double>(text_body.size()));
}

TEST(PerplexityMetricTest, MaxTokensTruncatesAndDropsBitsPerByte) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  const std::string path =
      WriteText("ds_ppl_metric_trunc.txt", "one two three four five six seven");
  auto metric = CreateMetric("perplexity", MetricParams(json{{"corpus", path},
                                                             {"context", 4},
                                                             {"stride", 2},
                                                             {"max_tokens", 5}},
                                                        "metrics[0]"));
  ASSERT_TRUE(metric.ok()) << metric.status();
  auto rows = (*metric)->Run(tm->view(), nullptr);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].n, 4);
}

}  // namespace
}  // namespace dynsparse

namespace dynsparse {
namespace {

// lm-eval wikitext (document-level rolling log-likelihood) against the Python
// re-implementation with HF transformers (tools/parity/lm_eval_reference.py
// score --wikitext-docs N -> tests/fixtures/zeroshot/tiny-llama-chat/).
TEST(PerplexityMetricTest, WikitextMatchesHfReference) {
  DS_REQUIRE_DATA();
  if (testing::kSanitizedBuild) {
    GTEST_SKIP() << "3045-token document: runs in the unsanitized build only";
  }
  const std::string path =
      testing::FixturePath("zeroshot/tiny-llama-chat/wikitext.json");
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path
                 << " is missing: run tools/parity/lm_eval_reference.py";
  }
  std::ifstream in(path);
  const json ref = json::parse(in);
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  // The first document keeps the test fast; the fixture holds them all.
  const int64_t docs = 1;
  ASSERT_GE(ref["docs"].size(), 1u);
  auto metric =
      CreateMetric("perplexity",
                   MetricParams(json{{"protocol", "wikitext"}, {"limit", docs}},
                                "metrics[0]"));
  ASSERT_TRUE(metric.ok()) << metric.status();
  auto rows = (*metric)->Run(tm->view(), nullptr);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  const json& want = ref["docs"][0];
  const double want_ll = want["loglikelihood"].get<double>();
  const int64_t want_tokens = want["tokens"].get<int64_t>();
  const double words = want["words"].get<double>();
  const double bytes = want["bytes"].get<double>();
  const json& details = (*rows)[0].details;
  EXPECT_EQ(details["tokens"].get<int64_t>(), want_tokens);
  EXPECT_EQ(details["words"].get<int64_t>(), want["words"].get<int64_t>());
  EXPECT_EQ(details["bytes"].get<int64_t>(), want["bytes"].get<int64_t>());
  EXPECT_EQ(details["max_length"].get<int64_t>(),
            ref["max_length"].get<int64_t>());
  const double ll = details["loglikelihood"].get<double>();
  EXPECT_NEAR(ll, want_ll, 1e-6 * std::abs(want_ll));
  EXPECT_EQ((*rows)[0].metric, "word_perplexity");
  EXPECT_NEAR(std::log((*rows)[0].value), -want_ll / words, 1e-5);
  EXPECT_NEAR(std::log((*rows)[1].value), -want_ll / bytes, 1e-5);
  EXPECT_NEAR((*rows)[2].value, -want_ll / bytes / std::numbers::ln2, 1e-5);
  std::cerr << "wikitext: " << docs << " docs, " << want_tokens
            << " tokens, loglikelihood " << ll << " (ref " << want_ll << ")\n";
}

}  // namespace
}  // namespace dynsparse
