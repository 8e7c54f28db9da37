// Causal attention on the CPU: one (query row, head) pair per task; scores
// for the visible keys, a max-subtracted softmax, and the weighted sum of V.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace dynsparse::cpu {

void Attention(const AttentionArgs& a) {
  const int64_t n = a.q->dim(0);
  const int64_t hd = a.head_dim;
  const int64_t group = a.num_heads / a.num_kv_heads;
  const int64_t q_stride = a.num_heads * hd;
  const int64_t kv_stride = a.num_kv_heads * hd;
  const float* q = a.q->data<float>();
  const float* keys = a.k_cache->data<float>();
  const float* values = a.v_cache->data<float>();
  float* out = a.out->data<float>();

#pragma omp parallel
  {
    std::vector<float> scores(a.num_keys);
    std::vector<double> acc(hd);
#pragma omp for collapse(2) schedule(dynamic, 4)
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t h = 0; h < a.num_heads; ++h) {
        const int64_t visible =
            std::min<int64_t>(a.num_keys, a.query_positions[i] + 1);
        const float* qv = q + i * q_stride + h * hd;
        const int64_t kv_head = h / group;
        float max_score = -INFINITY;
        for (int64_t j = 0; j < visible; ++j) {
          const float* kv = keys + j * kv_stride + kv_head * hd;
          float dot = 0.0f;
          for (int64_t d = 0; d < hd; ++d) dot += qv[d] * kv[d];
          scores[j] = dot * a.scale;
          max_score = std::max(max_score, scores[j]);
        }
        double denom = 0.0;
        for (int64_t j = 0; j < visible; ++j) {
          const double e = std::exp(double{scores[j]} - max_score);
          scores[j] = static_cast<float>(e);
          denom += e;
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < visible; ++j) {
          const float* vv = values + j * kv_stride + kv_head * hd;
          const double p = scores[j];
          for (int64_t d = 0; d < hd; ++d) acc[d] += p * vv[d];
        }
        float* o = out + i * q_stride + h * hd;
        for (int64_t d = 0; d < hd; ++d)
          o[d] = static_cast<float>(acc[d] / denom);
      }
    }
  }
}

}  // namespace dynsparse::cpu
