// longctx: LongBench scorers on hand-made cases, the passkey generator, and
// the metric end to end on the fixture model with a tiny jsonl.
#include <filesystem>
#include <fstream>

#include "experiments/metrics/longbench_scores.h"
#include "experiments/metrics/passkey.h"
#include "experiments/metrics/registry.h"
#include "gmock/gmock.h"
#include "tests/experiments/metric_test_model.h"

namespace dynsparse {
namespace {

using nlohmann::json;

TEST(LongbenchScoresTest, QaF1NormalisesAndCountsOverlap) {
  EXPECT_EQ(NormalizeAnswer("The  Cat, sat!"), "cat sat");
  // "cat sat" vs "cat sat down": precision 1, recall 2/3.
  EXPECT_DOUBLE_EQ(QaF1Score("the cat sat", "a cat sat down"), 0.8);
  EXPECT_DOUBLE_EQ(QaF1Score("dog", "cat"), 0.0);
}

TEST(LongbenchScoresTest, RougeLUsesTheLongestCommonSubsequence) {
  // LCS("a b c d", "a c d e") = 3: precision 3/4, recall 3/4.
  EXPECT_DOUBLE_EQ(RougeLScore("A b c d", "a c d e"), 0.75);
  EXPECT_DOUBLE_EQ(RougeLScore("", "a"), 0.0);
}

TEST(LongbenchScoresTest, ClassificationSharesCreditAmongMatches) {
  const std::vector<std::string> classes = {"sports", "politics", "science"};
  EXPECT_DOUBLE_EQ(ClassificationScore("It is sports.", "sports", classes), 1);
  EXPECT_DOUBLE_EQ(ClassificationScore("sports or politics", "sports", classes),
                   0.5);
  EXPECT_DOUBLE_EQ(ClassificationScore("science", "sports", classes), 0);
}

TEST(LongbenchScoresTest, CodeSimTakesTheFirstCodeLine) {
  // "# comment" and the fence are skipped; "x = 1" vs "x = 2": LCS 4 of 5+5.
  EXPECT_DOUBLE_EQ(CodeSimScore("\n```\n# comment\nx = 1\ny", "x = 2"), 0.8);
  EXPECT_DOUBLE_EQ(CodeSimScore("return a", "return a"), 1.0);
}

TEST(PasskeyTest, PromptFitsAndHoldsTheKeyAtItsDepth) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  const Tokenizer& tok = *tm->tokenizer;
  for (double depth : {0.0, 0.5, 1.0}) {
    auto p = MakePasskeyPrompt(tok, 400, {.depth = depth, .seed = 7});
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_LE(p->tokens.size(), 400u);
    EXPECT_GT(p->filler_units, 2);
    EXPECT_EQ(p->key.size(), 5u);
    const std::string text = tok.Decode(p->tokens, true);
    const size_t at = text.find("The pass key is " + p->key + ".");
    ASSERT_NE(at, std::string::npos);
    const size_t question = text.find("What is the pass key?");
    if (depth == 0.0) {
      EXPECT_LT(at, text.find("The grass is green"));
    }
    if (depth == 1.0) {
      EXPECT_GT(at, text.rfind("There and back again", question));
    }
  }
  EXPECT_TRUE(PasskeyFound(" 12345. Remember", "12345"));
  EXPECT_FALSE(PasskeyFound(" 123456", "12345"));
  EXPECT_FALSE(MakePasskeyPrompt(tok, 10, {.depth = 0.5, .seed = 1}).ok());
  EXPECT_FALSE(MakePasskeyPrompt(tok, 400, {.depth = 1.5}).ok());
}

// The follow-up prompt: both keys at their depths, the question about the
// pass key last; prompt + bridge + answer decode to the prompt's text with the
// pass key, the second question and the secret number after it.
TEST(PasskeyTest, FollowupAsksTheSecondKeyInTheBridge) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  const Tokenizer& tok = *tm->tokenizer;
  const PasskeySpec spec = {
      .depth = 0.25, .seed = 11, .followup = true, .pass_key_depth = 0.75};
  auto p = MakePasskeyPrompt(tok, 400, spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LE(p->tokens.size() + p->bridge.size(), 400u);
  EXPECT_NE(p->key, p->pass_key);
  const std::string prompt = tok.Decode(p->tokens, true);
  const size_t secret = prompt.find("The secret number is " + p->key + ".");
  const size_t pass = prompt.find("The pass key is " + p->pass_key + ".");
  ASSERT_NE(secret, std::string::npos);
  ASSERT_NE(pass, std::string::npos);
  EXPECT_LT(secret, pass);
  EXPECT_EQ(prompt.find(p->key + ". Remember it. " + p->key +
                        " is the secret number."),
            secret + std::string("The secret number is ").size());
  EXPECT_TRUE(prompt.ends_with("What is the pass key? The pass key is"));
  const std::string bridge = tok.Decode(p->bridge, false);
  EXPECT_NE(bridge.find(p->pass_key + ".\n\nWhat is the secret number? "
                                      "The secret number is"),
            std::string::npos)
      << bridge;
  EXPECT_NE(tok.Decode(p->answer, false).find(p->key), std::string::npos);
  // The plain prompt of the same seed is another prompt.
  auto plain = MakePasskeyPrompt(tok, 400, {.depth = 0.25, .seed = 11});
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->bridge.empty());
  EXPECT_TRUE(plain->pass_key.empty());
}

