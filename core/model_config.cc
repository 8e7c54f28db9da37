#include "core/model_config.h"

namespace dynsparse {

const char* ActivationName(Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return "relu";
    case Activation::kSilu:
      return "silu";
    case Activation::kGelu:
      return "gelu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
  }
  return "?";
}

int64_t ModelConfig::ParameterCount() const {
  const int64_t h = hidden_size;
  const int64_t e = embed_dim();
  int64_t per_layer = h * q_dim() + 2 * h * kv_dim() + q_dim() * h;
  per_layer += (gated_mlp ? 3 : 2) * h * intermediate_size;
  const bool layer_norm = family == ModelFamily::kOpt;
  per_layer += (layer_norm ? 4 : 2) * h;  // Two norms (weight, bias).
  if (qkv_bias) per_layer += q_dim() + 2 * kv_dim();
  if (o_bias) per_layer += h;
  if (mlp_bias) per_layer += (gated_mlp ? 2 : 1) * intermediate_size + h;
  int64_t total = per_layer * num_layers + vocab_size * e;
  if (!tie_word_embeddings) total += vocab_size * e;
  if (family == ModelFamily::kOpt) {
    total += (max_position_embeddings + position_offset) * h;
    if (has_projection()) total += 2 * h * e;
  }
  if (final_norm) total += (layer_norm ? 2 : 1) * h;
  return total;
}

}  // namespace dynsparse
