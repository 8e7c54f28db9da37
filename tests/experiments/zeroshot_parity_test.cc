// Zero-shot parity: per-request continuation log-likelihoods, is_greedy and
// per-document acc / acc_norm of the C++ zeroshot path equal those of the
// Python re-implementation of lm-eval's scoring with HF transformers
// (tools/parity/lm_eval_reference.py score), on >= 200 documents each of
// piqa, hellaswag and winogrande.
#include <filesystem>
#include <fstream>

#include "datasets/tasks/task.h"
#include "experiments/metrics/zeroshot.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/experiments/metric_test_model.h"

namespace dynsparse {
namespace {

class ZeroshotParityTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ZeroshotParityTest, MatchesHfReference) {
  DS_REQUIRE_DATA();
  const std::string path = testing::FixturePath(
      absl::StrCat("zeroshot/tiny-llama-chat/", GetParam(), ".json"));
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path
                 << " is missing: run tools/parity/lm_eval_reference.py score";
  }
  std::ifstream in(path);
  const nlohmann::json ref = nlohmann::json::parse(in);
  auto tm = testing::OpenTinyLlama();
  ASSERT_NE(tm, nullptr);
  auto task = FindTask(GetParam());
  ASSERT_TRUE(task.ok());
  auto docs = LoadTaskDocs(**task);
  ASSERT_TRUE(docs.ok()) << docs.status();
  const nlohmann::json& ref_docs = ref["docs"];
  ASSERT_GE(ref_docs.size(), 200u);

  ZeroshotOptions options;
  options.limit = static_cast<int64_t>(ref_docs.size());
  options.max_length = ref["max_length"].get<int64_t>();
  auto score = EvaluateTask(tm->view(), **task, *docs, options, nullptr);
  ASSERT_TRUE(score.ok()) << score.status();
  ASSERT_EQ(score->docs.size(), ref_docs.size());

  double worst = 0;
  for (size_t d = 0; d < ref_docs.size(); ++d) {
    SCOPED_TRACE(absl::StrCat(GetParam(), " doc ", d));
    const nlohmann::json& want = ref_docs[d];
    const DocScore& got = score->docs[d];
    const auto requests = BuildRequests(**task, *docs, d, 0, nullptr);
    ASSERT_EQ(got.results.size(), want["requests"].size());
    for (size_t r = 0; r < got.results.size(); ++r) {
      const nlohmann::json& w = want["requests"][r];
      EXPECT_EQ(requests[r].context, w["context"].get<std::string>());
      EXPECT_EQ(requests[r].continuation, w["continuation"].get<std::string>());
      const TokenizedRequest enc =
          EncodeRequest(*tm->tokenizer, requests[r], false);
      EXPECT_EQ(enc.context, w["context_tokens"].get<std::vector<int32_t>>());
      EXPECT_EQ(enc.continuation,
                w["continuation_tokens"].get<std::vector<int32_t>>());
      const double want_ll = w["logprob"].get<double>();
      EXPECT_NEAR(got.results[r].logprob, want_ll, 1e-4) << "request " << r;
      worst = std::max(worst, std::abs(got.results[r].logprob - want_ll));
      EXPECT_EQ(got.results[r].is_greedy, w["is_greedy"].get<bool>());
    }
    EXPECT_EQ(got.gold, want["gold"].get<int>());
    EXPECT_EQ(got.pred, want["pred"].get<int>());
    EXPECT_EQ(got.pred_norm, want["pred_norm"].get<int>());
  }
  EXPECT_DOUBLE_EQ(score->acc, ref["acc"].get<double>());
  if (!ref["acc_norm"].is_null()) {
    EXPECT_DOUBLE_EQ(score->acc_norm, ref["acc_norm"].get<double>());
  }
  std::cerr << GetParam() << ": " << ref_docs.size() << " docs, "
            << score->requests << " requests, max |dll| " << worst << ", acc "
            << score->acc << " (ref " << ref["acc"] << ")\n";
}

INSTANTIATE_TEST_SUITE_P(Tasks, ZeroshotParityTest,
                         ::testing::Values("piqa", "hellaswag", "winogrande"));

}  // namespace
}  // namespace dynsparse
