// KV-cache element access for kernels templated on the cache's element type
// (include from .cu files only). CudaBackend keeps K/V in f16 by default
// (Backend::KvCacheDtype): half the bytes of f32 for every decode attention,
// and tensor-core kernels can stage the rows as they are. Kernels keep their
// arithmetic in f32; these helpers convert at the load and round to nearest
// at the store, so an f16 cache holds exactly what a host F32ToF16 of the
// f32 row would.
#ifndef DYNSPARSE_KERNELS_CUDA_KV_ACCESS_CUH_
#define DYNSPARSE_KERNELS_CUDA_KV_ACCESS_CUH_

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/tensor.h"

namespace dynsparse::cuda {

template <typename KvT>
inline constexpr bool kIsKvType =
    std::is_same_v<KvT, float> || std::is_same_v<KvT, __half>;

template <typename KvT>
__device__ __forceinline__ float KvLoad(const KvT* p) {
  static_assert(kIsKvType<KvT>);
  if constexpr (std::is_same_v<KvT, float>) {
    return *p;
  } else {
    return __half2float(*p);
  }
}

// Two consecutive elements; p is 2-element aligned.
template <typename KvT>
__device__ __forceinline__ float2 KvLoad2(const KvT* p) {
  static_assert(kIsKvType<KvT>);
  if constexpr (std::is_same_v<KvT, float>) {
    return *reinterpret_cast<const float2*>(p);
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(p));
  }
}

// Four consecutive elements; p is 4-element aligned (16 bytes f32, 8 f16).
template <typename KvT>
__device__ __forceinline__ float4 KvLoad4(const KvT* p) {
  static_assert(kIsKvType<KvT>);
  if constexpr (std::is_same_v<KvT, float>) {
    return *reinterpret_cast<const float4*>(p);
  } else {
    const uint2 bits = *reinterpret_cast<const uint2*>(p);
    const float2 lo =
        __half22float2(*reinterpret_cast<const __half2*>(&bits.x));
    const float2 hi =
        __half22float2(*reinterpret_cast<const __half2*>(&bits.y));
    return make_float4(lo.x, lo.y, hi.x, hi.y);
  }
}

template <typename KvT>
__device__ __forceinline__ void KvStore(KvT* p, float v) {
  static_assert(kIsKvType<KvT>);
  if constexpr (std::is_same_v<KvT, float>) {
    *p = v;
  } else {
    *p = __float2half_rn(v);
  }
}

// Four consecutive elements; p is 4-element aligned.
template <typename KvT>
__device__ __forceinline__ void KvStore4(KvT* p, float4 v) {
  static_assert(kIsKvType<KvT>);
  if constexpr (std::is_same_v<KvT, float>) {
    *reinterpret_cast<float4*>(p) = v;
  } else {
    const __half2 lo = __floats2half2_rn(v.x, v.y);
    const __half2 hi = __floats2half2_rn(v.z, v.w);
    uint2 bits;
    bits.x = *reinterpret_cast<const uint32_t*>(&lo);
    bits.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(p) = bits;
  }
}

// OK for an f32 or f16 cache tensor; `what` names it in the error.
inline absl::Status CheckKvDtype(const Tensor& cache, const char* what) {
  if (cache.dtype() == DType::kF32 || cache.dtype() == DType::kF16) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": a KV cache must be f32 or f16, got ", cache.DebugString()));
}

// OK for K and V caches that are both f32 or both f16.
inline absl::Status CheckKvPair(const Tensor& k_cache, const Tensor& v_cache,
                                const char* what) {
  if (absl::Status s = CheckKvDtype(k_cache, what); !s.ok()) return s;
  if (v_cache.dtype() != k_cache.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": v_cache ", v_cache.DebugString(),
        " must have the dtype of k_cache ", k_cache.DebugString()));
  }
  return absl::OkStatus();
}

// Runs fn(float{}) or fn(__half{}) by the cache's element type (checked with
// CheckKvDtype or CheckKvPair first), so a launcher instantiates its kernel for
// both.
template <typename Fn>
decltype(auto) DispatchKv(const Tensor& cache, Fn&& fn) {
  if (cache.dtype() == DType::kF16) return fn(__half{});
  return fn(float{});
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_KV_ACCESS_CUH_
