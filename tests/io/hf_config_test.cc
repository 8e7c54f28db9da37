#include "core/io/hf_config.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/io/temp_dir.h"

namespace dynsparse {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Real configs, trimmed of fields the parser ignores.
constexpr char kOpt125m[] = R"({
  "_name_or_path": "facebook/opt-125m", "activation_dropout": 0.0,
  "activation_function": "relu", "architectures": ["OPTForCausalLM"],
  "bos_token_id": 2, "do_layer_norm_before": true, "dropout": 0.1,
  "eos_token_id": 2, "ffn_dim": 3072, "hidden_size": 768,
  "max_position_embeddings": 2048, "model_type": "opt",
  "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 1,
  "prefix": "</s>", "torch_dtype": "float16", "vocab_size": 50272,
  "word_embed_proj_dim": 768})";

constexpr char kOpt350m[] = R"({
  "activation_function": "relu", "architectures": ["OPTForCausalLM"],
  "bos_token_id": 2, "do_layer_norm_before": false, "eos_token_id": 2,
  "ffn_dim": 4096, "hidden_size": 1024, "max_position_embeddings": 2048,
  "model_type": "opt", "num_attention_heads": 16, "num_hidden_layers": 24,
  "pad_token_id": 1, "torch_dtype": "float16", "vocab_size": 50272,
  "word_embed_proj_dim": 512})";

// TinyLlama-1.1B: GQA, transformers 4.x.
constexpr char kTinyLlama[] = R"({
  "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5632,
  "max_position_embeddings": 2048, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
  "vocab_size": 32000})";

// Llama-3.2-1B as transformers 4.45 writes it.
constexpr char kLlama32V4[] = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
  "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072,
  "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
                   "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192,
                   "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "vocab_size": 128256})";

// The same model as transformers 5.x writes it.
constexpr char kLlama32V5[] = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "bos_token_id": 128000, "dtype": "bfloat16",
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
  "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0,
                      "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192,
                      "rope_theta": 500000.0, "rope_type": "llama3"},
  "tie_word_embeddings": true, "vocab_size": 128256})";

constexpr char kMistral7b[] = R"({
  "architectures": ["MistralForCausalLM"], "bos_token_id": 1,
  "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
  "intermediate_size": 14336, "max_position_embeddings": 32768,
  "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
  "sliding_window": 4096, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "vocab_size": 32000})";

constexpr char kQwen2_05b[] = R"({
  "architectures": ["Qwen2ForCausalLM"], "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896,
  "intermediate_size": 4864, "max_position_embeddings": 131072,
  "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
  "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 131072,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "use_sliding_window": false, "vocab_size": 151936})";

// A small Llama config to mutate in the error tests.
constexpr char kSmallLlama[] = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
  "intermediate_size": 172, "num_attention_heads": 8,
  "num_hidden_layers": 2, "num_key_value_heads": 4, "vocab_size": 512})";

absl::StatusOr<ModelConfig> Parse(const std::string& text) {
  return ParseHfConfig(text, "config.json");
}

// kSmallLlama with `edit` (a JSON fragment) merged in, e.g. {"x": 1}.
absl::StatusOr<ModelConfig> ParseSmallLlamaWith(const std::string& edit) {
  std::string text = kSmallLlama;
  text.pop_back();  // '}'
  return Parse(text + ", " + edit.substr(1));
}

// The parse error, which must name config.json.
std::string ErrorOf(const absl::StatusOr<ModelConfig>& config) {
  EXPECT_FALSE(config.ok());
  if (config.ok()) return "";
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("config.json: "));
  return std::string(config.status().message());
}

