// The passkey answer log-likelihood: on the dense model it is the sum of the
// log-softmax of one full forward over prompt + answer, computed here by
// hand; the greedy tokens of a trial equal plain greedy generation whether
// greedy follows the answer or leaves it, and with part of the prompt fed as
// a bridge; lazyllm at keep 1.0 equals dense
// exactly and a pruned schedule changes the score.
#include "experiments/metrics/passkey_trial.h"

#include <cmath>

#include "experiments/generation.h"
#include "experiments/metrics/passkey.h"
#include "experiments/metrics/registry.h"
#include "experiments/metrics/sample_stats.h"
#include "gtest/gtest.h"
#include "methods/lazyllm/lazyllm.h"
#include "tests/experiments/metric_test_model.h"

namespace dynsparse {
namespace {

using json = nlohmann::json;

constexpr int64_t kContext = 192;
constexpr int64_t kMaxNew = 8;

// sum_t log_softmax(logits of prompt + answer[:t])[answer[t]] from one
// forward of prompt + answer[:-1], in double.
double HandLogprob(testing::TestModel& tm, const std::vector<int32_t>& prompt,
                   const std::vector<int32_t>& answer) {
  Session session(tm.model.config, tm.model.weights, tm.backend, tm.method,
                  kContext);
  std::vector<int32_t> input = prompt;
  input.insert(input.end(), answer.begin(), answer.end() - 1);
  auto logits = session.Forward(input, static_cast<int64_t>(prompt.size()) - 1);
  EXPECT_TRUE(logits.ok()) << logits.status();
  const int64_t vocab = logits->dim(1);
  double total = 0;
  for (size_t t = 0; t < answer.size(); ++t) {
    const float* row = logits->data<float>() + t * vocab;
    double top = row[0];
    for (int64_t v = 1; v < vocab; ++v) top = std::max<double>(top, row[v]);
    double z = 0;
    for (int64_t v = 0; v < vocab; ++v) z += std::exp(row[v] - top);
    total += row[answer[t]] - top - std::log(z);
  }
  return total;
}

std::vector<int32_t> Greedy(testing::TestModel& tm,
                            const std::vector<int32_t>& prompt,
                            const std::vector<int32_t>& stop_ids) {
  Session session(tm.model.config, tm.model.weights, tm.backend, tm.method,
                  kContext);
  GenerationOptions g;
  g.max_new_tokens = kMaxNew;
  g.stop_ids = stop_ids;
  auto out = Generate(session, prompt, g);
  EXPECT_TRUE(out.ok()) << out.status();
  return out->tokens;
}

TEST(PasskeyTrialTest, DenseScoreIsTheLogSoftmaxSumAndGreedyIsUnchanged) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  auto p = MakePasskeyPrompt(*tm->tokenizer, kContext - kMaxNew,
                             {.depth = 0.5, .seed = 3});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_FALSE(p->answer.empty());
  EXPECT_NE(tm->tokenizer->Decode(p->answer, true).find(p->key),
            std::string::npos);
  std::vector<int32_t> stop_ids;
  if (auto eos = tm->tokenizer->eos_id()) stop_ids = {*eos};
  const std::vector<int32_t> greedy = Greedy(*tm, p->tokens, stop_ids);
  ASSERT_GE(greedy.size(), 3u);

