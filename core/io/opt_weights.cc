// OPT checkpoint names (transformers' modeling_opt.py).
#include <string>

#include "absl/strings/str_cat.h"
#include "core/io/hf_weights.h"
#include "core/io/weight_fetch.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace {

// Most OPT checkpoints nest the decoder under "model."; some exports put it
// at the top level.
std::string DecoderPrefix(const TensorSource& source) {
  if (!source.Contains("model.decoder.embed_tokens.weight") &&
      source.Contains("decoder.embed_tokens.weight")) {
    return "decoder.";
  }
  return "model.decoder.";
}

absl::StatusOr<LayerWeights> LoadOptLayer(const ModelConfig& c,
                                          const WeightFetcher& fetch,
                                          const std::string& p) {
  const int64_t h = c.hidden_size;
  const int64_t f = c.intermediate_size;
  const std::string hw = absl::StrCat("hidden_size=", h);
  const std::string fw = absl::StrCat("ffn_dim=", f, ", hidden_size=", h);
  const bool affine = c.layer_norm_affine;
  LayerWeights l;
  ASSIGN_OR_RETURN(l.wq, fetch.Get(p + "self_attn.q_proj.weight", {h, h}, hw));
  ASSIGN_OR_RETURN(l.wk, fetch.Get(p + "self_attn.k_proj.weight", {h, h}, hw));
  ASSIGN_OR_RETURN(l.wv, fetch.Get(p + "self_attn.v_proj.weight", {h, h}, hw));
  ASSIGN_OR_RETURN(l.wo,
                   fetch.Get(p + "self_attn.out_proj.weight", {h, h}, hw));
  ASSIGN_OR_RETURN(
      l.bq, fetch.GetIf(c.qkv_bias, p + "self_attn.q_proj.bias", {h}, hw));
  ASSIGN_OR_RETURN(
      l.bk, fetch.GetIf(c.qkv_bias, p + "self_attn.k_proj.bias", {h}, hw));
  ASSIGN_OR_RETURN(
      l.bv, fetch.GetIf(c.qkv_bias, p + "self_attn.v_proj.bias", {h}, hw));
  ASSIGN_OR_RETURN(
      l.bo, fetch.GetIf(c.o_bias, p + "self_attn.out_proj.bias", {h}, hw));
  ASSIGN_OR_RETURN(
      l.attn_norm_w,
      fetch.GetIf(affine, p + "self_attn_layer_norm.weight", {h}, hw));
  ASSIGN_OR_RETURN(
      l.attn_norm_b,
      fetch.GetIf(affine, p + "self_attn_layer_norm.bias", {h}, hw));
  ASSIGN_OR_RETURN(l.w_up, fetch.Get(p + "fc1.weight", {f, h}, fw));
  ASSIGN_OR_RETURN(l.w_down, fetch.Get(p + "fc2.weight", {h, f}, fw));
  ASSIGN_OR_RETURN(l.b_up, fetch.GetIf(c.mlp_bias, p + "fc1.bias", {f}, fw));
  ASSIGN_OR_RETURN(l.b_down, fetch.GetIf(c.mlp_bias, p + "fc2.bias", {h}, hw));
  ASSIGN_OR_RETURN(l.mlp_norm_w,
                   fetch.GetIf(affine, p + "final_layer_norm.weight", {h}, hw));
  ASSIGN_OR_RETURN(l.mlp_norm_b,
                   fetch.GetIf(affine, p + "final_layer_norm.bias", {h}, hw));
  return l;
}

}  // namespace

absl::StatusOr<ModelWeights> LoadOptWeights(const ModelConfig& c,
                                            const TensorSource& source,
                                            DType dtype) {
  const WeightFetcher fetch(source, dtype);
  const std::string p = DecoderPrefix(source);
  const int64_t h = c.hidden_size;
  const int64_t e = c.embed_dim();
  const std::string embed_why =
      absl::StrCat("vocab_size=", c.vocab_size, ", word_embed_proj_dim=", e);
  const std::string proj_why =
      absl::StrCat("hidden_size=", h, ", word_embed_proj_dim=", e);
  const std::string hw = absl::StrCat("hidden_size=", h);

  ModelWeights w;
  ASSIGN_OR_RETURN(w.tok_embed, fetch.Get(p + "embed_tokens.weight",
                                          {c.vocab_size, e}, embed_why));
  ASSIGN_OR_RETURN(
      w.pos_embed,
      fetch.Get(
          p + "embed_positions.weight",
          {c.max_position_embeddings + c.position_offset, h},
          absl::StrCat("max_position_embeddings=", c.max_position_embeddings,
                       " + offset ", c.position_offset, ", hidden_size=", h)));
  ASSIGN_OR_RETURN(w.project_in,
                   fetch.GetIf(c.has_projection(), p + "project_in.weight",
                               {h, e}, proj_why));
  ASSIGN_OR_RETURN(w.project_out,
                   fetch.GetIf(c.has_projection(), p + "project_out.weight",
                               {e, h}, proj_why));
  w.layers.reserve(c.num_layers);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    ASSIGN_OR_RETURN(
        LayerWeights layer,
        LoadOptLayer(c, fetch, absl::StrCat(p, "layers.", i, ".")));
    w.layers.push_back(std::move(layer));
  }
  const bool final_affine = c.final_norm && c.layer_norm_affine;
  ASSIGN_OR_RETURN(
      w.final_norm_w,
      fetch.GetIf(final_affine, p + "final_layer_norm.weight", {h}, hw));
  ASSIGN_OR_RETURN(
      w.final_norm_b,
      fetch.GetIf(final_affine, p + "final_layer_norm.bias", {h}, hw));
  if (c.tie_word_embeddings) {
    w.lm_head = w.tok_embed;
  } else {
    ASSIGN_OR_RETURN(w.lm_head,
                     fetch.Get("lm_head.weight", {c.vocab_size, e}, embed_why));
  }
  return w;
}

}  // namespace dynsparse
