// LoadHfModel end to end on tiny generated checkpoints: every tensor lands in
// the right ModelWeights slot with the right shape, dtype and values.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/io/model_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/io/temp_dir.h"
#include "tests/io/tiny_checkpoints.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::MakeTinyLlama;
using ::dynsparse::testing::MakeTinyOpt;
using ::dynsparse::testing::StTensor;
using ::dynsparse::testing::TempDir;
using ::dynsparse::testing::TinyCheckpoint;
using ::dynsparse::testing::TinyLlamaSpec;
using ::dynsparse::testing::TinyOptSpec;
using ::testing::HasSubstr;

std::string MessageOf(const absl::Status& status) {
  return std::string(status.message());
}

class HfModelTest : public ::testing::Test {
 protected:
  absl::StatusOr<LoadedModel> Load(const TinyCheckpoint& checkpoint,
                                   DType dtype = DType::kF32) {
    testing::WriteHfFolder(dir_.path(), checkpoint);
    return LoadHfModel(dir_.path(), LoadOptions{dtype});
  }
  // `tensor` holds exactly what the checkpoint stored under `name`.
  static void ExpectHolds(const TinyCheckpoint& checkpoint,
                          const std::string& name, const Tensor& tensor) {
    ASSERT_FALSE(tensor.empty()) << name;
    EXPECT_EQ(tensor.ToF32Vector(), checkpoint.Values(name)) << name;
  }

  TempDir dir_;
};

TEST_F(HfModelTest, LlamaTensorsLandInTheirSlots) {
  const TinyCheckpoint ckpt = MakeTinyLlama({});
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelWeights& w = model->weights;
  EXPECT_EQ(model->source, dir_.path());
  EXPECT_EQ(model->checkpoint_bytes, ckpt.TotalBytes());
  EXPECT_EQ(model->config.kv_dim(), 8);
  ExpectHolds(ckpt, "model.embed_tokens.weight", w.tok_embed);
  ExpectHolds(ckpt, "model.norm.weight", w.final_norm_w);
  ExpectHolds(ckpt, "lm_head.weight", w.lm_head);
  EXPECT_TRUE(w.pos_embed.empty() && w.project_in.empty());
  ASSERT_EQ(w.layers.size(), 2u);
  const LayerWeights& l = w.layers[1];
  const std::string p = "model.layers.1.";
  ExpectHolds(ckpt, p + "input_layernorm.weight", l.attn_norm_w);
  ExpectHolds(ckpt, p + "self_attn.q_proj.weight", l.wq);
  ExpectHolds(ckpt, p + "self_attn.k_proj.weight", l.wk);
  ExpectHolds(ckpt, p + "self_attn.v_proj.weight", l.wv);
  ExpectHolds(ckpt, p + "self_attn.o_proj.weight", l.wo);
  ExpectHolds(ckpt, p + "post_attention_layernorm.weight", l.mlp_norm_w);
  ExpectHolds(ckpt, p + "mlp.gate_proj.weight", l.w_gate);
  ExpectHolds(ckpt, p + "mlp.up_proj.weight", l.w_up);
  ExpectHolds(ckpt, p + "mlp.down_proj.weight", l.w_down);
  EXPECT_EQ(l.wk.shape(), (Shape{8, 16}));
  EXPECT_EQ(l.wo.shape(), (Shape{16, 16}));
  EXPECT_EQ(l.w_down.shape(), (Shape{16, 24}));
  EXPECT_TRUE(l.bq.empty() && l.bo.empty() && l.b_up.empty());
  EXPECT_TRUE(l.attn_norm_b.empty());
}

TEST_F(HfModelTest, TiedLmHeadAliasesTheEmbedding) {
  TinyLlamaSpec spec;
  spec.tied = true;
  TinyCheckpoint ckpt = MakeTinyLlama(spec);
  ASSERT_EQ(ckpt.Find("lm_head.weight"), nullptr);
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->weights.lm_head.raw_data(),
            model->weights.tok_embed.raw_data());
}

