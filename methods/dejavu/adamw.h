// The f32 scalars of one AdamW step (β 0.9 / 0.999, ε 1e-8, decoupled weight
// decay), computed once on the host so that the CPU trainer and the CUDA
// kernel apply the same rounded constants:
//   m = b1 * m + one_minus_b1 * g
//   v = b2 * v + one_minus_b2 * (g * g)
//   p = p * decay
//   p = p - lr * (m * c1) / (sqrt(v * c2) + eps)
// Header only, no dependencies: the CUDA kernel takes the struct by value.
#ifndef DYNSPARSE_METHODS_DEJAVU_ADAMW_H_
#define DYNSPARSE_METHODS_DEJAVU_ADAMW_H_

#include <cmath>
#include <cstdint>

namespace dynsparse {

struct AdamWScalars {
  float b1, one_minus_b1, b2, one_minus_b2;
  float c1, c2;  // Bias corrections 1 / (1 - β^t).
  float decay;   // 1 - lr * weight_decay.
  float lr, eps;
};

// Scalars of step t (1-based).
inline AdamWScalars AdamWStep(int64_t t, double lr, double weight_decay) {
  constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;
  const double dt = static_cast<double>(t);
  return {static_cast<float>(kB1),
          static_cast<float>(1.0 - kB1),
          static_cast<float>(kB2),
          static_cast<float>(1.0 - kB2),
          static_cast<float>(1.0 / (1.0 - std::pow(kB1, dt))),
          static_cast<float>(1.0 / (1.0 - std::pow(kB2, dt))),
          static_cast<float>(1.0 - lr * weight_decay),
          static_cast<float>(lr),
          static_cast<float>(kEps)};
}

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_ADAMW_H_
