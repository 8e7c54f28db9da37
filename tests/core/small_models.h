// Small random-weight model shapes and token ids shared by the graph tests
// (session, token path, oracle selection): one definition of each shape.
#ifndef DYNSPARSE_TESTS_CORE_SMALL_MODELS_H_
#define DYNSPARSE_TESTS_CORE_SMALL_MODELS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "core/model_config.h"
#include "core/model_shapes.h"

namespace dynsparse::testing_models {

// Llama with GQA (4 query heads over 2 kv heads), hidden 32.
inline ModelConfig SmallLlama(int64_t layers, int64_t max_positions,
                              int64_t intermediate = 72) {
  return LlamaConfigFromShape({.vocab_size = 97,
                               .hidden_size = 32,
                               .intermediate_size = intermediate,
                               .num_layers = layers,
                               .num_heads = 4,
                               .num_kv_heads = 2,
                               .max_position_embeddings = max_positions});
}

// pre_norm: OPT-125m style; otherwise OPT-350m style (post-LN, no final
// norm, 16-wide embeddings projected in and out).
inline ModelConfig SmallOpt(bool pre_norm, int64_t layers,
                            int64_t max_positions) {
  ModelConfig c =
      OptConfigFromShape({.vocab_size = 97,
                          .hidden_size = 32,
                          .intermediate_size = 64,
                          .num_layers = layers,
                          .num_heads = 4,
                          .max_position_embeddings = max_positions});
  c.pre_norm = pre_norm;
  c.final_norm = pre_norm;
  c.word_embed_proj_dim = pre_norm ? 32 : 16;
  return c;
}

inline std::vector<int32_t> RandomIds(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % vocab);
  return ids;
}

}  // namespace dynsparse::testing_models

#endif  // DYNSPARSE_TESTS_CORE_SMALL_MODELS_H_
