// Llama-family checkpoint names (modeling_llama.py; Mistral and Qwen2 use the
// same names).
#include <string>

#include "absl/strings/str_cat.h"
#include "core/io/hf_weights.h"
#include "core/io/weight_fetch.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace {

struct LayerShapes {
  int64_t h, q, kv, inter;
  std::string h_why, q_why, kv_why, o_why, mlp_why;

  explicit LayerShapes(const ModelConfig& c)
      : h(c.hidden_size),
        q(c.q_dim()),
        kv(c.kv_dim()),
        inter(c.intermediate_size),
        h_why(absl::StrCat("hidden_size=", c.hidden_size)),
        q_why(absl::StrCat("num_attention_heads=", c.num_heads,
                           ", head_dim=", c.head_dim)),
        kv_why(absl::StrCat("num_key_value_heads=", c.num_kv_heads,
                            ", head_dim=", c.head_dim)),
        o_why(absl::StrCat("hidden_size=", c.hidden_size,
                           ", num_attention_heads=", c.num_heads,
                           ", head_dim=", c.head_dim)),
        mlp_why(absl::StrCat("intermediate_size=", c.intermediate_size,
                             ", hidden_size=", c.hidden_size)) {}
};

absl::StatusOr<LayerWeights> LoadLlamaLayer(const ModelConfig& c,
                                            const LayerShapes& s,
                                            const WeightFetcher& fetch,
                                            const std::string& p) {
  const std::string a = p + "self_attn.";
  const std::string m = p + "mlp.";
  LayerWeights l;
  ASSIGN_OR_RETURN(l.attn_norm_w,
                   fetch.Get(p + "input_layernorm.weight", {s.h}, s.h_why));
  ASSIGN_OR_RETURN(l.wq, fetch.Get(a + "q_proj.weight", {s.q, s.h}, s.q_why));
  ASSIGN_OR_RETURN(l.wk, fetch.Get(a + "k_proj.weight", {s.kv, s.h}, s.kv_why));
  ASSIGN_OR_RETURN(l.wv, fetch.Get(a + "v_proj.weight", {s.kv, s.h}, s.kv_why));
  ASSIGN_OR_RETURN(l.wo, fetch.Get(a + "o_proj.weight", {s.h, s.q}, s.o_why));
  ASSIGN_OR_RETURN(l.bq,
                   fetch.GetIf(c.qkv_bias, a + "q_proj.bias", {s.q}, s.q_why));
  ASSIGN_OR_RETURN(
      l.bk, fetch.GetIf(c.qkv_bias, a + "k_proj.bias", {s.kv}, s.kv_why));
  ASSIGN_OR_RETURN(
      l.bv, fetch.GetIf(c.qkv_bias, a + "v_proj.bias", {s.kv}, s.kv_why));
  ASSIGN_OR_RETURN(l.bo,
                   fetch.GetIf(c.o_bias, a + "o_proj.bias", {s.h}, s.h_why));
  ASSIGN_OR_RETURN(
      l.mlp_norm_w,
      fetch.Get(p + "post_attention_layernorm.weight", {s.h}, s.h_why));
  ASSIGN_OR_RETURN(
      l.w_gate, fetch.Get(m + "gate_proj.weight", {s.inter, s.h}, s.mlp_why));
  ASSIGN_OR_RETURN(l.w_up,
                   fetch.Get(m + "up_proj.weight", {s.inter, s.h}, s.mlp_why));
  ASSIGN_OR_RETURN(
      l.w_down, fetch.Get(m + "down_proj.weight", {s.h, s.inter}, s.mlp_why));
  ASSIGN_OR_RETURN(l.b_gate, fetch.GetIf(c.mlp_bias, m + "gate_proj.bias",
                                         {s.inter}, s.mlp_why));
  ASSIGN_OR_RETURN(l.b_up, fetch.GetIf(c.mlp_bias, m + "up_proj.bias",
                                       {s.inter}, s.mlp_why));
  ASSIGN_OR_RETURN(
      l.b_down, fetch.GetIf(c.mlp_bias, m + "down_proj.bias", {s.h}, s.h_why));
  return l;
}

}  // namespace

absl::StatusOr<ModelWeights> LoadLlamaWeights(const ModelConfig& c,
                                              const TensorSource& source,
                                              DType dtype) {
  const WeightFetcher fetch(source, dtype);
  const LayerShapes shapes(c);
  const std::string embed_why = absl::StrCat("vocab_size=", c.vocab_size,
                                             ", hidden_size=", c.hidden_size);

  ModelWeights w;
  ASSIGN_OR_RETURN(w.tok_embed,
                   fetch.Get("model.embed_tokens.weight",
                             {c.vocab_size, c.hidden_size}, embed_why));
  w.layers.reserve(c.num_layers);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    ASSIGN_OR_RETURN(LayerWeights layer,
                     LoadLlamaLayer(c, shapes, fetch,
                                    absl::StrCat("model.layers.", i, ".")));
    w.layers.push_back(std::move(layer));
  }
  ASSIGN_OR_RETURN(w.final_norm_w, fetch.Get("model.norm.weight",
                                             {c.hidden_size}, shapes.h_why));
  if (c.tie_word_embeddings) {
    w.lm_head = w.tok_embed;
  } else {
    ASSIGN_OR_RETURN(
        w.lm_head,
        fetch.Get("lm_head.weight", {c.vocab_size, c.hidden_size}, embed_why));
  }
  return w;
}

}  // namespace dynsparse
