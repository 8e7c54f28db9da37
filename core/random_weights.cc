#include "core/random_weights.h"

#include <cmath>
#include <random>
#include <vector>

namespace dynsparse {
namespace {

class WeightFactory {
 public:
  WeightFactory(uint64_t seed, DType dtype) : rng_(seed), dtype_(dtype) {}

  Tensor Normal(Shape shape, double mean, double stddev) {
    std::normal_distribution<float> dist(static_cast<float>(mean),
                                         static_cast<float>(stddev));
    std::vector<float> values(NumElements(shape));
    for (float& v : values) v = dist(rng_);
    return Tensor::FromF32(values, std::move(shape), dtype_);
  }
  Tensor Linear(int64_t out, int64_t in) {
    return Normal({out, in}, 0.0, 1.0 / std::sqrt(static_cast<double>(in)));
  }
  Tensor Bias(bool present, int64_t n) {
    return present ? Normal({n}, 0.0, 0.05) : Tensor();
  }
  Tensor NormWeight(int64_t n) { return Normal({n}, 1.0, 0.1); }

 private:
  std::mt19937_64 rng_;
  DType dtype_;
};

}  // namespace

ModelWeights RandomWeights(const ModelConfig& c, uint64_t seed, DType dtype) {
  WeightFactory f(seed, dtype);
  const bool opt = c.family == ModelFamily::kOpt;
  const int64_t h = c.hidden_size;
  ModelWeights w;
  w.tok_embed = f.Normal({c.vocab_size, c.embed_dim()}, 0.0, 1.0);
  if (opt) {
    w.pos_embed =
        f.Normal({c.max_position_embeddings + c.position_offset, h}, 0.0, 0.5);
  }
  if (c.has_projection()) {
    w.project_in = f.Linear(h, c.embed_dim());
    w.project_out = f.Linear(c.embed_dim(), h);
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    LayerWeights layer;
    layer.attn_norm_w = f.NormWeight(h);
    layer.attn_norm_b = f.Bias(opt, h);
    layer.wq = f.Linear(c.q_dim(), h);
    layer.wk = f.Linear(c.kv_dim(), h);
    layer.wv = f.Linear(c.kv_dim(), h);
    layer.wo = f.Linear(h, c.q_dim());
    layer.bq = f.Bias(c.qkv_bias, c.q_dim());
    layer.bk = f.Bias(c.qkv_bias, c.kv_dim());
    layer.bv = f.Bias(c.qkv_bias, c.kv_dim());
    layer.bo = f.Bias(c.o_bias, h);
    layer.mlp_norm_w = f.NormWeight(h);
    layer.mlp_norm_b = f.Bias(opt, h);
    layer.w_up = f.Linear(c.intermediate_size, h);
    if (c.gated_mlp) layer.w_gate = f.Linear(c.intermediate_size, h);
    layer.w_down = f.Linear(h, c.intermediate_size);
    layer.b_up = f.Bias(c.mlp_bias, c.intermediate_size);
    if (c.gated_mlp) layer.b_gate = f.Bias(c.mlp_bias, c.intermediate_size);
    layer.b_down = f.Bias(c.mlp_bias, h);
    w.layers.push_back(std::move(layer));
  }
  if (c.final_norm) {
    w.final_norm_w = f.NormWeight(h);
    w.final_norm_b = f.Bias(opt, h);
  }
  w.lm_head = c.tie_word_embeddings ? w.tok_embed
                                    : f.Linear(c.vocab_size, c.embed_dim());
  return w;
}

}  // namespace dynsparse
