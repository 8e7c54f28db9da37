// OPTConfig fields (transformers' configuration_opt.py defaults).
#include "absl/strings/str_cat.h"
#include "core/io/hf_config_internal.h"
#include "core/status_macros.h"

namespace dynsparse::hf_config_internal {

absl::Status ParseOptFields(const JsonFields& fields, ModelConfig* config) {
  ModelConfig& c = *config;
  ASSIGN_OR_RETURN(c.hidden_size,
                   PositiveInt(fields, "hidden_size", kMaxWidth));
  ASSIGN_OR_RETURN(c.intermediate_size,
                   PositiveInt(fields, "ffn_dim", kMaxWidth));
  ASSIGN_OR_RETURN(c.num_layers,
                   PositiveInt(fields, "num_hidden_layers", kMaxLayers));
  ASSIGN_OR_RETURN(c.num_heads,
                   PositiveInt(fields, "num_attention_heads", kMaxWidth));
  ASSIGN_OR_RETURN(
      c.max_position_embeddings,
      PositiveInt(fields, "max_position_embeddings", kMaxPositions));
  if (c.hidden_size % c.num_heads != 0) {
    return fields.Error(
        "num_attention_heads",
        absl::StrCat("hidden_size ", c.hidden_size,
                     " is not divisible by num_attention_heads ", c.num_heads));
  }
  c.num_kv_heads = c.num_heads;
  c.head_dim = c.hidden_size / c.num_heads;

  ASSIGN_OR_RETURN(c.activation,
                   ParseActivation(fields, "activation_function", "relu"));
  c.gated_mlp = false;
  c.norm_eps = 1e-5;  // nn.LayerNorm's default; OPT does not configure it.

  // OPT-350m is post-LN; such models also drop the final LayerNorm.
  ASSIGN_OR_RETURN(c.pre_norm, fields.BoolOr("do_layer_norm_before", true));
  ASSIGN_OR_RETURN(const bool remove_final,
                   fields.BoolOr("_remove_final_layer_norm", false));
  c.final_norm = c.pre_norm && !remove_final;
  ASSIGN_OR_RETURN(c.layer_norm_affine,
                   fields.BoolOr("layer_norm_elementwise_affine", true));
  ASSIGN_OR_RETURN(
      c.word_embed_proj_dim,
      PositiveIntOr(fields, "word_embed_proj_dim", c.hidden_size, kMaxWidth));
  c.position_offset = 2;

  ASSIGN_OR_RETURN(const bool bias, fields.BoolOr("enable_bias", true));
  c.qkv_bias = c.o_bias = c.mlp_bias = bias;
  ASSIGN_OR_RETURN(c.tie_word_embeddings,
                   fields.BoolOr("tie_word_embeddings", true));
  return absl::OkStatus();
}

}  // namespace dynsparse::hf_config_internal
