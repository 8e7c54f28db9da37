// ModelConfig builders from a handful of dimensions, for random-weight models
// (tests, benchmarks, and timing real shapes without their checkpoints).
#ifndef DYNSPARSE_CORE_MODEL_SHAPES_H_
#define DYNSPARSE_CORE_MODEL_SHAPES_H_

#include <cstdint>

#include "core/model_config.h"

namespace dynsparse {

struct ModelShape {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // OPT: ignored (always MHA)
  int64_t max_position_embeddings = 2048;
};

// LlamaForCausalLM defaults: SwiGLU, RMSNorm, RoPE theta 1e4, untied.
ModelConfig LlamaConfigFromShape(const ModelShape& shape);
// OPTForCausalLM defaults: ReLU, pre-LN, biases, learned positions, tied.
ModelConfig OptConfigFromShape(const ModelShape& shape);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_MODEL_SHAPES_H_