TEST(HfConfigTest, OptPreLayerNorm) {
  absl::StatusOr<ModelConfig> c = Parse(kOpt125m);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->architecture, "OPTForCausalLM");
  EXPECT_EQ(c->model_type, "opt");
  EXPECT_EQ(c->family, ModelFamily::kOpt);
  EXPECT_EQ(c->vocab_size, 50272);
  EXPECT_EQ(c->hidden_size, 768);
  EXPECT_EQ(c->intermediate_size, 3072);
  EXPECT_EQ(c->num_layers, 12);
  EXPECT_EQ(c->num_heads, 12);
  EXPECT_EQ(c->num_kv_heads, 12);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->max_position_embeddings, 2048);
  EXPECT_EQ(c->activation, Activation::kRelu);
  EXPECT_FALSE(c->gated_mlp);
  EXPECT_TRUE(c->pre_norm);
  EXPECT_TRUE(c->final_norm);
  EXPECT_TRUE(c->layer_norm_affine);
  EXPECT_FALSE(c->has_projection());
  EXPECT_EQ(c->position_offset, 2);
  EXPECT_TRUE(c->qkv_bias && c->o_bias && c->mlp_bias);
  EXPECT_TRUE(c->tie_word_embeddings);  // OPT's default.
  EXPECT_EQ(c->bos_token_id, 2);
  EXPECT_THAT(c->eos_token_ids, ElementsAre(2));
  EXPECT_EQ(c->pad_token_id, 1);
  EXPECT_EQ(c->checkpoint_dtype, DType::kF16);
  // OPT-125m's published parameter count.
  EXPECT_EQ(c->ParameterCount(), 125239296);
}

TEST(HfConfigTest, OptPostLayerNormWithProjection) {
  absl::StatusOr<ModelConfig> c = Parse(kOpt350m);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->pre_norm);
  EXPECT_FALSE(c->final_norm);  // Post-LN OPT has no final LayerNorm.
  EXPECT_EQ(c->word_embed_proj_dim, 512);
  EXPECT_TRUE(c->has_projection());
  EXPECT_EQ(c->embed_dim(), 512);
  EXPECT_EQ(c->head_dim, 64);
}

TEST(HfConfigTest, OptTransformers5OptionsAndQuirks) {
  absl::StatusOr<ModelConfig> c = Parse(R"({
    "architectures": ["OPTForCausalLM"], "dtype": "bfloat16",
    "ffn_dim": 32, "hidden_size": 16, "max_position_embeddings": 64,
    "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 50,
    "enable_bias": false, "layer_norm_elementwise_affine": false,
    "_remove_final_layer_norm": true, "activation_function": "gelu",
    "tie_word_embeddings": false})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->checkpoint_dtype, DType::kBF16);
  EXPECT_TRUE(c->pre_norm);
  EXPECT_FALSE(c->final_norm);
  EXPECT_FALSE(c->layer_norm_affine);
  EXPECT_FALSE(c->qkv_bias || c->o_bias || c->mlp_bias);
  EXPECT_EQ(c->activation, Activation::kGelu);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_EQ(c->word_embed_proj_dim, 16);
}

TEST(HfConfigTest, LlamaWithGroupedQueryAttention) {
  absl::StatusOr<ModelConfig> c = Parse(kTinyLlama);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, ModelFamily::kLlama);
  EXPECT_EQ(c->num_heads, 32);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->kv_dim(), 256);
  EXPECT_EQ(c->intermediate_size, 5632);
  EXPECT_EQ(c->activation, Activation::kSilu);
  EXPECT_TRUE(c->gated_mlp);
  EXPECT_DOUBLE_EQ(c->norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);  // Default when absent.
  EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kNone);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_FALSE(c->qkv_bias || c->o_bias || c->mlp_bias);
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_THAT(c->eos_token_ids, ElementsAre(2));
  EXPECT_EQ(c->pad_token_id, -1);
  EXPECT_EQ(c->checkpoint_dtype, DType::kBF16);
  EXPECT_EQ(c->ParameterCount(), 1100048384);  // TinyLlama-1.1B.
}

void ExpectLlama32(const ModelConfig& c) {
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(128001, 128008, 128009));
  EXPECT_EQ(c.checkpoint_dtype, DType::kBF16);
  EXPECT_EQ(c.ParameterCount(), 1235814400);  // Llama-3.2-1B.
}

