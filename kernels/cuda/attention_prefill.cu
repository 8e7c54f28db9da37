// Causal GQA prefill attention (attention.h explains the strategies).
//
// Prefill: one block of 8 warps per (64-query tile, head). Each warp owns 8
// query rows for the whole kernel: in the score step lane j computes the 8
// scores of key j (q broadcast from shared memory, k rows padded so the
// 16-byte reads of 8 lanes hit distinct banks), the online-softmax update is a
// warp reduction per row, and in the P*V step lane j owns output columns
// j, j+32, ... so V reads are conflict-free and P reads are broadcasts.
// Every kernel that reads the KV cache is templated on its element type KvT
// (float or __half, kv_access.cuh): the cache elements are converted to f32
// where they are loaded, so the arithmetic is the same for both.
// The tensor-core kernel (PrefillAttentionMmaKernel) takes head_dim 64 and
// 128; a split prefill writes partials that LaunchChunkMerge merges.
#include <algorithm>
#include <climits>
#include <cmath>
#include <mutex>
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_kernels.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/kv_access.cuh"
#include "kernels/cuda/mma_f16.cuh"
#include "kernels/cuda/pipelined_attention.h"
#include "kernels/cuda/pipelined_split_plan.h"

namespace dynsparse::cuda {
namespace attention_internal {
namespace {

// The keys [x, y) of this block's share of [0, kmax): all of them, or in a
// kSplit kernel its split (blockIdx.z), which may be empty. The prefill
// kernels take kSplit as a template parameter so the unsplit ones keep their
// registers (one more live value cost the tensor-core kernel a block per SM).
template <bool kSplit>
__device__ __forceinline__ int2 SplitRange(const KernelArgs& a, int kmax) {
  if constexpr (!kSplit) return make_int2(0, kmax);
  const int begin = static_cast<int>(blockIdx.z) * a.split_keys;
  return make_int2(begin, min(kmax, begin + a.split_keys));
}

template <int D>
constexpr int PrefillSmemBytes() {
  return (kTileQ * (D + 4) + kTileK * (D + 4) + kTileK * D + kTileQ * kTileK) *
             static_cast<int>(sizeof(float)) +
         kTileQ * static_cast<int>(sizeof(int));
}

// Loads `rows` cache rows starting at key `k0` of kv head `kvh` into a
// [kTileK][stride] tile; rows at or past `limit` and columns past head_dim
// read as zero.
template <int D>
__device__ __forceinline__ void LoadKvTile(const KernelArgs& a,
                                           const float* base, int kvh, int k0,
                                           int limit, int stride, float* tile) {
  if (a.vec4) {
    constexpr int kVecs = D / 4;
    for (int idx = threadIdx.x; idx < kTileK * kVecs; idx += kThreads) {
      const int r = idx / kVecs;
      const int d = (idx % kVecs) * 4;
      float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
      if (k0 + r < limit && d < a.head_dim) {
        val = *reinterpret_cast<const float4*>(
            base + static_cast<int64_t>(KeyRow(a, k0 + r)) * a.kv_stride +
            static_cast<int64_t>(kvh) * a.head_dim + d);
      }
      *reinterpret_cast<float4*>(tile + r * stride + d) = val;
    }
  } else {
    for (int idx = threadIdx.x; idx < kTileK * D; idx += kThreads) {
      const int r = idx / D;
      const int d = idx % D;
      float val = 0.f;
      if (k0 + r < limit && d < a.head_dim) {
        val = base[static_cast<int64_t>(KeyRow(a, k0 + r)) * a.kv_stride +
                   static_cast<int64_t>(kvh) * a.head_dim + d];
      }
      tile[r * stride + d] = val;
    }
  }
}

// The same from an f16 cache. Not unrolled: with the f32 loop's unrolling
// ptxas fits some instantiations into 128 registers by spilling.
template <int D>
__device__ __forceinline__ void LoadKvTile(const KernelArgs& a,
                                           const __half* base, int kvh, int k0,
                                           int limit, int stride, float* tile) {
  if (a.vec4) {
    constexpr int kVecs = D / 4;
#pragma unroll 1
    for (int idx = threadIdx.x; idx < kTileK * kVecs; idx += kThreads) {
      const int r = idx / kVecs;
      const int d = (idx % kVecs) * 4;
      uint2 bits = make_uint2(0u, 0u);  // four +0 halves
      if (k0 + r < limit && d < a.head_dim) {
        bits = *reinterpret_cast<const uint2*>(
            base + static_cast<int64_t>(KeyRow(a, k0 + r)) * a.kv_stride +
            static_cast<int64_t>(kvh) * a.head_dim + d);
      }
      *reinterpret_cast<float4*>(tile + r * stride + d) =
          KvLoad4(reinterpret_cast<const __half*>(&bits));
    }
  } else {
#pragma unroll 1
    for (int idx = threadIdx.x; idx < kTileK * D; idx += kThreads) {
      const int r = idx / D;
      const int d = idx % D;
      float val = 0.f;
      if (k0 + r < limit && d < a.head_dim) {
        val = KvLoad(base +
                     (static_cast<int64_t>(KeyRow(a, k0 + r)) * a.kv_stride +
                      static_cast<int64_t>(kvh) * a.head_dim + d));
      }
      tile[r * stride + d] = val;
    }
  }
}

template <int D, bool kSplit, typename KvT>
__global__ void __launch_bounds__(kThreads)
    PrefillAttentionKernel(const KernelArgs a) {
  constexpr int kCols = D / 32;
  constexpr int kQStride = D + 4;
  extern __shared__ float4 smem_vec[];
  float* qs = reinterpret_cast<float*>(smem_vec);
  float* ks = qs + kTileQ * kQStride;
  float* vs = ks + kTileK * kQStride;
  float* ps = vs + kTileK * D;
  int* qpos = reinterpret_cast<int*>(ps + kTileQ * kTileK);

  const int h = blockIdx.y;
  const int kvh = h / a.group;
  const int q0 = blockIdx.x * kTileQ;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;

  for (int r = threadIdx.x; r < kTileQ; r += kThreads) {
    qpos[r] = q0 + r < a.n ? a.positions[q0 + r] : -1;
  }
  for (int idx = threadIdx.x; idx < kTileQ * D; idx += kThreads) {
    const int r = idx / D;
    const int d = idx % D;
    float val = 0.f;
    if (q0 + r < a.n && d < a.head_dim) {
      val = a.q[static_cast<int64_t>(q0 + r) * a.q_stride +
                static_cast<int64_t>(h) * a.head_dim + d] *
            a.scale;
    }
    qs[r * kQStride + d] = val;
  }
  __syncthreads();
  int max_pos = -1;
  for (int r = 0; r < kTileQ; ++r) max_pos = max(max_pos, qpos[r]);
  const int kmax = max_pos < 0 ? 0 : VisibleKeys(a, max_pos);

  const int r0 = warp * kRowsPerWarp;
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kCols];
  int my_pos[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
    my_pos[r] = qpos[r0 + r];
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[r][c] = 0.f;
  }

