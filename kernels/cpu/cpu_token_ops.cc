// The LazyLLM scoring probe on the CPU: one query row against a list of
// cached keys, softmax per head in double, probabilities averaged over heads.
// It is the reference for the CUDA probe, so it favours exactness over speed
// (it runs at a few pruning layers per step, O(keys * hidden) each).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace dynsparse::cpu {

void LastQueryAttention(const LastQueryArgs& a) {
  const int64_t nk = static_cast<int64_t>(a.key_positions.size());
  const int64_t hd = a.head_dim;
  const int64_t group = a.num_heads / a.num_kv_heads;
  const int64_t kv_stride = a.num_kv_heads * hd;
  const float* q = a.q->data<float>();
  const float* k = a.k_cache->data<float>();
  std::vector<double> total(static_cast<size_t>(nk), 0.0);
  std::vector<double> scores(static_cast<size_t>(nk));
  for (int64_t h = 0; h < a.num_heads; ++h) {
    const float* qh = q + h * hd;
    const int64_t kv_head = h / group;
    double max_score = -INFINITY;
    for (int64_t j = 0; j < nk; ++j) {
      const float* kj = k + a.key_positions[j] * kv_stride + kv_head * hd;
      double dot = 0.0;
      for (int64_t d = 0; d < hd; ++d) dot += double{qh[d]} * kj[d];
      scores[j] = dot * a.scale;
      max_score = std::max(max_score, scores[j]);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < nk; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    for (int64_t j = 0; j < nk; ++j) total[j] += scores[j] / sum;
  }
  float* out = a.out->data<float>();
  for (int64_t j = 0; j < nk; ++j) {
    out[j] = static_cast<float>(total[j] / static_cast<double>(a.num_heads));
  }
}

}  // namespace dynsparse::cpu
