// Presets of real architectures: parameter counts equal the published ones,
// and random: models load (or refuse, before allocating, when too large).
#include "core/model_presets.h"

#include <cmath>

#include "core/graph/session.h"
#include "core/io/model_loader.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

TEST(ModelPresetsTest, ParameterCountsMatchPublishedModels) {
  const std::vector<std::pair<const char*, int64_t>> published = {
      {"opt-125m", 125239296},      {"opt-350m", 331196416},
      {"opt-1.3b", 1315758080},     {"opt-6.7b", 6658473984},
      {"llama-2-7b", 6738415616},   {"llama-2-13b", 13015864320},
      {"llama-2-70b", 68976648192}, {"llama-3-8b", 8030261248},
  };
  for (const auto& [name, count] : published) {
    auto config = FindModelPreset(name);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->ParameterCount(), count) << name;
  }
}

TEST(ModelPresetsTest, IssueAnchorsWeightBytes) {
  // fp16 weight bytes quoted for the decode floor: 13.48 GB and 13.32 GB.
  EXPECT_NEAR(2.0 * FindModelPreset("llama-2-7b")->ParameterCount() / 1e9,
              13.48, 0.01);
  EXPECT_NEAR(2.0 * FindModelPreset("opt-6.7b")->ParameterCount() / 1e9, 13.32,
              0.01);
}

TEST(ModelPresetsTest, UnknownPresetListsValidNames) {
  const auto config = FindModelPreset("llama-9-1t");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("unknown model preset 'llama-9-1t' "
                                           "(valid: opt-125m, opt-350m"),
            absl::string_view::npos)
      << config.status();
}

TEST(RandomModelTest, ConfigOnlyLoadsNoWeights) {
  LoadOptions options;
  options.config_only = true;
  auto model = LoadModel("random:opt-175b", options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.hidden_size, 12288);
  EXPECT_EQ(model->config.num_layers, 96);
  EXPECT_TRUE(model->weights.layers.empty());
  EXPECT_EQ(model->source, "random:opt-175b");
}

TEST(RandomModelTest, RefusesWeightsThatDoNotFitBeforeAllocating) {
  auto model = LoadModel("random:opt-175b", LoadOptions{});  // ~700 GB in f32
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(
      model.status().message().find("random:opt-175b: random weights need"),
      absl::string_view::npos)
      << model.status();
}

TEST(RandomModelTest, ConfigJsonPathRunsAForward) {
  const std::string config =
      testing::FixturePath("models/llama-gqa-llama3rope/config.json");
  LoadOptions options;
  options.dtype = DType::kBF16;
  auto model = LoadModel("random:" + config, options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.num_kv_heads, 2);
  EXPECT_EQ(model->weights.layers[0].wq.dtype(), DType::kBF16);
  CpuBackend backend(1);
  DenseMethod dense;
  Session session(model->config, model->weights, backend, dense, 8);
  const std::vector<int32_t> ids = {1, 2, 3, 4};
  auto logits = session.Forward(ids, 3);
  ASSERT_TRUE(logits.ok()) << logits.status();
  for (float v : logits->ToF32Vector()) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace dynsparse