  const int2 range = SplitRange<kSplit>(a, kmax);
  for (int k0 = range.x; k0 < range.y; k0 += kTileK) {
    __syncthreads();  // The previous tile is fully consumed.
    LoadKvTile<D>(a, KvPtr<KvT>(a.k), kvh, k0, range.y, kQStride, ks);
    LoadKvTile<D>(a, KvPtr<KvT>(a.v), kvh, k0, range.y, D, vs);
    __syncthreads();

    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.f;
    const float* krow = ks + lane * kQStride;
#pragma unroll 4
    for (int d = 0; d < D; d += 4) {
      const float4 kv = *reinterpret_cast<const float4*>(krow + d);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 qv =
            *reinterpret_cast<const float4*>(qs + (r0 + r) * kQStride + d);
        s[r] += qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
      }
    }
    const int key = k0 + lane;
    const int key_pos = key < range.y ? KeyRow(a, key) : INT_MAX;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      float sr = key_pos <= my_pos[r] ? s[r] : -INFINITY;
      float tile_max = sr;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
      }
      const float m_new = fmaxf(m[r], tile_max);
      float p = 0.f, alpha = 1.f;
      if (m_new != -INFINITY) {
        p = expf(sr - m_new);
        alpha = expf(m[r] - m_new);
      }
      l[r] = l[r] * alpha + WarpSum(p);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[r][c] *= alpha;
      ps[(r0 + r) * kTileK + lane] = p;
    }
    __syncwarp();
#pragma unroll 4
    for (int j = 0; j < kTileK; ++j) {
      float vv[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) vv[c] = vs[j * D + lane + 32 * c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float p = ps[(r0 + r) * kTileK + j];
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[r][c] += p * vv[c];
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = q0 + r0 + r;
    if (row >= a.n) continue;
    if constexpr (kSplit) {  // A partial for DecodeCombineKernel.
      float* entry = ScratchEntry(a, row, h, static_cast<int>(blockIdx.z));
      if (lane == 0) {
        entry[0] = m[r];
        entry[1] = l[r];
      }
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int d = lane + 32 * c;
        if (d < a.head_dim) entry[2 + d] = acc[r][c];
      }
      continue;
    }
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int d = lane + 32 * c;
      if (d < a.head_dim) {
        a.out[static_cast<int64_t>(row) * a.q_stride +
              static_cast<int64_t>(h) * a.head_dim + d] = acc[r][c] * inv;
      }
    }
  }
}