TEST(HfConfigTest, Llama3RopeScalingTransformers4) {
  absl::StatusOr<ModelConfig> c = Parse(kLlama32V4);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectLlama32(*c);
}

TEST(HfConfigTest, Llama3RopeParametersTransformers5) {
  absl::StatusOr<ModelConfig> c = Parse(kLlama32V5);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectLlama32(*c);
}

TEST(HfConfigTest, LinearRopeScalingOldAndNewKeys) {
  absl::StatusOr<ModelConfig> old_key = ParseSmallLlamaWith(
      R"({"rope_theta": 20000, "rope_scaling": {"type": "linear", "factor": 4}})");
  ASSERT_TRUE(old_key.ok()) << old_key.status();
  EXPECT_EQ(old_key->rope_scaling.kind, RopeScalingKind::kLinear);
  EXPECT_DOUBLE_EQ(old_key->rope_scaling.factor, 4.0);
  EXPECT_DOUBLE_EQ(old_key->rope_theta, 20000.0);

  absl::StatusOr<ModelConfig> new_key = ParseSmallLlamaWith(
      R"({"rope_parameters": {"rope_type": "linear", "factor": 2.0,
                              "rope_theta": 1e6}})");
  ASSERT_TRUE(new_key.ok()) << new_key.status();
  EXPECT_EQ(new_key->rope_scaling.kind, RopeScalingKind::kLinear);
  EXPECT_DOUBLE_EQ(new_key->rope_scaling.factor, 2.0);
  EXPECT_DOUBLE_EQ(new_key->rope_theta, 1e6);

  absl::StatusOr<ModelConfig> plain = ParseSmallLlamaWith(
      R"({"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->rope_scaling.kind, RopeScalingKind::kNone);
}

TEST(HfConfigTest, LlamaBiasesAndDefaults) {
  absl::StatusOr<ModelConfig> c = ParseSmallLlamaWith(
      R"({"attention_bias": true, "mlp_bias": true, "head_dim": null,
          "eos_token_id": null})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->qkv_bias && c->o_bias && c->mlp_bias);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_TRUE(c->eos_token_ids.empty());  // Explicit null: no eos.
  EXPECT_EQ(c->bos_token_id, 1);          // Absent: Llama's default.
  EXPECT_EQ(c->max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(c->norm_eps, 1e-6);
}

TEST(HfConfigTest, ExplicitHeadDimNeedNotDivideHidden) {
  absl::StatusOr<ModelConfig> c = Parse(R"({
    "architectures": ["MistralForCausalLM"], "hidden_size": 5120,
    "head_dim": 128, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 40, "num_key_value_heads": 8, "vocab_size": 131072,
    "sliding_window": null})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->q_dim(), 4096);
  EXPECT_EQ(c->sliding_window, 0);
}

TEST(HfConfigTest, Mistral) {
  absl::StatusOr<ModelConfig> c = Parse(kMistral7b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_type, "mistral");
  EXPECT_EQ(c->family, ModelFamily::kLlama);
  EXPECT_EQ(c->sliding_window, 4096);
  EXPECT_EQ(c->num_kv_heads, 8);
  EXPECT_EQ(c->max_position_embeddings, 32768);
  EXPECT_FALSE(c->qkv_bias || c->o_bias || c->mlp_bias);
  EXPECT_EQ(c->ParameterCount(), 7241732096);  // Mistral-7B-v0.1.
}

TEST(HfConfigTest, Qwen2HasQkvBiasButNoOutputBias) {
  absl::StatusOr<ModelConfig> c = Parse(kQwen2_05b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_type, "qwen2");
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_FALSE(c->mlp_bias);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->sliding_window, 0);            // use_sliding_window is false.
  EXPECT_EQ(c->ParameterCount(), 494032768);  // Qwen2-0.5B.
}