TEST_F(HfModelTest, ExtraTensorsAreIgnored) {
  TinyCheckpoint ckpt = MakeTinyLlama({});
  ckpt.tensors.push_back(testing::F32Tensor(
      "model.layers.0.self_attn.rotary_emb.inv_freq", {2}, {1, 0.01f}));
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  EXPECT_TRUE(model.ok()) << model.status();
}

TEST_F(HfModelTest, ConvertsToBF16AtLoad) {
  const TinyCheckpoint ckpt = MakeTinyLlama({});
  absl::StatusOr<LoadedModel> model = Load(ckpt, DType::kBF16);
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor& wq = model->weights.layers[0].wq;
  EXPECT_EQ(wq.dtype(), DType::kBF16);
  EXPECT_EQ(model->weights.final_norm_w.dtype(), DType::kBF16);
  const std::vector<float> stored =
      ckpt.Values("model.layers.0.self_attn.q_proj.weight");
  for (size_t i = 0; i < stored.size(); ++i) {
    ASSERT_EQ(wq.data<uint16_t>()[i], F32ToBF16(stored[i])) << i;
  }
}

TEST_F(HfModelTest, BF16CheckpointLoadsAsF32) {
  TinyCheckpoint ckpt = MakeTinyLlama({});
  const std::vector<float> stored = ckpt.Values("model.norm.weight");
  ckpt.StoreAsBF16();
  absl::StatusOr<LoadedModel> model = Load(ckpt, DType::kF32);
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor& norm = model->weights.final_norm_w;
  EXPECT_EQ(norm.dtype(), DType::kF32);
  for (size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(norm.data<float>()[i], BF16ToF32(F32ToBF16(stored[i])));
  }
}

TEST_F(HfModelTest, LlamaWithAllBiases) {
  TinyLlamaSpec spec;
  spec.attention_bias = spec.mlp_bias = true;
  const TinyCheckpoint ckpt = MakeTinyLlama(spec);
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  ASSERT_TRUE(model.ok()) << model.status();
  const LayerWeights& l = model->weights.layers[0];
  ExpectHolds(ckpt, "model.layers.0.self_attn.k_proj.bias", l.bk);
  ExpectHolds(ckpt, "model.layers.0.self_attn.o_proj.bias", l.bo);
  ExpectHolds(ckpt, "model.layers.0.mlp.gate_proj.bias", l.b_gate);
  ExpectHolds(ckpt, "model.layers.0.mlp.down_proj.bias", l.b_down);
}

TEST_F(HfModelTest, Qwen2LoadsQkvBiasesOnly) {
  TinyLlamaSpec spec;
  spec.architecture = "Qwen2ForCausalLM";
  const TinyCheckpoint ckpt = MakeTinyLlama(spec);
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  ASSERT_TRUE(model.ok()) << model.status();
  const LayerWeights& l = model->weights.layers[1];
  ExpectHolds(ckpt, "model.layers.1.self_attn.q_proj.bias", l.bq);
  ExpectHolds(ckpt, "model.layers.1.self_attn.v_proj.bias", l.bv);
  EXPECT_EQ(l.bk.shape(), (Shape{8}));
  EXPECT_TRUE(l.bo.empty());
}

TEST_F(HfModelTest, MistralLoads) {
  TinyLlamaSpec spec;
  spec.architecture = "MistralForCausalLM";
  TinyCheckpoint ckpt = MakeTinyLlama(spec);
  ckpt.config["sliding_window"] = 16;
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.sliding_window, 16);
}

