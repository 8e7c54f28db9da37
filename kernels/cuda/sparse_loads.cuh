// Device helpers shared by the sparse-execution kernels (sparse_ops.cu,
// topk.cu, lazy_kv.cu; include from .cu files only): 16-byte weight loads
// that convert to f32, and the weight-dtype dispatch.
#ifndef DYNSPARSE_KERNELS_CUDA_SPARSE_LOADS_CUH_
#define DYNSPARSE_KERNELS_CUDA_SPARSE_LOADS_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "kernels/cuda/cuda_utils.cuh"

namespace dynsparse::cuda {

// volatile: the loads sit under bounds checks, and a non-volatile asm counts
// as pure, so the compiler could hoist it past them.
__device__ __forceinline__ uint4 LoadNoAlloc(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Eight consecutive weights as f32.
__device__ __forceinline__ void Load8(const float* p, float (&f)[8]) {
  const uint4 a = LoadNoAlloc(p), b = LoadNoAlloc(p + 4);
  f[0] = __uint_as_float(a.x), f[1] = __uint_as_float(a.y);
  f[2] = __uint_as_float(a.z), f[3] = __uint_as_float(a.w);
  f[4] = __uint_as_float(b.x), f[5] = __uint_as_float(b.y);
  f[6] = __uint_as_float(b.z), f[7] = __uint_as_float(b.w);
}
__device__ __forceinline__ void Load8(const __half* p, float (&f)[8]) {
  const uint4 v = LoadNoAlloc(p);
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t =
        __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}
__device__ __forceinline__ void Load8(const __nv_bfloat16* p, float (&f)[8]) {
  const uint4 v = LoadNoAlloc(p);
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(words[i] << 16);
    f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}
// Eight activations (written by an earlier kernel of the step).
__device__ __forceinline__ void LoadX8(const float* p, float (&f)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p));
  const float4 b = __ldg(reinterpret_cast<const float4*>(p + 4));
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
  f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

// Calls f with a value of the weight element type (float, __half or
// __nv_bfloat16) of `dtype`.
template <typename F>
absl::Status ByWeightType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f(float{});
    case DType::kF16:
      return f(__half{});
    case DType::kBF16:
      return f(__nv_bfloat16{});
    case DType::kI32:
      break;
  }
  return absl::InvalidArgumentError("sparse ops: integer weights");
}

inline bool Vec8(const Tensor& w, int64_t row_elements) {
  return row_elements % 8 == 0 && IsAligned(w.raw_data(), 16);
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_SPARSE_LOADS_CUH_