TEST(HfConfigTest, MistralAndQwen2Transformers5) {
  absl::StatusOr<ModelConfig> mistral = Parse(R"({
    "architectures": ["MistralForCausalLM"], "dtype": "bfloat16",
    "head_dim": 128, "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 32768, "sliding_window": null,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}})");
  ASSERT_TRUE(mistral.ok()) << mistral.status();
  EXPECT_EQ(mistral->checkpoint_dtype, DType::kBF16);
  EXPECT_DOUBLE_EQ(mistral->rope_theta, 1e6);
  EXPECT_EQ(mistral->sliding_window, 0);
  EXPECT_EQ(mistral->max_position_embeddings, 131072);  // Mistral default.

  absl::StatusOr<ModelConfig> qwen2 = Parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "dtype": "float16",
    "hidden_size": 896, "intermediate_size": 4864, "layer_types": [],
    "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "vocab_size": 151936,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    "use_sliding_window": false, "tie_word_embeddings": true})");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status();
  EXPECT_EQ(qwen2->checkpoint_dtype, DType::kF16);
  EXPECT_TRUE(qwen2->qkv_bias);
  EXPECT_FALSE(qwen2->o_bias);
  EXPECT_DOUBLE_EQ(qwen2->rope_theta, 1e6);
  EXPECT_EQ(qwen2->bos_token_id, -1);  // Qwen2Config has no default ids.
  EXPECT_TRUE(qwen2->eos_token_ids.empty());
}

TEST(HfConfigTest, ModelTypeStandsInForMissingArchitectures) {
  absl::StatusOr<ModelConfig> c = Parse(R"({
    "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_hidden_layers": 1, "vocab_size": 10})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->architecture, "Qwen2ForCausalLM");
}

TEST(HfConfigTest, LoadsFromFile) {
  testing::TempDir dir;
  testing::WriteFileOrDie(dir.File("config.json"), kMistral7b);
  absl::StatusOr<ModelConfig> c = LoadHfConfig(dir.File("config.json"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_window, 4096);
  absl::StatusOr<ModelConfig> missing = LoadHfConfig(dir.File("nope.json"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope.json"));
}

// --- Bad input: each error names config.json and the field.

TEST(HfConfigTest, MissingField) {
  std::string text = kOpt125m;
  const std::string field = R"("num_attention_heads": 12,)";
  text.erase(text.find(field), field.size());
  EXPECT_EQ(ErrorOf(Parse(text)),
            "config.json: field 'num_attention_heads': missing");
}

TEST(HfConfigTest, MissingNestedField) {
  EXPECT_EQ(ErrorOf(ParseSmallLlamaWith(
                R"({"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8192}})")),
            "config.json: field 'rope_scaling.low_freq_factor': missing");
}

TEST(HfConfigTest, WrongTypeOfField) {
  EXPECT_EQ(
      ErrorOf(ParseSmallLlamaWith(R"({"hidden_size": "64"})")),
      "config.json: field 'hidden_size': expected an integer, got string");
  EXPECT_EQ(ErrorOf(ParseSmallLlamaWith(R"({"tie_word_embeddings": 1})")),
            "config.json: field 'tie_word_embeddings': expected a boolean, got "
            "number");
  EXPECT_EQ(
      ErrorOf(ParseSmallLlamaWith(R"({"rope_scaling": "linear"})")),
      "config.json: field 'rope_scaling': expected an object, got string");
  EXPECT_EQ(ErrorOf(ParseSmallLlamaWith(R"({"eos_token_id": [2, "x"]})")),
            "config.json: field 'eos_token_id[1]': expected an integer, got "
            "string");
  EXPECT_EQ(ErrorOf(ParseSmallLlamaWith(R"({"num_key_value_heads": 2.5})")),
            "config.json: field 'num_key_value_heads': expected an integer, "
            "got 2.5");
}

TEST(HfConfigTest, OutOfRangeField) {
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(R"({"num_hidden_layers": 0})")),
              HasSubstr("field 'num_hidden_layers': must be in [1, "));
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(R"({"rms_norm_eps": -1})")),
              HasSubstr("field 'rms_norm_eps': must be in (0, 1)"));
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(R"({"rope_theta": 0})")),
              HasSubstr("field 'rope_theta': must be positive"));
}