TEST_F(HfModelTest, OptPreLayerNormTied) {
  const TinyCheckpoint ckpt = MakeTinyOpt({});
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelWeights& w = model->weights;
  const std::string p = "model.decoder.";
  ExpectHolds(ckpt, p + "embed_tokens.weight", w.tok_embed);
  ExpectHolds(ckpt, p + "embed_positions.weight", w.pos_embed);
  EXPECT_EQ(w.pos_embed.shape(), (Shape{26, 16}));
  ExpectHolds(ckpt, p + "final_layer_norm.weight", w.final_norm_w);
  ExpectHolds(ckpt, p + "final_layer_norm.bias", w.final_norm_b);
  EXPECT_EQ(w.lm_head.raw_data(), w.tok_embed.raw_data());
  EXPECT_TRUE(w.project_in.empty() && w.project_out.empty());
  const LayerWeights& l = w.layers[1];
  const std::string q = p + "layers.1.";
  ExpectHolds(ckpt, q + "self_attn.q_proj.weight", l.wq);
  ExpectHolds(ckpt, q + "self_attn.q_proj.bias", l.bq);
  ExpectHolds(ckpt, q + "self_attn.out_proj.weight", l.wo);
  ExpectHolds(ckpt, q + "self_attn.out_proj.bias", l.bo);
  ExpectHolds(ckpt, q + "self_attn_layer_norm.weight", l.attn_norm_w);
  ExpectHolds(ckpt, q + "self_attn_layer_norm.bias", l.attn_norm_b);
  ExpectHolds(ckpt, q + "fc1.weight", l.w_up);
  ExpectHolds(ckpt, q + "fc1.bias", l.b_up);
  ExpectHolds(ckpt, q + "fc2.weight", l.w_down);
  ExpectHolds(ckpt, q + "fc2.bias", l.b_down);
  ExpectHolds(ckpt, q + "final_layer_norm.weight", l.mlp_norm_w);
  ExpectHolds(ckpt, q + "final_layer_norm.bias", l.mlp_norm_b);
  EXPECT_TRUE(l.w_gate.empty());
}

TEST_F(HfModelTest, OptPostLayerNormWithProjectionAndBarePrefix) {
  TinyOptSpec spec;
  spec.pre_norm = false;
  spec.word_embed_proj_dim = 8;
  spec.tied = false;
  spec.prefix = "decoder.";  // Some OPT exports drop the "model." level.
  const TinyCheckpoint ckpt = MakeTinyOpt(spec);
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelWeights& w = model->weights;
  EXPECT_EQ(w.tok_embed.shape(), (Shape{40, 8}));
  ExpectHolds(ckpt, "decoder.project_in.weight", w.project_in);
  ExpectHolds(ckpt, "decoder.project_out.weight", w.project_out);
  EXPECT_EQ(w.project_in.shape(), (Shape{16, 8}));
  EXPECT_EQ(w.project_out.shape(), (Shape{8, 16}));
  EXPECT_TRUE(w.final_norm_w.empty() && w.final_norm_b.empty());
  ExpectHolds(ckpt, "lm_head.weight", w.lm_head);
  EXPECT_EQ(w.lm_head.shape(), (Shape{40, 8}));
}

TEST_F(HfModelTest, ShardedCheckpoint) {
  const TinyCheckpoint ckpt = MakeTinyLlama({});
  testing::WriteShardedHfFolder(dir_.path(), ckpt, 3);
  absl::StatusOr<LoadedModel> model =
      LoadHfModel(dir_.path(), LoadOptions{DType::kF32});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->checkpoint_bytes, ckpt.TotalBytes());
  ExpectHolds(ckpt, "model.layers.1.mlp.up_proj.weight",
              model->weights.layers[1].w_up);
  ExpectHolds(ckpt, "lm_head.weight", model->weights.lm_head);
}

// --- Bad input.

TEST_F(HfModelTest, MissingTensorIsNamed) {
  TinyCheckpoint ckpt = MakeTinyLlama({});
  ckpt.Remove("model.layers.1.mlp.up_proj.weight");
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(MessageOf(model.status()),
              HasSubstr("model.safetensors: tensor "
                        "'model.layers.1.mlp.up_proj.weight': missing"));
}

TEST_F(HfModelTest, MissingUntiedLmHead) {
  TinyOptSpec spec;
  spec.tied = false;
  TinyCheckpoint ckpt = MakeTinyOpt(spec);
  ckpt.Remove("lm_head.weight");
  EXPECT_THAT(MessageOf(Load(ckpt).status()),
              HasSubstr("tensor 'lm_head.weight': missing"));
}

