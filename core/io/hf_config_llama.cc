// LlamaConfig, MistralConfig and Qwen2Config fields: one decoder family that
// differs only in biases, defaults and Mistral's sliding window.
#include "absl/strings/str_cat.h"
#include "core/io/hf_config_internal.h"
#include "core/status_macros.h"

namespace dynsparse::hf_config_internal {
namespace {

// transformers' max_position_embeddings defaults.
int64_t DefaultMaxPositions(absl::string_view architecture) {
  if (architecture == "MistralForCausalLM") return 4096 * 32;
  if (architecture == "Qwen2ForCausalLM") return 32768;
  return 2048;
}

absl::Status ParseHeads(const JsonFields& fields, ModelConfig& c) {
  ASSIGN_OR_RETURN(c.num_heads,
                   PositiveInt(fields, "num_attention_heads", kMaxWidth));
  ASSIGN_OR_RETURN(c.num_kv_heads, PositiveIntOr(fields, "num_key_value_heads",
                                                 c.num_heads, kMaxWidth));
  if (c.num_heads % c.num_kv_heads != 0) {
    return fields.Error(
        "num_key_value_heads",
        absl::StrCat("num_attention_heads ", c.num_heads,
                     " is not divisible by num_key_value_heads ",
                     c.num_kv_heads));
  }
  // An explicit head_dim (5.x always, some 4.x models) need not divide
  // hidden_size; otherwise it is implied and must.
  if (fields.Has("head_dim")) {
    ASSIGN_OR_RETURN(c.head_dim, PositiveInt(fields, "head_dim", kMaxWidth));
  } else if (c.hidden_size % c.num_heads != 0) {
    return fields.Error(
        "num_attention_heads",
        absl::StrCat("hidden_size ", c.hidden_size,
                     " is not divisible by num_attention_heads ", c.num_heads,
                     " and no head_dim is given"));
  } else {
    c.head_dim = c.hidden_size / c.num_heads;
  }
  return absl::OkStatus();
}

absl::Status ParseBiases(const JsonFields& fields, ModelConfig& c) {
  if (c.architecture == "Qwen2ForCausalLM") {
    c.qkv_bias = true;  // Qwen2Attention: q/k/v biased, o_proj not.
    c.o_bias = false;
    c.mlp_bias = false;
  } else if (c.architecture == "LlamaForCausalLM") {
    ASSIGN_OR_RETURN(const bool attention_bias,
                     fields.BoolOr("attention_bias", false));
    c.qkv_bias = c.o_bias = attention_bias;
    ASSIGN_OR_RETURN(c.mlp_bias, fields.BoolOr("mlp_bias", false));
  } else {  // Mistral has no biases.
    c.qkv_bias = c.o_bias = c.mlp_bias = false;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseLlamaFields(const JsonFields& fields, ModelConfig* config) {
  ModelConfig& c = *config;
  ASSIGN_OR_RETURN(c.hidden_size,
                   PositiveInt(fields, "hidden_size", kMaxWidth));
  ASSIGN_OR_RETURN(c.intermediate_size,
                   PositiveInt(fields, "intermediate_size", kMaxWidth));
  ASSIGN_OR_RETURN(c.num_layers,
                   PositiveInt(fields, "num_hidden_layers", kMaxLayers));
  RETURN_IF_ERROR(ParseHeads(fields, c));
  ASSIGN_OR_RETURN(
      c.max_position_embeddings,
      PositiveIntOr(fields, "max_position_embeddings",
                    DefaultMaxPositions(c.architecture), kMaxPositions));

  ASSIGN_OR_RETURN(c.activation, ParseActivation(fields, "hidden_act", "silu"));
  c.gated_mlp = true;
  ASSIGN_OR_RETURN(c.norm_eps, fields.DoubleOr("rms_norm_eps", 1e-6));
  if (!(c.norm_eps > 0.0 && c.norm_eps < 1.0)) {
    return fields.Error("rms_norm_eps",
                        absl::StrCat("must be in (0, 1), got ", c.norm_eps));
  }
  c.pre_norm = true;
  c.final_norm = true;
  c.layer_norm_affine = true;
  c.word_embed_proj_dim = 0;
  c.position_offset = 0;  // RoPE: no learned position table.

  RETURN_IF_ERROR(ParseBiases(fields, c));
  RETURN_IF_ERROR(ParseRopeFields(fields, config));
  if (c.architecture == "MistralForCausalLM") {
    ASSIGN_OR_RETURN(c.sliding_window, fields.IntOr("sliding_window", 0));
    if (c.sliding_window < 0) {
      return fields.Error("sliding_window",
                          absl::StrCat("must be >= 0, got ", c.sliding_window));
    }
  }
  if (c.architecture == "Qwen2ForCausalLM") {
    // Qwen2 windows only layers past max_window_layers; ModelConfig has one
    // window for all layers, so refuse rather than run it wrongly.
    ASSIGN_OR_RETURN(const bool windowed,
                     fields.BoolOr("use_sliding_window", false));
    if (windowed) {
      return absl::UnimplementedError(
          absl::StrCat(fields.label(),
                       ": field 'use_sliding_window': true is not supported "
                       "(per-layer sliding windows)"));
    }
  }
  ASSIGN_OR_RETURN(c.tie_word_embeddings,
                   fields.BoolOr("tie_word_embeddings", false));
  return absl::OkStatus();
}

}  // namespace dynsparse::hf_config_internal
