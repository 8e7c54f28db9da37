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
    auto p = MakePasskeyPrompt(tok, 400, depth, 7);
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
  EXPECT_FALSE(MakePasskeyPrompt(tok, 10, 0.5, 1).ok());
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
}

}  // namespace
}  // namespace dynsparse