TEST_F(HfModelTest, WrongShapeNamesTensorAndConfigFields) {
  TinyLlamaSpec spec;
  spec.hidden = 64;
  spec.heads = 8;
  spec.kv_heads = 2;
  TinyCheckpoint ckpt = MakeTinyLlama(spec);
  // As if the checkpoint were MHA: k_proj [64,64] instead of [16,64].
  const std::string name = "model.layers.1.self_attn.k_proj.weight";
  *ckpt.Find(name) =
      testing::F32Tensor(name, {64, 64}, std::vector<float>(64 * 64, 0.5f));
  absl::StatusOr<LoadedModel> model = Load(ckpt);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(model.status()),
              HasSubstr("model.safetensors: tensor "
                        "'model.layers.1.self_attn.k_proj.weight': shape "
                        "[64,64], expected [16,64] (num_key_value_heads=2, "
                        "head_dim=8)"));
}

TEST_F(HfModelTest, WrongOptPositionTableShape) {
  TinyCheckpoint ckpt = MakeTinyOpt({});
  const std::string name = "model.decoder.embed_positions.weight";
  *ckpt.Find(name) =
      testing::F32Tensor(name, {24, 16}, std::vector<float>(24 * 16, 0));
  EXPECT_THAT(MessageOf(Load(ckpt).status()),
              HasSubstr("tensor 'model.decoder.embed_positions.weight': shape "
                        "[24,16], expected [26,16] "
                        "(max_position_embeddings=24 + offset 2"));
}

TEST_F(HfModelTest, UnsupportedWeightDTypeIsNamed) {
  TinyCheckpoint ckpt = MakeTinyLlama({});
  StTensor* norm = ckpt.Find("model.norm.weight");
  norm->dtype = "I32";  // Same byte size, wrong kind.
  EXPECT_THAT(MessageOf(Load(ckpt).status()),
              HasSubstr("tensor 'model.norm.weight': dtype I32 cannot be "
                        "loaded as f32"));
  norm->dtype = "U8";
  norm->bytes.resize(16);
  EXPECT_THAT(MessageOf(Load(ckpt).status()),
              HasSubstr("tensor 'model.norm.weight': unsupported dtype U8"));
}

TEST_F(HfModelTest, ConfigErrorsNameConfigJson) {
  TinyCheckpoint ckpt = MakeTinyLlama({});
  ckpt.config.erase("num_hidden_layers");
  EXPECT_THAT(MessageOf(Load(ckpt).status()),
              HasSubstr("config.json: field 'num_hidden_layers': missing"));
}

TEST_F(HfModelTest, MissingConfigJson) {
  absl::StatusOr<LoadedModel> model =
      LoadHfModel(dir_.path(), LoadOptions{DType::kF32});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(MessageOf(model.status()), HasSubstr("config.json"));
}

TEST_F(HfModelTest, IdDTypeIsNotAWeightDType) {
  EXPECT_THAT(MessageOf(Load(MakeTinyLlama({}), DType::kI32).status()),
              HasSubstr("weights must load as f32, f16 or bf16"));
}

TEST_F(HfModelTest, LoadModelDispatchesOnPath) {
  const TinyCheckpoint ckpt = MakeTinyOpt({});
  testing::WriteHfFolder(dir_.path(), ckpt);
  absl::StatusOr<LoadedModel> model = LoadModel(dir_.path(), LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.family, ModelFamily::kOpt);

  absl::StatusOr<LoadedModel> file =
      LoadModel(dir_.File("config.json"), LoadOptions{});
  EXPECT_THAT(MessageOf(file.status()),
              HasSubstr("config.json: not a model: expected a Hugging Face "
                        "model folder or a llama2.c .bin checkpoint"));
  absl::StatusOr<LoadedModel> missing =
      LoadModel(dir_.File("nothing"), LoadOptions{});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  // .bin goes to the llama2.c loader, which names its own format.
  testing::WriteFileOrDie(dir_.File("model.bin"), "short");
  EXPECT_THAT(MessageOf(LoadModel(dir_.File("model.bin"), {}).status()),
              HasSubstr("llama2.c header"));
}

}  // namespace
}  // namespace dynsparse
