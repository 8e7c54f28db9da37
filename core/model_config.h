// ModelConfig: the architecture of a decoder-only model, independent of where
// it came from (HF config.json, a llama2.c header, or a random: preset).
//
// Parsing lives in core/io/hf_config.{h,cc}; this header is plain data.
#ifndef DYNSPARSE_CORE_MODEL_CONFIG_H_
#define DYNSPARSE_CORE_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace dynsparse {

// OPT: learned positions, LayerNorm, ReLU MLP, biases.
// Llama (also Mistral, Qwen2): RoPE, RMSNorm, gated SiLU MLP (SwiGLU), GQA.
enum class ModelFamily { kOpt, kLlama };

enum class Activation { kRelu, kSilu, kGelu, kGeluTanh };
// "relu", "silu", "gelu", "gelu_tanh".
const char* ActivationName(Activation activation);

enum class RopeScalingKind { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::kNone;
  double factor = 1.0;
  // llama3 only.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // e.g. "OPTForCausalLM", "llama2.c"
  std::string model_type;    // e.g. "opt", "llama", "mistral", "qwen2"
  ModelFamily family = ModelFamily::kLlama;

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // OPT: ffn_dim
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // == num_heads for MHA
  int64_t head_dim = 0;      // hidden_size / num_heads unless given
  int64_t max_position_embeddings = 0;

  Activation activation = Activation::kSilu;
  bool gated_mlp =
      true;  // Llama: down(act(gate(x)) * up(x)); OPT: fc2(act(fc1(x)))
  double norm_eps = 1e-5;

  // OPT quirks.
  bool pre_norm = true;             // do_layer_norm_before
  int64_t word_embed_proj_dim = 0;  // != hidden_size => project_in/out
  int64_t position_offset = 2;      // OPT's learned positions start at 2
  bool final_norm = true;           // OPT post-LN models have none
  bool layer_norm_affine = true;    // OPT layer_norm_elementwise_affine

  // Which linear layers carry a bias.
  bool qkv_bias = false;  // OPT enable_bias, Llama attention_bias, Qwen2 always
  bool o_bias = false;    // OPT enable_bias, Llama attention_bias
  bool mlp_bias = false;  // OPT enable_bias, Llama mlp_bias

  // RoPE (Llama family).
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t sliding_window = 0;  // Mistral; 0 = none. Attention is full if the
                               // context never exceeds it.

  bool tie_word_embeddings = false;
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = -1;
  DType checkpoint_dtype = DType::kF32;  // torch_dtype / dtype
  // Content id of the loaded weights (core/io/weights_id.h), set by the
  // loaders; empty for a configuration read on its own.
  std::string weights_id;

  bool has_projection() const {
    return word_embed_proj_dim != 0 && word_embed_proj_dim != hidden_size;
  }
  int64_t embed_dim() const {  // Width of token embeddings and lm_head rows.
    return has_projection() ? word_embed_proj_dim : hidden_size;
  }
  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  // Parameter count implied by the shapes (tied embeddings counted once).
  int64_t ParameterCount() const;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_MODEL_CONFIG_H_
