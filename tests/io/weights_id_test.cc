// Weights ids (core/io/weights_id.h): the same checkpoint gives the same id
// whatever dtype it loads in and however it is sharded... and any changed
// tensor, another architecture or another random seed gives another.
#include "core/io/weights_id.h"

#include <string>

#include "core/io/model_loader.h"
#include "gtest/gtest.h"
#include "tests/io/temp_dir.h"
#include "tests/io/tiny_checkpoints.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::MakeTinyLlama;
using ::dynsparse::testing::MakeTinyOpt;
using ::dynsparse::testing::TempDir;
using ::dynsparse::testing::TinyCheckpoint;
using ::dynsparse::testing::WriteHfFolder;

std::string IdOf(const TinyCheckpoint& checkpoint, DType dtype = DType::kF32) {
  TempDir dir;
  WriteHfFolder(dir.path(), checkpoint);
  LoadOptions options;
  options.dtype = dtype;
  absl::StatusOr<LoadedModel> model = LoadHfModel(dir.path(), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? model->config.weights_id : "";
}

TEST(WeightsIdTest, SameCheckpointSameIdInEveryLoadDtype) {
  const TinyCheckpoint llama = MakeTinyLlama({});
  const std::string id = IdOf(llama);
  EXPECT_FALSE(id.empty());
  EXPECT_EQ(IdOf(llama), id);
  EXPECT_EQ(IdOf(llama, DType::kF16), id);
  EXPECT_EQ(IdOf(llama, DType::kBF16), id);
}

TEST(WeightsIdTest, OneChangedWeightChangesTheId) {
  const TinyCheckpoint base = MakeTinyLlama({});
  const std::string id = IdOf(base);
  for (const char* name : {"model.layers.1.mlp.down_proj.weight",
                           "model.embed_tokens.weight", "lm_head.weight"}) {
    TinyCheckpoint tuned = base;
    ASSERT_NE(tuned.Find(name), nullptr) << name;
    std::string& bytes = tuned.Find(name)->bytes;
    bytes[bytes.size() / 2] ^= 0x01;  // One bit of one value.
    EXPECT_NE(IdOf(tuned), id) << name;
  }
}

TEST(WeightsIdTest, OtherArchitecturesAndStoredDtypesDiffer) {
  const TinyCheckpoint llama = MakeTinyLlama({});
  TinyCheckpoint bf16 = llama;
  bf16.StoreAsBF16();
  EXPECT_NE(IdOf(bf16), IdOf(llama));  // Re-saved bytes: another file.
  EXPECT_NE(IdOf(MakeTinyOpt({})), IdOf(llama));
}

TEST(WeightsIdTest, RandomWeightsDependOnSpecAndSeed) {
  EXPECT_EQ(WeightsIdOfRandom("opt-125m", 1), WeightsIdOfRandom("opt-125m", 1));
  EXPECT_NE(WeightsIdOfRandom("opt-125m", 1), WeightsIdOfRandom("opt-125m", 2));
  EXPECT_NE(WeightsIdOfRandom("opt-125m", 1), WeightsIdOfRandom("opt-350m", 1));
  LoadOptions options;
  options.config_only = true;
  options.random_seed = 7;
  absl::StatusOr<LoadedModel> model = LoadModel("random:opt-125m", options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.weights_id, WeightsIdOfRandom("opt-125m", 7));
}

TEST(WeightsIdTest, SampledBytesCoverBothEndsAndTheMiddle) {
  std::string bytes(1 << 20, '\0');
  const auto id_of = [&] {
    return WeightsIdOfBytes(absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  };
  const std::string id = id_of();
  for (size_t at : {size_t{0}, bytes.size() / 2, bytes.size() - 1}) {
    bytes[at] = 1;
    EXPECT_NE(id_of(), id) << "byte " << at;
    bytes[at] = 0;
  }
  EXPECT_EQ(id_of(), id);
}

}  // namespace
}  // namespace dynsparse