// Tensor-core prefill (mma.sync m16n8k16, f16 inputs, f32 accumulate), for
// head_dim 64 or 128. Block: 4 warps x 16 query rows; key tiles of 64 staged
// in shared memory as f16, row-major (K's B fragments are 32-bit loads, V's
// come transposed through ldmatrix.trans). The C fragment of S = Q K^T has the
// layout of the A fragment of P V, so P never leaves registers. An f16 cache
// is staged as it is (8-byte copies): rounding an f32 cache to f16 on the way
// in gives the same tiles.
constexpr int kMmaWarps = 4;
constexpr int kMmaRows = 16 * kMmaWarps;  // 64 queries per block
constexpr int kMmaKeys = 64;
static_assert(kMmaRows == kTileQ && kMmaKeys % kTileK == 0,
              "key splits and PrefillKeySplits assume these tiles");

template <int D, bool kSplit, typename KvT>
__global__ void __launch_bounds__(kMmaWarps * 32)
    PrefillAttentionMmaKernel(const KernelArgs a) {
  constexpr int kKStride = D + 8;  // halves per K / V row (16-byte rows,
                                   // shifted 4 banks from row to row)
  __shared__ __align__(16) __half ks[kMmaKeys * kKStride];
  __shared__ __align__(16) __half vs[kMmaKeys * kKStride];
  __shared__ int kmax_shared;
  __shared__ int kpos[kMmaKeys];  // Positions of the staged keys.

  const int h = blockIdx.y;
  const int kvh = h / a.group;
  const int q0 = blockIdx.x * kMmaRows;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int g = lane >> 2;  // fragment row group
  const int t = lane & 3;   // fragment column pair

  if (threadIdx.x == 0) kmax_shared = 0;
  __syncthreads();
  if (threadIdx.x < kMmaRows && q0 + threadIdx.x < a.n) {
    atomicMax(&kmax_shared, a.positions[q0 + threadIdx.x] + 1);
  }
  const int row_a = q0 + warp * 16 + g;  // this thread's two query rows
  const int row_b = row_a + 8;
  const int pos_a = row_a < a.n ? a.positions[row_a] : -1;
  const int pos_b = row_b < a.n ? a.positions[row_b] : -1;

  // Q fragments (f16) for all D/16 k-steps, scaled by scale * log2(e) for
  // OnlineSoftmaxUpdate's exp2.
  uint32_t qf[D / 16][4];
  LoadQueryFragments<D>(qf,
                        a.q + static_cast<int64_t>(row_a) * a.q_stride +
                            static_cast<int64_t>(h) * D,
                        a.q_stride, row_a < a.n, row_b < a.n, t,
                        a.scale * static_cast<float>(M_LOG2E));
  __syncthreads();
  const int kmax = kmax_shared == 0 ? 0 : VisibleKeys(a, kmax_shared - 1);

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.f, l_b = 0.f;

  const int2 range = SplitRange<kSplit>(a, kmax);
  for (int k0 = range.x; k0 < range.y; k0 += kMmaKeys) {
    __syncthreads();  // The previous tile is consumed.
    // Stage K (row-major) and V (transposed) as f16; rows past the range
    // are zero (the cache beyond the sequence holds arbitrary bytes).
    for (int r = threadIdx.x; r < kMmaKeys; r += kMmaWarps * 32) {
      kpos[r] = k0 + r < range.y ? KeyRow(a, k0 + r) : INT_MAX;
    }
    for (int idx = threadIdx.x; idx < kMmaKeys * D / 4; idx += kMmaWarps * 32) {
      const int r = idx / (D / 4);
      const int d = (idx % (D / 4)) * 4;
      if constexpr (std::is_same_v<KvT, float>) {
        float4 kv = make_float4(0.f, 0.f, 0.f, 0.f);
        float4 vv = kv;
        if (k0 + r < range.y) {
          const int64_t off =
              static_cast<int64_t>(KeyRow(a, k0 + r)) * a.kv_stride +
              static_cast<int64_t>(kvh) * D + d;
          kv = KvLoad4(a.k + off);
          vv = KvLoad4(a.v + off);
        }
        *reinterpret_cast<uint2*>(ks + r * kKStride + d) =
            make_uint2(PackHalf2(kv.x, kv.y), PackHalf2(kv.z, kv.w));
        *reinterpret_cast<uint2*>(vs + r * kKStride + d) =
            make_uint2(PackHalf2(vv.x, vv.y), PackHalf2(vv.z, vv.w));
      } else {
        uint2 kb = make_uint2(0u, 0u);
        uint2 vb = kb;
        if (k0 + r < range.y) {
          const int64_t off =
              static_cast<int64_t>(KeyRow(a, k0 + r)) * a.kv_stride +
              static_cast<int64_t>(kvh) * D + d;
          kb = *reinterpret_cast<const uint2*>(KvPtr<KvT>(a.k) + off);
          vb = *reinterpret_cast<const uint2*>(KvPtr<KvT>(a.v) + off);
        }
        *reinterpret_cast<uint2*>(ks + r * kKStride + d) = kb;
        *reinterpret_cast<uint2*>(vs + r * kKStride + d) = vb;
      }
    }
    __syncthreads();

    float sc[kMmaKeys / 8][4];
#pragma unroll
    for (int j = 0; j < kMmaKeys / 8; ++j) {
      sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
    }
#pragma unroll
    for (int s = 0; s < D / 16; ++s) {
#pragma unroll
      for (int j = 0; j < kMmaKeys / 8; ++j) {
        const __half* kr = ks + (8 * j + g) * kKStride + 16 * s + 2 * t;
        MmaF16(sc[j], qf[s], *reinterpret_cast<const uint32_t*>(kr),
               *reinterpret_cast<const uint32_t*>(kr + 8));
      }
    }
#pragma unroll
    for (int j = 0; j < kMmaKeys / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int key_pos = kpos[8 * j + 2 * t + e];
        if (key_pos > pos_a) sc[j][e] = -INFINITY;
        if (key_pos > pos_b) sc[j][2 + e] = -INFINITY;
      }
    }
    OnlineSoftmaxUpdate(sc, o, m_a, m_b, l_a, l_b);
#pragma unroll
    for (int i = 0; i < kMmaKeys / 16; ++i) {
      // The probabilities of keys 16i..16i+15 as the A fragment.
      const uint32_t p[4] = {PackHalf2(sc[2 * i][0], sc[2 * i][1]),
                             PackHalf2(sc[2 * i][2], sc[2 * i][3]),
                             PackHalf2(sc[2 * i + 1][0], sc[2 * i + 1][1]),
                             PackHalf2(sc[2 * i + 1][2], sc[2 * i + 1][3])};
      // B fragments of V (k = key, n = dim) from row-major V with
      // ldmatrix.trans: lanes 0-15 address keys 16i..16i+15 of column 8n.
      const __half* vrow = vs + (16 * i + (lane & 15)) * kKStride;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        const uint32_t addr =
            static_cast<uint32_t>(__cvta_generic_to_shared(vrow + 8 * n));
        uint32_t b0, b1;
        asm volatile(
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
            : "=r"(b0), "=r"(b1)
            : "r"(addr));
        MmaF16(o[n], p, b0, b1);
      }
    }
  }

