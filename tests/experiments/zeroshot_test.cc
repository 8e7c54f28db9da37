// lm-eval request encoding, prefix-shared scoring and task evaluation on the
// tiny-llama-chat fixture.
#include "experiments/metrics/zeroshot.h"

#include <cmath>

#include "core/graph/session.h"
#include "datasets/tasks/python_random.h"
#include "experiments/metrics/registry.h"
#include "gmock/gmock.h"
#include "tests/experiments/metric_test_model.h"

namespace dynsparse {
namespace {

using nlohmann::json;

// Sum of log p(cont | ctx) computed with one fresh session and no sharing.
LoglikelihoodResult Direct(testing::TestModel& tm, const TokenizedRequest& r) {
  std::vector<int32_t> input = r.context;
  input.insert(input.end(), r.continuation.begin(), r.continuation.end());
  input.pop_back();
  Session session(tm.model.config, tm.model.weights, tm.backend, tm.method,
                  static_cast<int64_t>(input.size()));
  const int64_t first = input.size() - r.continuation.size();
  auto logits = session.Forward(input, first);
  EXPECT_TRUE(logits.ok());
  const int64_t vocab = logits->dim(1);
  const std::vector<float> data = logits->ToF32Vector();
  LoglikelihoodResult out{0.0, true, (int64_t)r.continuation.size()};
  for (size_t t = 0; t < r.continuation.size(); ++t) {
    const float* row = data.data() + t * vocab;
    double mx = row[0];
    int64_t arg = 0;
    for (int64_t v = 1; v < vocab; ++v) {
      if (row[v] > mx) mx = row[v], arg = v;
    }
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - mx);
    out.logprob += row[r.continuation[t]] - mx - std::log(sum);
    if (arg != r.continuation[t]) out.is_greedy = false;
  }
  return out;
}

TEST(EncodeRequestTest, FollowsLmEvalEncodePair) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  const Tokenizer& tok = *tm->tokenizer;
  // Trailing whitespace of the context moves to the continuation.
  TokenizedRequest a =
      EncodeRequest(tok, {"Question: why?\nAnswer: ", "yes"}, false);
  EXPECT_EQ(a.context, tok.Encode("Question: why?\nAnswer:", false));
  std::vector<int32_t> whole = tok.Encode("Question: why?\nAnswer: yes", false);
  std::vector<int32_t> tail(whole.begin() + a.context.size(), whole.end());
  EXPECT_EQ(a.continuation, tail);
  // An empty context is the prefix token (BOS here).
  TokenizedRequest b = EncodeRequest(tok, {"", " hello"}, false);
  ASSERT_TRUE(tok.bos_id().has_value());
  EXPECT_EQ(b.context, std::vector<int32_t>{*tok.bos_id()});
  EXPECT_EQ(b.continuation, tok.Encode(" hello", false));
  // add_bos_token encodes with the tokenizer's special tokens.
  TokenizedRequest c = EncodeRequest(tok, {"Hi", " there"}, true);
  EXPECT_EQ(c.context, tok.Encode("Hi", true));
  EXPECT_EQ(c.context.front(), *tok.bos_id());
}

TEST(LoglikelihoodScorerTest, PrefixSharingMatchesSeparateRuns) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  const Tokenizer& tok = *tm->tokenizer;
  std::vector<TokenizedRequest> reqs;
  for (const char* cont :
       {" a red apple", " the blue sky over the sea", " 42", ""}) {
    reqs.push_back(EncodeRequest(tok, {"The answer is", cont}, false));
  }
  // Partial scoring: different contexts, one continuation.
  reqs.push_back(
      EncodeRequest(tok, {"Sarah helped Maria so Sarah", " won."}, false));
  reqs.push_back(
      EncodeRequest(tok, {"Sarah helped Maria so Maria", " won."}, false));
  LoglikelihoodScorer scorer(tm->view(), 2048);
  for (auto group : {absl::MakeConstSpan(reqs).subspan(0, 4),
                     absl::MakeConstSpan(reqs).subspan(4, 2)}) {
    auto got = scorer.ScoreGroup(group);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i].continuation.empty()) {
        EXPECT_EQ((*got)[i].logprob, 0.0);
        EXPECT_TRUE((*got)[i].is_greedy);
        continue;
      }
      const LoglikelihoodResult want = Direct(*tm, group[i]);
      EXPECT_NEAR((*got)[i].logprob, want.logprob, 1e-4) << i;
      EXPECT_EQ((*got)[i].is_greedy, want.is_greedy) << i;
      EXPECT_EQ((*got)[i].tokens, want.tokens);
    }
  }
}

