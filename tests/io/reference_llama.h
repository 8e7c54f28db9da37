// A plain, slow Llama forward pass over HF-layout ModelWeights (f32), used
// to check loaders end to end: if a loader permutes, transposes or swaps a
// tensor, greedy decoding stops matching published outputs.
#ifndef DYNSPARSE_TESTS_IO_REFERENCE_LLAMA_H_
#define DYNSPARSE_TESTS_IO_REFERENCE_LLAMA_H_

#include <cstdint>
#include <vector>

#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse::testing {

// Feeds `first_token` at position 0 and then each argmax, returning the
// `steps` argmax ids. RoPE is HF's rotate_half; no rope scaling or biases.
std::vector<int32_t> GreedyDecode(const ModelConfig& config,
                                  const ModelWeights& weights,
                                  int32_t first_token, int steps);

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_IO_REFERENCE_LLAMA_H_