#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    l_a += __shfl_xor_sync(0xffffffffu, l_a, off);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, off);
  }
  if constexpr (kSplit) {  // Partials for DecodeCombineKernel.
    const int split = static_cast<int>(blockIdx.z);
    if (row_a < a.n) {
      WriteSplitPartial<D>(ScratchEntry(a, row_a, h, split), t,
                           SplitPartialMax(m_a), l_a, o, 0);
    }
    if (row_b < a.n) {
      WriteSplitPartial<D>(ScratchEntry(a, row_b, h, split), t,
                           SplitPartialMax(m_b), l_b, o, 2);
    }
    return;
  }
  const float inv_a = l_a > 0.f ? 1.f / l_a : 0.f;
  const float inv_b = l_b > 0.f ? 1.f / l_b : 0.f;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = h * D + 8 * n + 2 * t;
    if (row_a < a.n) {
      float2* dst = reinterpret_cast<float2*>(
          a.out + static_cast<int64_t>(row_a) * a.q_stride + col);
      *dst = make_float2(o[n][0] * inv_a, o[n][1] * inv_a);
    }
    if (row_b < a.n) {
      float2* dst = reinterpret_cast<float2*>(
          a.out + static_cast<int64_t>(row_b) * a.q_stride + col);
      *dst = make_float2(o[n][2] * inv_b, o[n][3] * inv_b);
    }
  }
}