TEST(LoglikelihoodScorerTest, TruncatesFromTheLeftToMaxLength) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  TokenizedRequest r = EncodeRequest(
      *tm->tokenizer,
      {"one two three four five six seven eight nine ten", " eleven"}, false);
  ASSERT_GT(r.context.size(), 6u);
  LoglikelihoodScorer scorer(tm->view(), 6);
  auto got = scorer.ScoreGroup({&r, 1});
  ASSERT_TRUE(got.ok()) << got.status();
  // lm-eval keeps (ctx + cont)[-(6 + 1):], i.e. this shorter context.
  std::vector<int32_t> full = r.context;
  full.insert(full.end(), r.continuation.begin(), r.continuation.end());
  TokenizedRequest cut;
  cut.context.assign(full.end() - 7, full.end() - r.continuation.size());
  cut.continuation = r.continuation;
  EXPECT_NEAR((*got)[0].logprob, Direct(*tm, cut).logprob, 1e-4);
}

TaskDefinition ToyTask(TaskKind kind) {
  TaskDefinition t;
  t.name = "toy";
  t.kind = kind;
  t.acc_norm = true;
  return t;
}

TEST(EvaluateTaskTest, AccuracyFromLogLikelihoods) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  std::vector<TaskDoc> docs = {
      {.text = "Question: sky?\nAnswer:",
       .choices = {"blue", "green grass"},
       .target = "",
       .gold = 0},
      {.text = "Question: two plus two?\nAnswer:",
       .choices = {"4", "five"},
       .target = "",
       .gold = 1},
      {.text = "Question: cat?\nAnswer:",
       .choices = {"meow", "woof", "moo"},
       .target = "",
       .gold = 2},
  };
  auto score = EvaluateTask(tm->view(), ToyTask(TaskKind::kMultipleChoice),
                            docs, {}, nullptr);
  ASSERT_TRUE(score.ok()) << score.status();
  ASSERT_EQ(score->docs.size(), 3u);
  double hits = 0, hits_norm = 0;
  for (size_t d = 0; d < docs.size(); ++d) {
    const DocScore& ds = score->docs[d];
    ASSERT_EQ(ds.results.size(), docs[d].choices.size());
    int best = 0, best_norm = 0;
    for (size_t c = 1; c < ds.results.size(); ++c) {
      if (ds.results[c].logprob > ds.results[best].logprob) best = c;
      if (ds.results[c].logprob / docs[d].choices[c].size() >
          ds.results[best_norm].logprob / docs[d].choices[best_norm].size()) {
        best_norm = c;
      }
    }
    EXPECT_EQ(ds.pred, best);
    EXPECT_EQ(ds.pred_norm, best_norm);
    hits += best == docs[d].gold;
    hits_norm += best_norm == docs[d].gold;
  }
  EXPECT_DOUBLE_EQ(score->acc, hits / 3);
  EXPECT_DOUBLE_EQ(score->acc_norm, hits_norm / 3);
  const double p = hits / 3;
  EXPECT_NEAR(score->acc_stderr, std::sqrt(p * (1 - p) * 3 / 2) / std::sqrt(3),
              1e-12);
}

TEST(BuildRequestsTest, FewShotExamplesFollowLmEvalLayout) {
  std::vector<TaskDoc> docs;
  for (int i = 0; i < 5; ++i) {
    docs.push_back({.text = absl::StrCat("Q", i, ":"),
                    .choices = {absl::StrCat("a", i), absl::StrCat("b", i)},
                    .target = "",
                    .gold = i % 2});
  }
  TaskDefinition task = ToyTask(TaskKind::kMultipleChoice);
  PythonRandom rng(1234), replay(1234);
  auto reqs = BuildRequests(task, docs, 2, 2, &rng);
  ASSERT_EQ(reqs.size(), 2u);
  std::string expected;
  int kept = 0;
  for (int64_t i : replay.Sample(5, 3)) {
    if (i == 2 || kept == 2) continue;
    expected +=
        absl::StrCat("Q", i, ": ", docs[i].choices[docs[i].gold], "\n\n");
    ++kept;
  }
  EXPECT_EQ(reqs[0].context, expected + "Q2:");
  EXPECT_EQ(reqs[1].continuation, " b2");
  // Partial scoring puts the options in the context.
  TaskDefinition partial = ToyTask(TaskKind::kPartial);
  TaskDoc w{
      .text = "", .choices = {"x so A", "x so B"}, .target = "won.", .gold = 1};
  auto preqs = BuildRequests(partial, {w}, 0, 0, &rng);
  ASSERT_EQ(preqs.size(), 2u);
  EXPECT_EQ(preqs[1].context, "x so B");
  EXPECT_EQ(preqs[1].continuation, " won.");
}

TEST(ZeroshotMetricTest, RejectsUnknownTasksWithThePath) {
  auto m = CreateMetric(
      "zeroshot",
      MetricParams(json{{"tasks", {"piqa", "piqaa"}}}, "metrics[1]"));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              ::testing::StartsWith(
                  "metrics[1].tasks[1]: unknown task 'piqaa' (valid: piqa, "
                  "hellaswag, "));
  auto k =
      CreateMetric("zeroshot", MetricParams(json{{"tasks", {"piqa", "copa"}},
                                                 {"num_fewshot", {1, 2, 3}}},
                                            "metrics[0]"));
  EXPECT_EQ(k.status().message(),
            "metrics[0].num_fewshot: give one number or one per task (2), got "
            "3");
}

}  // namespace
}  // namespace dynsparse