  // The true key; the first tokens of greedy's own output (greedy follows
  // them, then goes on); greedy's second token after another first token
  // (greedy leaves it at once).
  const int32_t other =
      (greedy[0] + 1) % static_cast<int32_t>(tm->model.config.vocab_size);
  const std::vector<std::vector<int32_t>> answers = {
      p->answer,
      std::vector<int32_t>(greedy.begin(), greedy.begin() + 3),
      {other, greedy[1]}};
  Session session(tm->model.config, tm->model.weights, tm->backend, tm->method,
                  kContext);
  for (const std::vector<int32_t>& answer : answers) {
    auto trial =
        RunPasskeyTrial(session, p->tokens, {}, answer, kMaxNew, stop_ids);
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(trial->answer_tokens, static_cast<int64_t>(answer.size()));
    EXPECT_LT(trial->answer_logprob, 0.0);
    // Decode steps vs one batched forward: equal up to f32 rounding.
    const double hand = HandLogprob(*tm, p->tokens, answer);
    EXPECT_NEAR(trial->answer_logprob, hand, 1e-4 * std::fabs(hand) + 1e-5);
    EXPECT_EQ(trial->generated, greedy);
  }
  // A bridge is decode steps: the prompt's last 5 tokens fed as one changes
  // neither the score nor greedy.
  const std::vector<int32_t> head(p->tokens.begin(), p->tokens.end() - 5);
  const std::vector<int32_t> bridge(p->tokens.end() - 5, p->tokens.end());
  auto split =
      RunPasskeyTrial(session, head, bridge, p->answer, kMaxNew, stop_ids);
  ASSERT_TRUE(split.ok()) << split.status();
  const double hand = HandLogprob(*tm, p->tokens, p->answer);
  EXPECT_NEAR(split->answer_logprob, hand, 1e-4 * std::fabs(hand) + 1e-5);
  EXPECT_EQ(split->generated, greedy);
}

TEST(PasskeyTrialTest, RejectsAnAnswerThatDoesNotFit) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  Session session(tm->model.config, tm->model.weights, tm->backend, tm->method,
                  16);
  const std::vector<int32_t> prompt(12, 5), answer(6, 7);
  EXPECT_EQ(RunPasskeyTrial(session, prompt, {}, answer, 2, {}).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_FALSE(RunPasskeyTrial(session, prompt, {}, {}, 2, {}).ok());
  // The bridge counts against the session too.
  const std::vector<int32_t> short_prompt(8, 5), bridge(4, 6);
  EXPECT_TRUE(RunPasskeyTrial(session, short_prompt, {}, answer, 2, {}).ok());
  EXPECT_EQ(RunPasskeyTrial(session, short_prompt, bridge, answer, 2, {})
                .status()
                .code(),
            absl::StatusCode::kOutOfRange);
}

const MetricRow* Find(const std::vector<MetricRow>& rows,
                      const std::string& metric) {
  for (const MetricRow& r : rows) {
    if (r.metric == metric) return &r;
  }
  return nullptr;
}

std::vector<MetricRow> RunPasskeyMetric(MetricModel view) {
  auto metric = CreateMetric("longctx", MetricParams(json{{"task", "passkey"},
                                                          {"context", kContext},
                                                          {"depth", {0.5}},
                                                          {"trials", 2}},
                                                     "metrics[0]"));
  EXPECT_TRUE(metric.ok()) << metric.status();
  auto rows = (*metric)->Run(view, nullptr);
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *rows : std::vector<MetricRow>{};
}

std::unique_ptr<Method> Lazy(testing::TestModel& tm,
                             const std::string& schedule) {
  auto args = MethodArgs::Parse({"schedule=" + schedule});
  EXPECT_TRUE(args.ok());
  auto lazy = LazyLlmMethod::Create(*args);
  EXPECT_TRUE(lazy.ok());
  EXPECT_TRUE((*lazy)->Attach(tm.model.config, tm.backend).ok());
  return *std::move(lazy);
}

TEST(PasskeyTrialTest, LazyllmKeepOneEqualsDenseAndPruningMovesTheScore) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  const std::vector<MetricRow> dense = RunPasskeyMetric(tm->view());
  const MetricRow* dense_ll = Find(dense, "answer_logprob");
  const MetricRow* dense_tok = Find(dense, "answer_logprob_per_token");
  ASSERT_NE(dense_ll, nullptr);
  ASSERT_NE(dense_tok, nullptr);
  ASSERT_EQ(dense_ll->details["by_trial"].size(), 2u);
  const std::vector<double> by_trial = dense_ll->details["by_trial"];
  const auto [mean, stderr_value] = MeanStderr(by_trial);
  EXPECT_DOUBLE_EQ(dense_ll->value, mean);
  EXPECT_DOUBLE_EQ(*dense_ll->stderr_value, stderr_value);
  EXPECT_LT(dense_tok->value, 0.0);
  EXPECT_GT(dense_tok->value, dense_ll->value);  // Keys span several tokens.

  std::unique_ptr<Method> keep_all = Lazy(*tm, "1:1.0");
  MetricModel view = tm->view();
  view.method = keep_all.get();
  const std::vector<MetricRow> full = RunPasskeyMetric(view);
  ASSERT_NE(Find(full, "answer_logprob"), nullptr);
  EXPECT_EQ(Find(full, "answer_logprob")->details["by_trial"],
            dense_ll->details["by_trial"]);
  EXPECT_EQ(Find(full, "passkey_acc")->details["found_by_trial"],
            Find(dense, "passkey_acc")->details["found_by_trial"]);

  std::unique_ptr<Method> pruned = Lazy(*tm, "1:0.3");
  view.method = pruned.get();
  const std::vector<MetricRow> cut = RunPasskeyMetric(view);
  ASSERT_NE(Find(cut, "answer_logprob"), nullptr);
  EXPECT_NE(Find(cut, "answer_logprob")->value, dense_ll->value);
  EXPECT_LT(Find(cut, "computed_fraction")->value, 1.0);
}

// The Wilson bounds solve (phat - p)^2 = z^2 p (1 - p) / n; at 0 and n
// successes one bound is the end of [0, 1].
TEST(SampleStatsTest, WilsonBoundsSolveTheScoreEquation) {
  const double z = 1.959963984540054;
  for (const auto& [k, n] :
       std::vector<std::pair<int, int>>{{3, 10}, {12, 24}, {1, 32}}) {
    const auto [low, high] = WilsonInterval(k, n, z);
    const double phat = static_cast<double>(k) / n;
    for (double b : {low, high}) {
      EXPECT_NEAR((phat - b) * (phat - b), z * z * b * (1 - b) / n, 1e-12);
    }
    EXPECT_LT(low, phat);
    EXPECT_GT(high, phat);
  }
  EXPECT_EQ(WilsonInterval(0, 8).first, 0.0);
  EXPECT_GT(WilsonInterval(0, 8).second, 0.0);
  EXPECT_EQ(WilsonInterval(8, 8).second, 1.0);
  EXPECT_LT(WilsonInterval(8, 8).first, 1.0);
}

}  // namespace
}  // namespace dynsparse