TEST(HfConfigTest, UnknownArchitecture) {
  EXPECT_EQ(ErrorOf(Parse(R"({"architectures": ["GPTNeoXForCausalLM"],
                              "vocab_size": 10})")),
            "config.json: architectures[0]: unknown architecture "
            "'GPTNeoXForCausalLM' (supported: LlamaForCausalLM, "
            "MistralForCausalLM, OPTForCausalLM, Qwen2ForCausalLM)");
  EXPECT_THAT(ErrorOf(Parse(R"({"model_type": "gpt2"})")),
              HasSubstr("field 'model_type': unknown model type 'gpt2'"));
  EXPECT_EQ(ErrorOf(Parse(R"({"vocab_size": 10})")),
            "config.json: field 'architectures': missing");
  EXPECT_THAT(ErrorOf(Parse(R"({"architectures": []})")),
              HasSubstr("field 'architectures': expected a non-empty list"));
}

TEST(HfConfigTest, UnsupportedRopeType) {
  absl::StatusOr<ModelConfig> yarn = ParseSmallLlamaWith(
      R"({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}})");
  EXPECT_EQ(yarn.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(ErrorOf(yarn),
            "config.json: field 'rope_scaling.rope_type': unsupported rope "
            "type 'yarn' (supported: default, linear, llama3)");
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(
                  R"({"rope_scaling": {"type": "dynamic", "factor": 2.0}})")),
              HasSubstr("field 'rope_scaling.type': unsupported rope type "
                        "'dynamic'"));
  EXPECT_THAT(
      ErrorOf(ParseSmallLlamaWith(
          R"({"rope_parameters": {"rope_type": "longrope", "rope_theta": 1}})")),
      HasSubstr("field 'rope_parameters.rope_type': unsupported rope type "
                "'longrope'"));
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(
                  R"({"rope_parameters": {"full_attention": {}}})")),
              HasSubstr("per-layer-type RoPE parameters are not supported"));
}

TEST(HfConfigTest, NonDivisibleHeads) {
  EXPECT_EQ(ErrorOf(ParseSmallLlamaWith(R"({"num_key_value_heads": 3})")),
            "config.json: field 'num_key_value_heads': num_attention_heads 8 "
            "is not divisible by num_key_value_heads 3");
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(R"({"num_attention_heads": 7,
                                              "num_key_value_heads": 7})")),
              HasSubstr("field 'num_attention_heads': hidden_size 64 is not "
                        "divisible by num_attention_heads 7"));
  std::string opt = kOpt125m;
  opt.replace(opt.find(R"("num_attention_heads": 12)"), 25,
              R"("num_attention_heads": 10)");
  EXPECT_THAT(ErrorOf(Parse(opt)),
              HasSubstr("field 'num_attention_heads': hidden_size 768 is not "
                        "divisible by num_attention_heads 10"));
}

TEST(HfConfigTest, UnsupportedActivationAndDType) {
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(R"({"hidden_act": "relu2"})")),
              HasSubstr("field 'hidden_act': unsupported activation 'relu2'"));
  EXPECT_THAT(ErrorOf(ParseSmallLlamaWith(R"({"torch_dtype": "int8"})")),
              HasSubstr("field 'torch_dtype': unsupported dtype 'int8'"));
}

TEST(HfConfigTest, Qwen2PerLayerSlidingWindowRefused) {
  std::string text = kQwen2_05b;
  text.replace(text.find(R"("use_sliding_window": false)"), 27,
               R"("use_sliding_window": true)");
  EXPECT_THAT(ErrorOf(Parse(text)), HasSubstr("field 'use_sliding_window'"));
}

TEST(HfConfigTest, NotJson) {
  EXPECT_THAT(ErrorOf(Parse(R"({"architectures": ["LlamaForCausalLM"],)")),
              HasSubstr("config.json: invalid JSON"));
  EXPECT_THAT(ErrorOf(Parse("[]")),
              HasSubstr("config.json: expected a JSON object, got array"));
}

}  // namespace
}  // namespace dynsparse
