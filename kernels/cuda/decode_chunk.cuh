// Device code the split-K decode attention kernels share
// (attention_decode.cu, attention_decode_rows.cu): HeldRun, a lane's
// registers for its part of one cached key or value row, and ChunkEntry,
// a chunk's partial from the rows a block holds.
#ifndef DYNSPARSE_KERNELS_CUDA_DECODE_CHUNK_CUH_
#define DYNSPARSE_KERNELS_CUDA_DECODE_CHUNK_CUH_

#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/attention_kernels.cuh"
#include "kernels/cuda/cuda_utils.cuh"

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

// The head-dim column of a lane's c-th element of a held run. f32:
// interleaved, so a warp's load is one 128-byte line. f16: kCols consecutive
// halves a lane, loaded as one run (a 128-wide row: one 8-byte load a lane
// instead of four 2-byte ones; interleaved f16 loads ran slower than f32,
// h200_run86).
template <typename KvT, int kCols>
__device__ __forceinline__ int HeldColumn(int lane, int c) {
  return std::is_same_v<KvT, float> ? lane + 32 * c : kCols * lane + c;
}

// One (row, head)'s partial over a chunk into `entry` (max, sum, then
// head_dim weighted sums): each warp scores its held keys (kk, counted iff
// live) against the row's scaled query q and weighs its held values (vv),
// and the block merges the warps through shared memory. All threads call it.
template <int D, int kKeysPerWarp, typename KvT>
__device__ __forceinline__ void ChunkEntry(
    const float (&q)[D / 32], const HeldRun<KvT, D / 32> (&kk)[kKeysPerWarp],
    const HeldRun<KvT, D / 32> (&vv)[kKeysPerWarp],
    const bool (&live)[kKeysPerWarp], int head_dim, float* entry) {
  constexpr int kCols = D / 32;
  __shared__ float warp_m[kWarps], warp_l[kWarps];
  __shared__ float warp_acc[kWarps][D];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  float s[kKeysPerWarp];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < kKeysPerWarp; ++j) {
    float dot = 0.f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) dot += q[c] * kk[j].at(c);
    dot = WarpSum(dot);
    s[j] = live[j] ? dot : -INFINITY;
    m = fmaxf(m, s[j]);
  }
  float l = 0.f;
  float acc[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) acc[c] = 0.f;
  if (m != -INFINITY) {
#pragma unroll
    for (int j = 0; j < kKeysPerWarp; ++j) {
      const float p = expf(s[j] - m);
      l += p;
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[c] += p * vv[j].at(c);
    }
  }
  if (lane == 0) {
    warp_m[warp] = m;
    warp_l[warp] = l;
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    warp_acc[warp][HeldColumn<KvT, kCols>(lane, c)] = acc[c];
  }
  __syncthreads();

  float block_m = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) block_m = fmaxf(block_m, warp_m[w]);
  float weight[kWarps];
  float block_l = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = warp_l[w] > 0.f ? expf(warp_m[w] - block_m) : 0.f;
    block_l += warp_l[w] * weight[w];
  }
  if (threadIdx.x == 0) {
    entry[0] = block_m;
    entry[1] = block_l;
  }
  for (int d = threadIdx.x; d < head_dim; d += kThreads) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][d] * weight[w];
    entry[2 + d] = sum;
  }
}

}  // namespace dynsparse::cuda::attention_internal

#endif  // DYNSPARSE_KERNELS_CUDA_DECODE_CHUNK_CUH_