// Blocks along the key axis of a prefill grid (blockIdx.z).
unsigned PrefillSplits(const KernelArgs& a) {
  return a.split_keys > 0 ? static_cast<unsigned>(a.chunks) : 1u;
}

template <int D, bool kSplit, typename KvT>
absl::Status LaunchPrefill(DeviceContext& ctx, const KernelArgs& a) {
  constexpr int kSmem = PrefillSmemBytes<D>();
  static std::once_flag once;
  static cudaError_t attr_error = cudaSuccess;
  std::call_once(once, [] {
    attr_error = cudaFuncSetAttribute(
        PrefillAttentionKernel<D, kSplit, KvT>,
        cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  });
  DS_CUDA_RETURN_IF_ERROR(attr_error);
  const dim3 grid(static_cast<unsigned>(CeilDiv(a.n, kTileQ)),
                  static_cast<unsigned>(a.heads), PrefillSplits(a));
  PrefillAttentionKernel<D, kSplit, KvT>
      <<<grid, kThreads, kSmem, ctx.stream()>>>(a);
  return LastLaunchStatus("PrefillAttentionKernel");
}

template <int D, typename KvT>
absl::Status LaunchPrefill(DeviceContext& ctx, const KernelArgs& a) {
  return a.split_keys > 0 ? LaunchPrefill<D, true, KvT>(ctx, a)
                          : LaunchPrefill<D, false, KvT>(ctx, a);
}

template <int D, bool kSplit, typename KvT>
absl::Status LaunchPrefillMma(DeviceContext& ctx, const KernelArgs& a) {
  const dim3 grid(static_cast<unsigned>(CeilDiv(a.n, kMmaRows)),
                  static_cast<unsigned>(a.heads), PrefillSplits(a));
  PrefillAttentionMmaKernel<D, kSplit, KvT>
      <<<grid, kMmaWarps * 32, 0, ctx.stream()>>>(a);
  return LastLaunchStatus("PrefillAttentionMmaKernel");
}

template <int D, typename KvT>
absl::Status LaunchPrefillMma(DeviceContext& ctx, const KernelArgs& a) {
  return a.split_keys > 0 ? LaunchPrefillMma<D, true, KvT>(ctx, a)
                          : LaunchPrefillMma<D, false, KvT>(ctx, a);
}

}  // namespace
}  // namespace attention_internal

