// The attention softmax of one score row, shared by cpu::Attention and
// cpu::SparseAttention so that a kept head's context equals the dense one
// bit for bit (sparse execution is tested equal to masked).
#ifndef DYNSPARSE_KERNELS_CPU_CPU_SOFTMAX_H_
#define DYNSPARSE_KERNELS_CPU_CPU_SOFTMAX_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace dynsparse::cpu {

// s[0, n) = softmax(s[0, n)), max-subtracted, in f32.
inline void SoftmaxInPlace(float* s, int64_t n) {
  const float max_score = *std::max_element(s, s + n);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - max_score);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

}  // namespace dynsparse::cpu

#endif  // DYNSPARSE_KERNELS_CPU_CPU_SOFTMAX_H_
