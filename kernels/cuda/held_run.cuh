// HeldRun: the decode attention kernels' registers for a lane's part of
// one cached key or value row (attention_decode.cu, attention_decode_rows.cu).
#ifndef DYNSPARSE_KERNELS_CUDA_HELD_RUN_CUH_
#define DYNSPARSE_KERNELS_CUDA_HELD_RUN_CUH_

#include <cuda_fp16.h>

#include <cstring>

namespace dynsparse::cuda::attention_internal {

// A lane's kCols elements of one key or value row, held from the load to
// their use: f32 values, or for an f16 cache packed pairs (half the
// registers, so a warp holds 16 keys of an f16 cache where it holds 8 f32
// ones; DecodeChunkKeys).
template <typename KvT, int kCols>
struct HeldRun {
  float v[kCols];
  __device__ __forceinline__ float at(int c) const { return v[c]; }
  __device__ __forceinline__ void set(int c, float x) { v[c] = x; }
};
template <int kCols>
struct HeldRun<__half, kCols> {
  static constexpr int kPairs = (kCols + 1) / 2;
  __half2 v[kPairs];
  __device__ __forceinline__ float at(int c) const {
    return c % 2 == 0 ? __low2float(v[c / 2]) : __high2float(v[c / 2]);
  }
  __device__ __forceinline__ void set(int c, float x) {
    const __half h = __float2half_rn(x);
    v[c / 2] = c % 2 == 0 ? __halves2half2(h, __high2half(v[c / 2]))
                          : __halves2half2(__low2half(v[c / 2]), h);
  }
  // The run at p (aligned to its size in bytes, up to 16) in one load; zeros
  // when !load.
  __device__ __forceinline__ void Load(const __half* p, bool load) {
    if constexpr (kCols == 8) {
      const uint4 bits =
          load ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0);
      static_assert(sizeof(v) == sizeof(bits));
      memcpy(v, &bits, sizeof(bits));
    } else if constexpr (kCols == 4) {
      const uint2 bits =
          load ? *reinterpret_cast<const uint2*>(p) : make_uint2(0, 0);
      memcpy(v, &bits, sizeof(bits));
    } else if constexpr (kCols == 2) {
      v[0] =
          load ? *reinterpret_cast<const __half2*>(p) : __float2half2_rn(0.f);
    } else {
      v[0] = __halves2half2(load ? *p : __float2half_rn(0.f),
                            __float2half_rn(0.f));
    }
  }
};

}  // namespace dynsparse::cuda::attention_internal

#endif  // DYNSPARSE_KERNELS_CUDA_HELD_RUN_CUH_
