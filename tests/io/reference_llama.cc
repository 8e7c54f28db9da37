#include "tests/io/reference_llama.h"

#include <algorithm>
#include <cmath>

namespace dynsparse::testing {
namespace {

using Vec = std::vector<float>;

// w is [out, in] row-major.
Vec MatVec(const Tensor& w, const Vec& x) {
  const int64_t out = w.dim(0), in = w.dim(1);
  const float* p = w.data<float>();
  Vec y(out);
  for (int64_t r = 0; r < out; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < in; ++c) sum += double{p[r * in + c]} * x[c];
    y[r] = static_cast<float>(sum);
  }
  return y;
}

Vec RmsNorm(const Vec& x, const Tensor& weight, double eps) {
  double ss = 0;
  for (float v : x) ss += double{v} * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = static_cast<float>(x[i] * scale * weight.data<float>()[i]);
  }
  return y;
}

// rotate_half: within each head, (v[i], v[i + d/2]) rotate by pos *
// theta^(-2i/d).
void Rope(Vec& v, int64_t heads, int64_t head_dim, int pos, double theta) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    float* x = v.data() + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const double angle = pos * std::pow(theta, -2.0 * i / head_dim);
      const double c = std::cos(angle), s = std::sin(angle);
      const double a = x[i], b = x[i + half];
      x[i] = static_cast<float>(a * c - b * s);
      x[i + half] = static_cast<float>(b * c + a * s);
    }
  }
}

}  // namespace

std::vector<int32_t> GreedyDecode(const ModelConfig& c, const ModelWeights& w,
                                  int32_t first_token, int steps) {
  const int64_t d = c.hidden_size, hd = c.head_dim;
  const int64_t group = c.num_heads / c.num_kv_heads;
  std::vector<std::vector<Vec>> keys(c.num_layers), values(c.num_layers);
  std::vector<int32_t> out;
  int32_t token = first_token;
  for (int pos = 0; pos < steps; ++pos) {
    const float* row = w.tok_embed.data<float>() + token * d;
    Vec x(row, row + d);
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const LayerWeights& lw = w.layers[l];
      const Vec xn = RmsNorm(x, lw.attn_norm_w, c.norm_eps);
      Vec q = MatVec(lw.wq, xn), k = MatVec(lw.wk, xn);
      Rope(q, c.num_heads, hd, pos, c.rope_theta);
      Rope(k, c.num_kv_heads, hd, pos, c.rope_theta);
      keys[l].push_back(k);
      values[l].push_back(MatVec(lw.wv, xn));
      Vec attn(c.q_dim(), 0.0f);
      for (int64_t h = 0; h < c.num_heads; ++h) {
        const int64_t kvh = h / group;
        std::vector<double> scores(pos + 1);
        for (int t = 0; t <= pos; ++t) {
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) {
            dot += double{q[h * hd + i]} * keys[l][t][kvh * hd + i];
          }
          scores[t] = dot / std::sqrt(static_cast<double>(hd));
        }
        const double top = *std::max_element(scores.begin(), scores.end());
        double total = 0;
        for (double& s : scores) total += (s = std::exp(s - top));
        for (int t = 0; t <= pos; ++t) {
          for (int64_t i = 0; i < hd; ++i) {
            attn[h * hd + i] += static_cast<float>(scores[t] / total *
                                                   values[l][t][kvh * hd + i]);
          }
        }
      }
      const Vec o = MatVec(lw.wo, attn);
      for (int64_t i = 0; i < d; ++i) x[i] += o[i];
      const Vec hn = RmsNorm(x, lw.mlp_norm_w, c.norm_eps);
      Vec gate = MatVec(lw.w_gate, hn);
      const Vec up = MatVec(lw.w_up, hn);
      for (size_t i = 0; i < gate.size(); ++i) {
        gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
      }
      const Vec down = MatVec(lw.w_down, gate);
      for (int64_t i = 0; i < d; ++i) x[i] += down[i];
    }
    const Vec logits =
        MatVec(w.lm_head, RmsNorm(x, w.final_norm_w, c.norm_eps));
    token = static_cast<int32_t>(
        std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(token);
  }
  return out;
}

}  // namespace dynsparse::testing