TEST(LongctxMetricTest, RunsPasskeyAndLongbenchOnTheFixture) {
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  auto passkey = CreateMetric("longctx", MetricParams(json{{"task", "passkey"},
                                                           {"context", 256},
                                                           {"depth", {0.5}},
                                                           {"trials", 2}},
                                                      "metrics[0]"));
  ASSERT_TRUE(passkey.ok()) << passkey.status();
  auto rows = (*passkey)->Run(tm->view(), nullptr);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  for (const MetricRow& row : *rows) {
    EXPECT_EQ(row.task, "passkey@256/0.5");
    EXPECT_EQ(row.n, 2);
  }
  EXPECT_EQ((*rows)[0].metric, "passkey_acc");
  EXPECT_EQ((*rows)[1].metric, "answer_logprob");
  EXPECT_EQ((*rows)[2].metric, "answer_logprob_per_token");
  const std::vector<double> wilson = (*rows)[0].details["wilson95"];
  EXPECT_LE(wilson[0], (*rows)[0].value);
  EXPECT_GE(wilson[1], (*rows)[0].value);

  const auto path = std::filesystem::temp_directory_path() / "ds_lb.jsonl";
  std::ofstream(path)
      << R"({"context": "Paris is in France.", "input": "Where is Paris?", "answers": ["France"]})"
      << "\n"
      << R"({"context": "x", "input": "y", "answers": ["z"]})"
      << "\n";
  auto lb = CreateMetric("longctx", MetricParams(json{{"task", "longbench"},
                                                      {"file", path.string()},
                                                      {"score", "qa_f1"},
                                                      {"max_new_tokens", 4}},
                                                 "metrics[1]"));
  ASSERT_TRUE(lb.ok()) << lb.status();
  auto lb_rows = (*lb)->Run(tm->view(), nullptr);
  ASSERT_TRUE(lb_rows.ok()) << lb_rows.status();
  ASSERT_EQ(lb_rows->size(), 1u);
  EXPECT_EQ((*lb_rows)[0].n, 2);
  EXPECT_GE((*lb_rows)[0].value, 0.0);
  EXPECT_LE((*lb_rows)[0].value, 1.0);
}

TEST(LongctxMetricTest, BadParametersNameThePath) {
  auto m = CreateMetric("longctx", MetricParams(json{{"task", "longbench"},
                                                     {"file", "f"},
                                                     {"score", "bleu"}},
                                                "metrics[2]"));
  EXPECT_EQ(m.status().message(),
            "metrics[2].score: unknown score 'bleu' (valid: qa_f1, rouge, "
            "classification, code_sim)");
  auto d = CreateMetric("longctx",
                        MetricParams(json{{"depth", {0.5, 2}}}, "metrics[0]"));
  EXPECT_EQ(d.status().message(),
            "metrics[0].depth: expected numbers in [0, 1], got '2'");
  auto t = CreateMetric("longctx",
                        MetricParams(json{{"task", "passkeys"}}, "metrics[1]"));
  EXPECT_EQ(t.status().message(),
            "metrics[1].task: unknown task 'passkeys' (valid: passkey, "
            "passkey_followup, longbench)");
  auto far = CreateMetric(
      "longctx",
      MetricParams(json{{"task", "passkey_followup"}, {"pass_key_depth", 1.5}},
                   "metrics[3]"));
  EXPECT_EQ(far.status().message(),
            "metrics[3].pass_key_depth: must be in [0, 1], got 1.5");
  auto plain = CreateMetric(
      "longctx",
      MetricParams(json{{"task", "passkey"}, {"pass_key_depth", 0.5}},
                   "metrics[4]"));
  EXPECT_EQ(plain.status().message(),
            "metrics[4].pass_key_depth: applies to task passkey_followup only");
}

}  // namespace
}  // namespace dynsparse