using attention_internal::CheckArgs;
using attention_internal::KernelArgs;
using attention_internal::kMmaKeys;
using attention_internal::kTileQ;
using attention_internal::LaunchChunkMerge;
using attention_internal::LaunchPrefill;
using attention_internal::LaunchPrefillMma;
using attention_internal::WithHeadDim;

absl::Status PrefillAttention(DeviceContext& ctx,
                              const DeviceAttentionArgs& args,
                              int64_t max_keys) {
  KernelArgs a;
  if (absl::Status s = CheckArgs(args, &a); !s.ok()) return s;
  if (a.n == 0) return absl::OkStatus();
  a.max_keys = static_cast<int>(std::min<int64_t>(max_keys, a.max_keys));
  a.split_keys = 0;
  if (args.key_splits > 1) {
    if (args.split_scratch == nullptr) {
      return absl::InvalidArgumentError("attention: key splits need scratch");
    }
    // Whole key tiles of both kernels (kMmaKeys is a multiple of kTileK),
    // as PipelinedSplitCount counts them.
    static_assert(kMmaKeys == kPipelinedStageKeys);
    const int span =
        static_cast<int>(KeySplitSpan(a.max_keys, args.key_splits));
    const int splits = static_cast<int>(CeilDiv(a.max_keys, span));
    if (splits > 1) {
      a.split_keys = span;
      a.chunks = splits;
      a.scratch = args.split_scratch;
    }
  }
  const bool pipelined =
      args.pipelined_splits && args.tensor_cores && a.split_keys > 0 &&
      a.vec4 && PipelinedSplitSupported(args.head_dim) && IsAligned(a.q, 16) &&
      IsAligned(a.k, 16) && IsAligned(a.v, 16);
  const absl::Status launched = [&]() -> absl::Status {
    if (pipelined) {
      PipelinedSplitArgs p;
      p.q = a.q;
      p.k = args.k_cache->raw_data();
      p.v = args.v_cache->raw_data();
      p.kv_half = args.k_cache->dtype() == DType::kF16;
      p.positions = a.positions;
      p.key_rows = a.key_rows;
      p.partials = a.scratch;
      p.n = a.n;
      p.heads = a.heads;
      p.group = a.group;
      p.head_dim = a.head_dim;
      p.max_keys = a.max_keys;
      p.splits = a.chunks;
      p.split_keys = a.split_keys;
      p.scale = a.scale;
      return PipelinedSplitAttention(ctx, p);
    }
    return DispatchKv(*args.k_cache, [&](auto kv) -> absl::Status {
      using KvT = decltype(kv);
      if (args.tensor_cores && a.vec4 && IsAligned(a.q, 8) &&
          IsAligned(a.out, 8) &&
          (args.head_dim == 64 || args.head_dim == 128)) {
        return args.head_dim == 64 ? LaunchPrefillMma<64, KvT>(ctx, a)
                                   : LaunchPrefillMma<128, KvT>(ctx, a);
      }
      return WithHeadDim(args.head_dim, [&](auto d) {
        return LaunchPrefill<decltype(d)::value, KvT>(ctx, a);
      });
    });
  }();
  if (!launched.ok() || a.split_keys == 0) return launched;
  return LaunchChunkMerge(ctx, a, /*pdl=*/false);
}

int64_t PrefillKeySplits(int64_t rows, int64_t heads, int64_t max_keys,
                         int sm_count) {
  const int64_t blocks = CeilDiv(rows, int64_t{kTileQ}) * heads;
  if (blocks <= 0 || blocks >= sm_count) return 1;
  return std::clamp<int64_t>(CeilDiv(2 * int64_t{sm_count}, blocks), 1,
                             std::max<int64_t>(1, CeilDiv(max_keys, kMmaKeys)));
}

int64_t PrefillSplitScratchFloats(const DeviceAttentionArgs& args) {
  return args.key_splits <= 1 ? 0
                              : args.q->dim(0) * args.num_heads *
                                    args.key_splits * (args.head_dim + 2);
}

}  // namespace dynsparse::cuda
