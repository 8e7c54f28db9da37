// Converts q/k projection rows from interleaved-pair RoPE (llama2.c and Meta's
// original checkpoints rotate pairs (0,1), (2,3), ...) to the rotate_half
// layout our graph and Hugging Face use (pairs (i, i + head_dim/2)).
#ifndef DYNSPARSE_CORE_IO_ROPE_PERMUTE_H_
#define DYNSPARSE_CORE_IO_ROPE_PERMUTE_H_

#include <cstdint>

#include "core/tensor.h"

namespace dynsparse {

// `w` is [n_heads * head_dim, in] on the host with head_dim even. Within each
// head, row 2i + j moves to row j * head_dim/2 + i: transformers'
// convert_llama_weights_to_hf.py permute(). Returns a new tensor.
Tensor InterleavedToHalfRotary(const Tensor& w, int64_t n_heads);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_ROPE_PERMUTE_H_
