// Device activation functions shared by the elementwise kernels
// (activation.cu) and the gated GEMV (gemv.cu), so a fused kernel computes
// exactly the same f32 values as the unfused pair. Formulas match
// kernels/cpu (expf/erff/tanhf are the accurate CUDA versions).
#ifndef DYNSPARSE_KERNELS_CUDA_ACT_CUH_
#define DYNSPARSE_KERNELS_CUDA_ACT_CUH_

#include "core/model_config.h"

namespace dynsparse::cuda {

template <Activation A>
__device__ __forceinline__ float Act(float v) {
  if constexpr (A == Activation::kRelu) {
    return v > 0.0f ? v : 0.0f;
  } else if constexpr (A == Activation::kSilu) {
    return v / (1.0f + expf(-v));
  } else if constexpr (A == Activation::kGelu) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  } else {
    const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(inner));
  }
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_ACT_CUH_
