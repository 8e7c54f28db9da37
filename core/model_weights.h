// ModelWeights: every tensor of a model under one canonical layout, whatever
// checkpoint format it came from. Linear weights keep HF's [out, in] row-major
// layout; empty Tensors mark weights the architecture does not have.
#ifndef DYNSPARSE_CORE_MODEL_WEIGHTS_H_
#define DYNSPARSE_CORE_MODEL_WEIGHTS_H_

#include <vector>

#include "core/model_config.h"
#include "core/tensor.h"

namespace dynsparse {

struct LayerWeights {
  Tensor attn_norm_w, attn_norm_b;  // [hidden]; b only for LayerNorm
  Tensor wq, wk, wv, wo;  // [q_dim,h], [kv_dim,h], [kv_dim,h], [h,q_dim]
  Tensor bq, bk, bv, bo;
  Tensor mlp_norm_w, mlp_norm_b;  // [hidden]
  Tensor w_up;                    // OPT fc1 / Llama up_proj: [inter, hidden]
  Tensor w_gate;  // Llama gate_proj: [inter, hidden]; empty for OPT
  Tensor w_down;  // OPT fc2 / Llama down_proj: [hidden, inter]
  Tensor b_up, b_gate, b_down;
};

struct ModelWeights {
  Tensor tok_embed;    // [vocab, embed_dim]
  Tensor pos_embed;    // OPT: [max_positions + offset, hidden]
  Tensor project_in;   // OPT: [hidden, embed_dim] when embed_dim != hidden
  Tensor project_out;  // OPT: [embed_dim, hidden]
  std::vector<LayerWeights> layers;
  Tensor final_norm_w, final_norm_b;
  Tensor lm_head;  // [vocab, embed_dim]; aliases tok_embed when tied
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_MODEL_WEIGHTS_H_
