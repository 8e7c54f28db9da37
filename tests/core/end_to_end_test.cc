// End-to-end checks on real and fixture checkpoints: llama2.c's stories260K
// reproduces its reference implementation's greedy output, the README model
// reproduces HF's greedy continuation, and a config rewritten in
// transformers-4.x style loads to the same numbers as the 5.x original.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io/model_loader.h"
#include "core/io/safetensors.h"
#include "core/tokenizer/tokenizer.h"
#include "experiments/generation.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

namespace fs = std::filesystem;

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

std::vector<int32_t> GreedyContinuation(const LoadedModel& model,
                                        const std::vector<int32_t>& prompt,
                                        int64_t new_tokens) {
  CpuBackend backend(2);
  DenseMethod dense;
  Session session(model.config, model.weights, backend, dense,
                  static_cast<int64_t>(prompt.size()) + new_tokens);
  GenerationOptions options;
  options.max_new_tokens = new_tokens;  // No stop ids: exactly new_tokens.
  auto result = Generate(session, prompt, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->tokens : std::vector<int32_t>{};
}

TEST(Stories260KTest, GreedyFromBosMatchesLlama2cGolden) {
  DS_REQUIRE_DATA();
  const std::string dir = testing::DataPath("models/llama2c_stories260K");
  auto model = LoadModel(dir + "/stories260K.bin", LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadLlama2cTokenizer(dir + "/tok512.bin", 512);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // Golden ids and text recorded in shared/data/MANIFEST.md (llama2.c's
  // doc/stories260K.md).
  const std::vector<int32_t> golden = {
      403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317,
      426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282,
      295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352};
  const std::vector<int32_t> ids =
      GreedyContinuation(*model, {1}, static_cast<int64_t>(golden.size()));
  EXPECT_EQ(ids, golden);
  std::vector<int32_t> with_bos = {1};
  with_bos.insert(with_bos.end(), ids.begin(), ids.end());
  EXPECT_EQ((*tokenizer)->Decode(with_bos, true),
            "Once upon a time, there was a little girl named Lily. She loved "
            "to play outside in the park. One day, she saw a big, r");
}

TEST(TinyLlamaChatTest, TokenizerAndGreedyContinuationMatchHf) {
  const std::string dir = testing::FixturePath("models/tiny-llama-chat");
  const nlohmann::json chat = ReadJson(dir + "/reference.json")["chat"];
  auto model = LoadModel(dir, LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadHfTokenizer(dir);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::vector<int32_t> prompt =
      (*tokenizer)->Encode(chat["prompt"].get<std::string>(), true);
  EXPECT_EQ(prompt, chat["prompt_ids"].get<std::vector<int32_t>>());
  const auto expected = chat["greedy_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(GreedyContinuation(*model, prompt, expected.size()), expected);
}

// transformers 4.x writes rope_theta/rope_scaling at top level and torch_dtype;
// 5.x writes rope_parameters and dtype. Both must load to the same model.
TEST(ConfigVersionTest, TransformersV4ConfigGivesIdenticalLogits) {
  const fs::path src = testing::FixturePath("models/llama-gqa-llama3rope");
  const fs::path tmp = fs::temp_directory_path() / "dynsparse_v4_config_test";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  fs::copy_file(src / "model.safetensors", tmp / "model.safetensors");
  nlohmann::json config = ReadJson(src / "config.json");
  ASSERT_TRUE(config.contains("rope_parameters")) << "fixture is not 5.x style";
  nlohmann::json rope = config["rope_parameters"];
  config.erase("rope_parameters");
  config["rope_theta"] = rope["rope_theta"];
  rope.erase("rope_theta");
  config["rope_scaling"] = rope;
  config["torch_dtype"] = config["dtype"];
  config.erase("dtype");
  std::ofstream(tmp / "config.json") << config.dump(2);

  auto v5 = LoadModel(src.string(), LoadOptions{});
  auto v4 = LoadModel(tmp.string(), LoadOptions{});
  ASSERT_TRUE(v5.ok()) << v5.status();
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->config.rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_EQ(v4->config.rope_theta, v5->config.rope_theta);
  const std::vector<int32_t> prompt = {5, 17, 300, 2, 41, 9};
  EXPECT_EQ(GreedyContinuation(*v4, prompt, 12),
            GreedyContinuation(*v5, prompt, 12));
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace dynsparse
