// Zero-shot parity: per-request continuation log-likelihoods, is_greedy and
// per-document acc / acc_norm of the C++ zeroshot path equal those of the
// Python re-implementation of lm-eval's scoring with HF transformers
// (tools/parity/lm_eval_reference.py score), on 200 documents each of piqa,
// hellaswag and winogrande for the tiny-llama-chat fixture, and on the first
// documents of the same fixtures for the trained models/ref-llama (its CPU
// forward passes are ~100x dearer).
#include <cstring>
#include <filesystem>
#include <fstream>

#include "datasets/tasks/task.h"
#include "experiments/metrics/zeroshot.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/experiments/metric_test_model.h"

namespace dynsparse {
namespace {

struct ParityCase {
  const char* model;      // Fixture folder name under tests/fixtures/zeroshot.
  const char* model_dir;  // Repository-relative model folder.
  const char* task;
  size_t docs;  // Documents compared (0 = all in the fixture).
};

void PrintTo(const ParityCase& c, std::ostream* os) {
  *os << c.model << "/" << c.task;
}

// The fixture script's checksum: sum(word_i * (2i + 1)) mod 2^64 over the
// file's little-endian 64-bit words.
std::string FileChecksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  bytes.resize((bytes.size() + 7) / 8 * 8, '\0');
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes.size() / 8; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + 8 * i, 8);
    sum += w * (2 * static_cast<uint64_t>(i) + 1);
  }
  return std::to_string(sum);
}

class ZeroshotParityTest : public ::testing::TestWithParam<ParityCase> {};

TEST_P(ZeroshotParityTest, MatchesHfReference) {
  DS_REQUIRE_DATA();
  const ParityCase& c = GetParam();
  const std::string path = testing::FixturePath(
      absl::StrCat("zeroshot/", c.model, "/", c.task, ".json"));
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path
                 << " is missing: run tools/parity/lm_eval_reference.py score";
  }
  const std::string model_dir = testing::SourcePath(c.model_dir);
  if (!std::filesystem::exists(model_dir + "/model.safetensors")) {
    GTEST_SKIP() << model_dir << " is not in this checkout";
  }
  std::ifstream in(path);
  const nlohmann::json ref = nlohmann::json::parse(in);
  if (FileChecksum(model_dir + "/model.safetensors") !=
      ref["model_checksum"].get<std::string>()) {
    GTEST_SKIP() << model_dir << "/model.safetensors changed since " << path
                 << " was made: re-run tools/parity/lm_eval_reference.py score";
  }
  auto tm = testing::OpenModelDir(model_dir);
  ASSERT_NE(tm, nullptr);
  auto task = FindTask(c.task);
  ASSERT_TRUE(task.ok());
  auto docs = LoadTaskDocs(**task);
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_GE(ref["docs"].size(), 200u);
  size_t n = c.docs == 0 ? ref["docs"].size() : c.docs;
  if (testing::kSanitizedBuild) n = std::min<size_t>(n, 4);
  const nlohmann::json ref_docs(ref["docs"].begin(), ref["docs"].begin() + n);

  ZeroshotOptions options;
  options.limit = static_cast<int64_t>(n);
  options.max_length = ref["max_length"].get<int64_t>();
  auto score = EvaluateTask(tm->view(), **task, *docs, options, nullptr);
  ASSERT_TRUE(score.ok()) << score.status();
  ASSERT_EQ(score->docs.size(), ref_docs.size());

  double worst = 0, worst_rel = 0;
  int64_t over_abs = 0;  // Requests beyond 1e-4 (within 1e-7 relative).
  for (size_t d = 0; d < ref_docs.size(); ++d) {
    SCOPED_TRACE(absl::StrCat(c.model, "/", c.task, " doc ", d));
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
      // 1e-4, or the float32 resolution of the reference's sum where that
      // is coarser: lm-eval's log_softmax runs in float32, whose logsumexp
      // is good to ~1e-7 relative, so a 400-token continuation (|ll| ~ 2800)
      // carries ~1e-4 of reference rounding by itself.
      const double diff = std::abs(got.results[r].logprob - want_ll);
      EXPECT_LE(diff, std::max(1e-4, 1e-7 * std::abs(want_ll)))
          << "request " << r << ": " << got.results[r].logprob << " vs "
          << want_ll;
      worst = std::max(worst, diff);
      worst_rel = std::max(worst_rel, diff / std::abs(want_ll));
      over_abs += diff > 1e-4;
      EXPECT_EQ(got.results[r].is_greedy, w["is_greedy"].get<bool>());
    }
    EXPECT_EQ(got.gold, want["gold"].get<int>());
    EXPECT_EQ(got.pred, want["pred"].get<int>());
    EXPECT_EQ(got.pred_norm, want["pred_norm"].get<int>());
  }
  if (n == ref["docs"].size()) {
    EXPECT_DOUBLE_EQ(score->acc, ref["acc"].get<double>());
    if (!ref["acc_norm"].is_null()) {
      EXPECT_DOUBLE_EQ(score->acc_norm, ref["acc_norm"].get<double>());
    }
  }
  std::cerr << c.model << "/" << c.task << ": " << ref_docs.size() << " docs, "
            << score->requests << " requests, max |dll| " << worst
            << ", max |dll|/|ll| " << worst_rel << ", " << over_abs
            << " beyond 1e-4, acc " << score->acc << " (ref " << ref["acc"]
            << ")\n";
}

constexpr char kTiny[] = "tests/fixtures/models/tiny-llama-chat";
constexpr char kRef[] = "models/ref-llama";
INSTANTIATE_TEST_SUITE_P(
    Tasks, ZeroshotParityTest,
    ::testing::Values(ParityCase{"tiny-llama-chat", kTiny, "piqa", 0},
                      ParityCase{"tiny-llama-chat", kTiny, "hellaswag", 0},
                      ParityCase{"tiny-llama-chat", kTiny, "winogrande", 0},
                      ParityCase{"ref-llama", kRef, "piqa", 10},
                      ParityCase{"ref-llama", kRef, "hellaswag", 5},
                      ParityCase{"ref-llama", kRef, "winogrande", 10}));

}  // namespace
}  // namespace dynsparse
