#include "core/model_shapes.h"

namespace dynsparse {
namespace {

void CopyDims(const ModelShape& s, ModelConfig* c) {
  c->vocab_size = s.vocab_size;
  c->hidden_size = s.hidden_size;
  c->intermediate_size = s.intermediate_size;
  c->num_layers = s.num_layers;
  c->num_heads = s.num_heads;
  c->head_dim = s.hidden_size / s.num_heads;
  c->max_position_embeddings = s.max_position_embeddings;
}

}  // namespace

ModelConfig LlamaConfigFromShape(const ModelShape& shape) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.family = ModelFamily::kLlama;
  CopyDims(shape, &c);
  c.num_kv_heads =
      shape.num_kv_heads > 0 ? shape.num_kv_heads : shape.num_heads;
  c.activation = Activation::kSilu;
  c.gated_mlp = true;
  c.norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  return c;
}

ModelConfig OptConfigFromShape(const ModelShape& shape) {
  ModelConfig c;
  c.architecture = "OPTForCausalLM";
  c.model_type = "opt";
  c.family = ModelFamily::kOpt;
  CopyDims(shape, &c);
  c.num_kv_heads = shape.num_heads;
  c.activation = Activation::kRelu;
  c.gated_mlp = false;
  c.word_embed_proj_dim = shape.hidden_size;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.tie_word_embeddings = true;
  return c;
}

}  // namespace dynsparse
