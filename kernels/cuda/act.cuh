// Device activation functions shared by the elementwise kernels
// (activation.cu), the GEMVs (gemv_kernels.cu) and the decode stack, so a fused
// kernel computes exactly the same f32 values as the unfused pair. Formulas
// match kernels/cpu (expf/erff/tanhf are the accurate CUDA versions).
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

// Act<A>(v) for the Activation numbered `activation` (a runtime value, as
// kernel arguments carry it); any other number leaves v as it is.
__device__ __forceinline__ float ActByCode(int activation, float v) {
  switch (activation) {
    case static_cast<int>(Activation::kRelu):
      return Act<Activation::kRelu>(v);
    case static_cast<int>(Activation::kSilu):
      return Act<Activation::kSilu>(v);
    case static_cast<int>(Activation::kGelu):
      return Act<Activation::kGelu>(v);
    case static_cast<int>(Activation::kGeluTanh):
      return Act<Activation::kGeluTanh>(v);
    default:
      return v;
  }
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_ACT_CUH_
