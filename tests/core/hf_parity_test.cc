// Parity with Hugging Face transformers on the committed fixture models
// (tools/fixtures/make_model_fixtures.py): full-forward logits, KV-cache
// decode logits and sliding-window perplexity must match HF's outputs.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io/model_loader.h"
#include "core/io/safetensors.h"
#include "experiments/metrics/perplexity.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

namespace fs = std::filesystem;

constexpr float kLogitTolerance = 1e-4f;  // f32, absolute

std::vector<std::string> FixtureModels() {
  std::vector<std::string> names;
  const fs::path root = testing::FixturePath("models");
  if (!fs::is_directory(root)) return names;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "reference.safetensors")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

std::vector<int32_t> LoadIds(const SafetensorsFile& file, const char* name) {
  auto t = file.Load(name);
  EXPECT_TRUE(t.ok()) << t.status();
  const std::vector<float> values = t->ToF32Vector();
  return std::vector<int32_t>(values.begin(), values.end());
}

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  }
  return worst;
}

class HfParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = testing::FixturePath("models/" + GetParam());
    // Reference models (models/ref-*) keep their weights out of tests/fixtures:
    // reference.json's "model_dir" names the repo folder to load.
    std::string model_dir = dir_;
    const nlohmann::json ref = ReadJson(dir_ + "/reference.json");
    if (ref.contains("model_dir")) {
      model_dir = testing::SourcePath(ref["model_dir"].get<std::string>());
    }
    // Trained weights: the generator derives the tolerance from HF's own
    // float32-vs-float64 difference.
    tolerance_ = ref.value("logit_tolerance", kLogitTolerance);
    auto model = LoadModel(model_dir, LoadOptions{});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::make_unique<LoadedModel>(*std::move(model));
    auto reference = SafetensorsFile::Open(dir_ + "/reference.safetensors");
    ASSERT_TRUE(reference.ok()) << reference.status();
    reference_ = std::make_unique<SafetensorsFile>(*std::move(reference));
  }

  std::string dir_;
  float tolerance_ = kLogitTolerance;
  std::unique_ptr<LoadedModel> model_;
  std::unique_ptr<SafetensorsFile> reference_;
  CpuBackend backend_{2};
  DenseMethod dense_;
};

TEST_P(HfParityTest, FullForwardLogitsMatch) {
  const std::vector<int32_t> ids = LoadIds(*reference_, "input_ids");
  Session session(model_->config, model_->weights, backend_, dense_,
                  static_cast<int64_t>(ids.size()));
  auto logits = session.Forward(ids, 0);
  ASSERT_TRUE(logits.ok()) << logits.status();
  auto expected = reference_->Load("logits", DType::kF32);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const float diff = MaxAbsDiff(logits->ToF32Vector(), expected->ToF32Vector());
  RecordProperty("max_abs_logit_diff", std::to_string(diff));
  std::cout << GetParam() << ": max |logit - HF| = " << diff << "\n";
  EXPECT_LT(diff, tolerance_);
}

TEST_P(HfParityTest, KvCacheDecodeLogitsMatch) {
  const std::vector<int32_t> ids = LoadIds(*reference_, "input_ids");
  const size_t prefill = 32;
  Session session(model_->config, model_->weights, backend_, dense_,
                  static_cast<int64_t>(ids.size()));
  ASSERT_TRUE(
      session.Forward(absl::MakeConstSpan(ids).subspan(0, prefill), prefill - 1)
          .ok());
  std::vector<float> got;
  for (size_t t = prefill; t < ids.size(); ++t) {
    auto step = session.Forward(absl::MakeConstSpan(&ids[t], 1), 0);
    ASSERT_TRUE(step.ok()) << step.status();
    const std::vector<float> row = step->ToF32Vector();
    got.insert(got.end(), row.begin(), row.end());
  }
  auto expected = reference_->Load("decode_logits", DType::kF32);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const float diff = MaxAbsDiff(got, expected->ToF32Vector());
  std::cout << GetParam() << ": max |decode logit - HF| = " << diff << "\n";
  EXPECT_LT(diff, tolerance_);
}

TEST_P(HfParityTest, SlidingWindowPerplexityMatches) {
  const nlohmann::json ref = ReadJson(dir_ + "/reference.json")["perplexity"];
  const std::vector<int32_t> ids = LoadIds(*reference_, "ppl_ids");
  const PerplexityOptions options{.context = ref["context"].get<int64_t>(),
                                  .stride = ref["stride"].get<int64_t>()};
  Session session(model_->config, model_->weights, backend_, dense_,
                  options.context);
  auto result = SlidingWindowPerplexity(session, ids, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->tokens, ref["tokens"].get<int64_t>());
  EXPECT_EQ(result->windows, ref["windows"].get<int64_t>());
  const double expected_ppl = ref["ppl"].get<double>();
  std::cout << GetParam() << ": ppl " << result->perplexity() << " vs HF "
            << expected_ppl << " (rel "
            << std::fabs(result->perplexity() / expected_ppl - 1) << ")\n";
  EXPECT_NEAR(result->perplexity(), expected_ppl, 1e-4 * expected_ppl);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfParityTest,
                         ::testing::ValuesIn(FixtureModels()),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The fixtures are committed: their absence is a broken checkout, not a skip.
TEST(HfParityFixturesTest, AllFixtureModelsArePresent) {
  const std::vector<std::string> names = FixtureModels();
  for (const char* expected :
       {"opt-prenorm", "opt-postln-proj", "llama-mha-tied",
        "llama-gqa-llama3rope", "llama-linear-bias", "mistral", "qwen2",
        "llama-sharded", "tiny-llama-chat", "ref-llama", "ref-opt"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end())
        << expected;
  }
}

}  // namespace
}  // namespace dynsparse
