// Device helpers shared by the sparse-execution kernels (sparse_ops.cu,
// topk.cu, lazy_kv.cu; include from .cu files only): 16-byte weight loads
// that convert to f32, and the weight-dtype dispatch.
#ifndef DYNSPARSE_KERNELS_CUDA_SPARSE_LOADS_CUH_
#define DYNSPARSE_KERNELS_CUDA_SPARSE_LOADS_CUH_

#include <cstdint>
#include <type_traits>

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

// Eight consecutive weights as f32, in two steps (LoadRaw8 then Convert8)
// where a loop issues a batch of loads before it converts any.
template <typename T>
struct Raw8 {
  uint4 v[sizeof(T) == 4 ? 2 : 1];
};
template <typename T>
__device__ __forceinline__ void LoadRaw8(const T* p, Raw8<T>& r) {
  r.v[0] = LoadNoAlloc(p);
  if constexpr (sizeof(T) == 4) r.v[1] = LoadNoAlloc(p + 4);
}
template <typename T>
__device__ __forceinline__ void Convert8(const Raw8<T>& r, float (&f)[8]) {
  if constexpr (sizeof(T) == 4) {
    const uint32_t w[8] = {r.v[0].x, r.v[0].y, r.v[0].z, r.v[0].w,
                           r.v[1].x, r.v[1].y, r.v[1].z, r.v[1].w};
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = __uint_as_float(w[i]);
  } else {
    const uint32_t w[4] = {r.v[0].x, r.v[0].y, r.v[0].z, r.v[0].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (std::is_same_v<T, __half>) {
        const float2 t =
            __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
      } else {  // bf16: the top half of an f32.
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
      }
    }
  }
}
template <typename T>
__device__ __forceinline__ void Load8(const T* p, float (&f)[8]) {
  Raw8<T> r;
  LoadRaw8(p, r);
  Convert8(r, f);
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
