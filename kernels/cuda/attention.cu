// Causal GQA attention kernels (attention.h explains the two strategies).
//
// Prefill: one block of 8 warps per (64-query tile, head). Each warp owns 8
// query rows for the whole kernel: in the score step lane j computes the 8
// scores of key j (q broadcast from shared memory, k rows padded so the
// 16-byte reads of 8 lanes hit distinct banks), the online-softmax update is a
// warp reduction per row, and in the P*V step lane j owns output columns
// j, j+32, ... so V reads are conflict-free and P reads are broadcasts.
// Decode: lane j owns head dimensions j, j+32, ... (an f16 cache: a run of
// head_dim / 32 adjacent ones); each warp takes 8 keys of the block's 64-key
// chunk (16 of 128 for long f16 caches) with all their loads issued before
// any reduction.
// Every kernel that reads the KV cache is templated on its element type KvT
// (float or __half, kv_access.cuh): the cache elements are converted to f32
// where they are loaded, so the arithmetic is the same for both.
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <mutex>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/kv_access.cuh"
#include "kernels/cuda/mma_f16.cuh"
#include "kernels/cuda/pipelined_attention.h"
#include "kernels/cuda/pipelined_split_plan.h"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTileQ = 64;
constexpr int kTileK = 32;
constexpr int kRowsPerWarp = kTileQ / kWarps;  // 8

struct KernelArgs {
  const float* q;
  // The caches, [capacity, kv_stride] elements of the kernel's KvT (KvPtr).
  // Typed float, not void: with void pointers NVVM loads the decode kernels'
  // parameters differently and their f32 register counts change.
  const float* k;
  const float* v;
  const int32_t* positions;
  // Token pruning: key j is cache row key_rows[j] at that position
  // (ascending, max_keys of them); null: key j is row j at position j.
  const int32_t* key_rows;
  float* out;
  float* scratch;
  int* counters;  // decode: [n, heads] zeroed, or null (separate combine)
  const int32_t* head_ids;  // decode: compact head -> query head, or null
  int n;
  int heads;
  int group;  // query heads per kv head
  int head_dim;
  int64_t q_stride;   // floats per q / out row
  int64_t kv_stride;  // elements per cache row
  int max_keys;       // keys a row may see at most (<= capacity)
  int chunks;         // decode: key chunks per (row, head); split prefill:
                      // key splits
  int split_keys;     // split prefill: keys per split (blockIdx.z); 0: none
  float scale;
  bool vec4;  // head_dim % 4 == 0 and rows aligned to 4 elements
  // Decode of one new row (DecodeAttentionWithNewRow, else null): q is the
  // row before RoPE, new_k / new_v its key and value ([kv heads * head_dim],
  // before RoPE), k_out / v_out the caches (KvT) they go to at row
  // positions[0]; inv_freq null: no RoPE.
  const float* inv_freq = nullptr;
  const float* new_k = nullptr;
  const float* new_v = nullptr;
  float* k_out = nullptr;
  float* v_out = nullptr;
  // Decode: ask L2 for the block's cached keys and values before waiting on
  // the kernel that writes q (LaunchDecode sets it where positions are the
  // only index and they were staged before the step).
  bool prefetch_kv = false;
  // Decode with the new row fused (DecodeAttentionWithNewRow sets it): load
  // the block's cached keys and values into registers before waiting on the
  // kernel that writes q, k and v (DeviceAttentionArgs::early_kv_loads).
  bool early_kv = false;
  // Decode: merge the chunks in a cluster (DecodeAttentionClusterKernel;
  // DecodeClusterMergeApplies).
  bool cluster_merge = false;
};

// Chunks a (row, head) may have for DecodeAttentionClusterKernel: one
// cluster of at most the portable 8 blocks.
constexpr int kMaxClusterChunks = 8;

// A cache pointer of KernelArgs as the kernel's element type.
template <typename KvT>
__device__ __forceinline__ const KvT* KvPtr(const float* p) {
  return reinterpret_cast<const KvT*>(p);
}
template <typename KvT>
__device__ __forceinline__ KvT* KvPtr(float* p) {
  return reinterpret_cast<KvT*>(p);
}

__device__ __forceinline__ int KeyRow(const KernelArgs& a, int j) {
  return a.key_rows == nullptr ? j : a.key_rows[j];
}

// Keys visible to a query at `pos`: a prefix of the key list.
__device__ __forceinline__ int VisibleKeys(const KernelArgs& a, int pos) {
  return VisibleKeyCount(a.key_rows, a.max_keys, pos);
}

// Scratch entry of (row, head, chunk): max, sum, then head_dim weighted sums.
__device__ __forceinline__ float* ScratchEntry(const KernelArgs& a, int row,
                                               int h, int chunk) {
  return a.scratch +
         ((static_cast<int64_t>(row) * a.heads + h) * a.chunks + chunk) *
             (a.head_dim + 2);
}

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

// Max over the block; every thread gets the result (BlockSum's pattern).
__device__ __forceinline__ float BlockMax(float v, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  }
  __syncthreads();  // scratch may still be read from a previous call.
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float m = lane < warps ? scratch[lane] : -INFINITY;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  }
  return m;
}

// The new row of a fused decode step (DecodeAttentionWithNewRow) in shared
// memory, head_dim floats each at offsets 0, D and 2D: the query head rotated
// by the row's position, and in the block whose chunk holds the row its kv
// head's rotated key and its value. The rotation repeats RopeWriteKvKernel
// (same intrinsics), so q, k and the cache row get the same bits as the
// unfused ops. The block of the kv head's first query head (one per cache
// row) also writes the key and value into cache row `pos`; no block reads
// that row from the cache, so no other block waits for the write. With an
// f16 cache the key and value in shared memory are rounded as the cache
// row is, so every block attends to what the unfused decode would read.
template <int D, typename KvT>
__device__ __forceinline__ void LoadNewRow(const KernelArgs& a, int h, int kvh,
                                           int pos, bool has_key, float* smem) {
  const bool writes = has_key && h % a.group == 0;
  const int hd = a.head_dim;
  const float* q = a.q + static_cast<int64_t>(h) * hd;  // row 0
  const int64_t col0 = static_cast<int64_t>(kvh) * hd;
  const int64_t cache0 = static_cast<int64_t>(pos) * a.kv_stride + col0;
  // Rotates the pair (x[i], x[i + half]) into dst (and the cache row).
  const auto put = [&](float x0, float x1, int i, int half, float c, float sn,
                       bool turn, int slot, KvT* cache) {
    if (turn) {
      const float2 r = RotatePair(x0, x1, c, sn);
      x0 = r.x;
      x1 = r.y;
    }
    if constexpr (!std::is_same_v<KvT, float>) {
      if (slot != 0) {  // A key or value: the cache's rounding.
        x0 = __half2float(__float2half_rn(x0));
        x1 = __half2float(__float2half_rn(x1));
      }
    }
    smem[slot * D + i] = x0;
    if (half > 0) smem[slot * D + i + half] = x1;
    if (cache != nullptr) {
      KvStore(cache + (cache0 + i), x0);
      if (half > 0) KvStore(cache + (cache0 + i + half), x1);
    }
  };
  if (a.inv_freq != nullptr) {
    const int half = hd >> 1;
    const float position = static_cast<float>(pos);
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
      float sn, c;
      sincosf(__fmul_rn(position, a.inv_freq[i]), &sn, &c);
      put(q[i], q[i + half], i, half, c, sn, true, 0, nullptr);
      if (has_key) {
        put(a.new_k[col0 + i], a.new_k[col0 + i + half], i, half, c, sn, true,
            1, writes ? KvPtr<KvT>(a.k_out) : nullptr);
        put(a.new_v[col0 + i], a.new_v[col0 + i + half], i, half, c, sn, false,
            2, writes ? KvPtr<KvT>(a.v_out) : nullptr);
      }
    }
  } else {  // No RoPE (OPT): copies, any head_dim.
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
      put(q[i], 0.f, i, 0, 1.f, 0.f, false, 0, nullptr);
      if (has_key) {
        put(a.new_k[col0 + i], 0.f, i, 0, 1.f, 0.f, false, 1,
            writes ? KvPtr<KvT>(a.k_out) : nullptr);
        put(a.new_v[col0 + i], 0.f, i, 0, 1.f, 0.f, false, 2,
            writes ? KvPtr<KvT>(a.v_out) : nullptr);
      }
    }
  }
  __syncthreads();
}

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

// One chunk of keys of one (row, head): the partial max, sum and weighted
// values into `entry`. Key j of the chunk counts iff j < limit and its cache
// row is at most `pos` (a key list may hold later rows). Every K and V load
// of a warp's keys is issued before any reduction: one memory round trip
// instead of two (the kernel is latency-bound at short contexts). kNewRow:
// q and key `pos` come from `new_row`, never from memory; LoadNewRow fills
// it while the K/V loads are in flight (before them it cost every block one
// more round trip: 8% at 16k keys).
template <int D, bool kNewRow, int kKeysPerWarp, typename KvT>
__device__ __forceinline__ void DecodeChunk(const KernelArgs& a, int row, int h,
                                            int kvh, int pos, int chunk0,
                                            int limit, float* new_row,
                                            float* entry) {
  constexpr int kCols = D / 32;
  __shared__ float warp_m[kWarps], warp_l[kWarps];
  __shared__ float warp_acc[kWarps][D];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  // The head-dim column of this lane's c-th element. f32: interleaved, so a
  // warp's load is one 128-byte line. f16: kCols consecutive halves a lane,
  // loaded as one run (a 128-wide row: one 8-byte load a lane instead of four
  // 2-byte ones; interleaved f16 loads ran slower than f32, h200_run86).
  constexpr bool kRuns = !std::is_same_v<KvT, float>;
  const auto column = [lane](int c) {
    return kRuns ? kCols * lane + c : lane + 32 * c;
  };
  [[maybe_unused]] const bool whole_runs = kRuns && a.vec4 && a.head_dim == D;

  const int key0 = chunk0 + warp * kKeysPerWarp;
  const int64_t col0 = static_cast<int64_t>(kvh) * a.head_dim;
  bool live[kKeysPerWarp];
  int64_t base[kKeysPerWarp];
#pragma unroll
  for (int j = 0; j < kKeysPerWarp; ++j) {
    const int key = key0 + j;
    const int key_row = key < limit ? KeyRow(a, key) : INT_MAX;
    live[j] = key_row <= pos;
    base[j] = live[j] ? static_cast<int64_t>(key_row) * a.kv_stride + col0 : 0;
  }
  HeldRun<KvT, kCols> kk[kKeysPerWarp], vv[kKeysPerWarp];
#pragma unroll
  for (int j = 0; j < kKeysPerWarp; ++j) {
    const bool fresh = kNewRow && key0 + j == pos;
    if constexpr (kRuns) {
      if (whole_runs) {
        const int64_t at = base[j] + kCols * lane;
        kk[j].Load(KvPtr<__half>(a.k) + at, live[j] && !fresh);
        vv[j].Load(KvPtr<__half>(a.v) + at, live[j] && !fresh);
        continue;
      }
    }
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int d = column(c);
      const bool load = live[j] && !fresh && d < a.head_dim;
      kk[j].set(c, load ? KvLoad(KvPtr<KvT>(a.k) + (base[j] + d)) : 0.f);
      vv[j].set(c, load ? KvLoad(KvPtr<KvT>(a.v) + (base[j] + d)) : 0.f);
    }
  }
  if (a.early_kv) PdlWait();  // The loads above are in flight.
  float q[kCols];
  if constexpr (kNewRow) {
    LoadNewRow<D, KvT>(a, h, kvh, pos, pos < chunk0 + kKeysPerWarp * kWarps,
                       new_row);
#pragma unroll
    for (int j = 0; j < kKeysPerWarp; ++j) {
      if (key0 + j != pos) continue;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int d = column(c);
        if (d < a.head_dim) {
          kk[j].set(c, new_row[D + d]);
          vv[j].set(c, new_row[2 * D + d]);
        }
      }
    }
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int d = column(c);
    if constexpr (kNewRow) {
      q[c] = d < a.head_dim ? new_row[d] * a.scale : 0.f;
    } else {
      q[c] = d < a.head_dim ? a.q[static_cast<int64_t>(row) * a.q_stride +
                                  static_cast<int64_t>(h) * a.head_dim + d] *
                                  a.scale
                            : 0.f;
    }
  }
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
  for (int c = 0; c < kCols; ++c) warp_acc[warp][column(c)] = acc[c];
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
  for (int d = threadIdx.x; d < a.head_dim; d += kThreads) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][d] * weight[w];
    entry[2 + d] = sum;
  }
}

// Chunks whose (max, sum) CombineChunks keeps in shared memory; caches of
// more than kCombineChunks * kDecodeKeysPerChunk keys merge serially.
constexpr int kCombineChunks = 512;

// The serial merge: every thread walks all chunks three times.
__device__ __forceinline__ void CombineChunksSerial(const KernelArgs& a, int h,
                                                    int row) {
  float m = -INFINITY;
  for (int c = 0; c < a.chunks; ++c) {
    const float* e = ScratchEntry(a, row, h, c);
    if (__ldcg(e + 1) > 0.f) m = fmaxf(m, __ldcg(e));
  }
  float l = 0.f;
  for (int c = 0; c < a.chunks; ++c) {
    const float* e = ScratchEntry(a, row, h, c);
    const float el = __ldcg(e + 1);
    if (el > 0.f) l += el * expf(__ldcg(e) - m);
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
    float sum = 0.f;
    for (int c = 0; c < a.chunks; ++c) {
      const float* e = ScratchEntry(a, row, h, c);
      if (__ldcg(e + 1) > 0.f) sum += __ldcg(e + 2 + d) * expf(__ldcg(e) - m);
    }
    a.out[static_cast<int64_t>(row) * a.q_stride +
          static_cast<int64_t>(h) * a.head_dim + d] = sum * inv;
  }
}

// Merges the chunks of one (head, row) into out (blocks of <= kThreads).
// Each chunk's (max, sum) is read once, by one thread, into shared memory;
// the weighted values are summed by blockDim / head_dim threads per
// dimension, each over every parts-th chunk, then added in part order, so
// the result does not depend on which block merges. Reads the partials with
// ld.global.cg: in the fused path other blocks wrote them during this
// launch, so they must come from L2, not from a possibly stale L1 line.
__device__ __forceinline__ void CombineChunks(const KernelArgs& a, int h,
                                              int row) {
  if (a.chunks > kCombineChunks || static_cast<int>(blockDim.x) < a.head_dim) {
    CombineChunksSerial(a, h, row);
    return;
  }
  __shared__ float chunk_w[kCombineChunks], chunk_l[kCombineChunks];
  __shared__ float part_sum[kThreads];
  __shared__ float reduce[32];
  const int t = threadIdx.x;
  float m = -INFINITY;
  for (int c = t; c < a.chunks; c += blockDim.x) {
    const float* e = ScratchEntry(a, row, h, c);
    const float em = __ldcg(e);
    const float el = __ldcg(e + 1);
    chunk_w[c] = em;
    chunk_l[c] = el;
    if (el > 0.f) m = fmaxf(m, em);
  }
  m = BlockMax(m, reduce);
  float l = 0.f;
  for (int c = t; c < a.chunks; c += blockDim.x) {
    const float w = chunk_l[c] > 0.f ? expf(chunk_w[c] - m) : 0.f;
    chunk_w[c] = w;  // Each thread rewrites only the chunks it read.
    l += chunk_l[c] * w;
  }
  l = BlockSum(l, reduce);  // Its barriers publish chunk_w and chunk_l.
  const float inv = l > 0.f ? 1.f / l : 0.f;
  const int parts = max(1, static_cast<int>(blockDim.x) / a.head_dim);
  const int d = t % a.head_dim;
  const int part = t / a.head_dim;
  float sum = 0.f;
  if (part < parts) {
#pragma unroll 8
    for (int c = part; c < a.chunks; c += parts) {
      if (chunk_l[c] > 0.f) {
        sum += __ldcg(ScratchEntry(a, row, h, c) + 2 + d) * chunk_w[c];
      }
    }
  }
  part_sum[t] = sum;
  __syncthreads();
  if (t < a.head_dim) {
    float total = 0.f;
    for (int p = 0; p < parts; ++p) total += part_sum[p * a.head_dim + t];
    a.out[static_cast<int64_t>(row) * a.q_stride +
          static_cast<int64_t>(h) * a.head_dim + t] = total * inv;
  }
}

// The separate merge (when no counters are given): grid (heads, n), kThreads.
__global__ void __launch_bounds__(kThreads)
    DecodeCombineKernel(const KernelArgs a) {
  PdlWait();
  CombineChunks(a, blockIdx.x, blockIdx.y);
}

// The cached keys and values this block will read (rows below the row's
// position), prefetched into L2 while the previous kernel finishes: they do
// not depend on it, and under PDL this block is often resident before it
// ends. Hints only: a stale position just prefetches other cache rows.
template <int kChunkKeys, typename KvT>
__device__ __forceinline__ void PrefetchCachedKv(const KernelArgs& a) {
  constexpr int kLineElems = 128 / static_cast<int>(sizeof(KvT));
  const int pos = a.positions[blockIdx.z];
  const int key_begin = blockIdx.x * kChunkKeys;
  const int key_end = min(min(pos, a.max_keys), key_begin + kChunkKeys);
  // 128-byte lines a row.
  const int lines = (a.head_dim + kLineElems - 1) / kLineElems;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y / a.group) * a.head_dim;
  for (int i = threadIdx.x; i < 2 * lines * (key_end - key_begin);
       i += kThreads) {
    const int key = key_begin + i / (2 * lines);
    const KvT* cache = KvPtr<KvT>((i & 1) != 0 ? a.v : a.k);
    const KvT* p = cache + static_cast<int64_t>(key) * a.kv_stride + col0 +
                   kLineElems * ((i >> 1) % lines);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
  }
}

// A block's partial for its chunk into `entry`: DecodeChunk's, or an empty
// one when none of the chunk's keys is visible to the row.
template <int D, bool kNewRow, int kKeysPerWarp, typename KvT>
__device__ __forceinline__ void ChunkPartial(const KernelArgs& a, int row,
                                             int h, int kvh, int pos,
                                             int chunk0, int limit,
                                             bool visible, float* entry) {
  if (!visible) {
    if (a.early_kv) PdlWait();
    if (threadIdx.x == 0) {
      entry[0] = -INFINITY;
      entry[1] = 0.f;
    }
    return;
  }
  __shared__ float new_row[kNewRow ? 3 * D : 1];
  DecodeChunk<D, kNewRow, kKeysPerWarp, KvT>(a, row, h, kvh, pos, chunk0, limit,
                                             new_row, entry);
}

// Grid (chunks, heads, rows). Without a key list key j is cache row j; with
// one, the grid covers the listed keys only (their count is known on the
// host: token steps run eagerly) and each key is checked against the row's
// position where it is loaded, so no block searches the list.
template <int D, bool kNewRow, int kKeysPerWarp, typename KvT>
__global__ void __launch_bounds__(kThreads)
    DecodeAttentionKernel(const KernelArgs a) {
  constexpr int kChunkKeys = kKeysPerWarp * kWarps;
  if (a.prefetch_kv && !a.early_kv) PrefetchCachedKv<kChunkKeys, KvT>(a);
  if (!a.early_kv) PdlWait();
  const int chunk = blockIdx.x;
  const int h = blockIdx.y;
  const int row = blockIdx.z;
  const int pos = a.positions[row];
  const int limit =
      a.key_rows == nullptr ? min(pos + 1, a.max_keys) : a.max_keys;
  const int chunk0 = chunk * kChunkKeys;
  const int kvh = (a.head_ids != nullptr
                       ? a.head_ids[static_cast<int64_t>(row) * a.heads + h]
                       : h) /
                  a.group;
  float* entry = ScratchEntry(a, row, h, chunk);
  const bool visible =
      chunk0 < limit && (a.key_rows == nullptr || a.key_rows[chunk0] <= pos);
  ChunkPartial<D, kNewRow, kKeysPerWarp, KvT>(a, row, h, kvh, pos, chunk0,
                                              limit, visible, entry);
  if (a.counters == nullptr) return;
  // Merge in this launch: the block that finishes last for its (row, head)
  // combines all chunks (in a fixed order, so the result does not depend on
  // which block was last) and resets the counter for the next launch.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  int* counter = a.counters + static_cast<int64_t>(row) * a.heads + h;
  if (threadIdx.x == 0) last = atomicAdd(counter, 1) == a.chunks - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  CombineChunks(a, h, row);
  if (threadIdx.x == 0) *counter = 0;
}

// DecodeAttentionKernel for caches of at most kMaxClusterChunks chunks
// (DeviceAttentionArgs::cluster_merge): the chunks of a (row, head) are one
// cluster, each block keeps its partial in shared memory, and block 0 merges
// them through distributed shared memory. No partial goes through global
// memory and no counter is needed, where the in-launch merge pays a fence,
// an atomic and two L2 round trips between the last chunk and the output
// (H200, results/bench/h200_run119: 10.8 -> 9.0 us a Llama-2-7B layer).
// Merged as CombineChunks does (max, then weights, in chunk order); one
// thread per dimension, since there are at most 8 chunks.
template <int D, bool kNewRow, int kKeysPerWarp, typename KvT>
__global__ void __launch_bounds__(kThreads)
    DecodeAttentionClusterKernel(const KernelArgs a) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  namespace cg = cooperative_groups;
  constexpr int kChunkKeys = kKeysPerWarp * kWarps;
  if (a.prefetch_kv && !a.early_kv) PrefetchCachedKv<kChunkKeys, KvT>(a);
  if (!a.early_kv) PdlWait();
  cg::cluster_group cluster = cg::this_cluster();
  const int chunk = blockIdx.x;  // The cluster spans all chunks: its rank.
  const int h = blockIdx.y;
  const int row = blockIdx.z;
  const int pos = a.positions[row];
  const int limit = min(pos + 1, a.max_keys);
  const int chunk0 = chunk * kChunkKeys;
  const int kvh = h / a.group;
  __shared__ float entry[2 + D];
  ChunkPartial<D, kNewRow, kKeysPerWarp, KvT>(a, row, h, kvh, pos, chunk0,
                                              limit, chunk0 < limit, entry);
  cluster.sync();
  if (chunk == 0) {
    const int d = threadIdx.x;
    if (d < a.head_dim) {
      float m = -INFINITY;
      for (int c = 0; c < a.chunks; ++c) {
        const float* e = cluster.map_shared_rank(entry, c);
        if (e[1] > 0.f) m = fmaxf(m, e[0]);
      }
      float l = 0.f, sum = 0.f;
      for (int c = 0; c < a.chunks; ++c) {
        const float* e = cluster.map_shared_rank(entry, c);
        if (e[1] > 0.f) {
          const float w = expf(e[0] - m);
          l += e[1] * w;
          sum += e[2 + d] * w;
        }
      }
      a.out[static_cast<int64_t>(row) * a.q_stride +
            static_cast<int64_t>(h) * a.head_dim + d] =
          l > 0.f ? sum * (1.f / l) : 0.f;
    }
  }
  cluster.sync();  // The other blocks' partials stay until block 0 read them.
#else
  __trap();  // Clusters need sm_90; the launcher checks the device.
#endif
}

absl::Status CheckArgs(const DeviceAttentionArgs& args, KernelArgs* a) {
  if (args.q == nullptr || args.k_cache == nullptr || args.v_cache == nullptr ||
      args.out == nullptr || args.positions == nullptr) {
    return absl::InvalidArgumentError("attention: missing argument");
  }
  for (const Tensor* t : {args.q, args.k_cache, args.v_cache,
                          static_cast<const Tensor*>(args.out)}) {
    if (absl::Status s = CheckOnDevice(*t, "attention operand"); !s.ok()) {
      return s;
    }
    if (t->rank() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attention: operands must be matrices, got ", t->DebugString()));
    }
  }
  for (const Tensor* t : {args.q, static_cast<const Tensor*>(args.out)}) {
    if (t->dtype() != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attention: q and out must be f32, got ", t->DebugString()));
    }
  }
  if (absl::Status s = CheckKvPair(*args.k_cache, *args.v_cache, "attention");
      !s.ok()) {
    return s;
  }
  if (args.head_dim <= 0 || args.head_dim > kMaxAttentionHeadDim ||
      args.num_heads <= 0 || args.num_kv_heads <= 0 ||
      (args.head_ids == nullptr && args.num_heads % args.num_kv_heads != 0) ||
      (args.head_ids != nullptr && args.head_group <= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention: unsupported heads ", args.num_heads, "/",
                     args.num_kv_heads, " x head_dim ", args.head_dim));
  }
  const int64_t n = args.q->dim(0);
  const int64_t q_width = args.num_heads * args.head_dim;
  const int64_t kv_width = args.num_kv_heads * args.head_dim;
  if (args.head_ids != nullptr && n > 8) {
    return absl::InvalidArgumentError("attention: head ids are decode only");
  }
  if (args.q->dim(1) != q_width || args.out->dim(1) != q_width ||
      args.out->dim(0) != n || args.k_cache->dim(1) != kv_width ||
      args.v_cache->shape() != args.k_cache->shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention: shapes q ", args.q->DebugString(), " k ",
        args.k_cache->DebugString(), " v ", args.v_cache->DebugString(),
        " out ", args.out->DebugString(), " do not match ", args.num_heads, "/",
        args.num_kv_heads, " heads of ", args.head_dim));
  }
  a->q = args.q->data<float>();
  // f16 caches too: the kernels read them through KvPtr.
  a->k = static_cast<const float*>(args.k_cache->raw_data());
  a->v = static_cast<const float*>(args.v_cache->raw_data());
  a->positions = args.positions;
  a->key_rows = args.key_rows;
  a->out = args.out->data<float>();
  a->scratch = nullptr;
  a->counters = args.counters;
  a->n = static_cast<int>(n);
  a->heads = static_cast<int>(args.num_heads);
  a->group = static_cast<int>(args.head_ids != nullptr
                                  ? args.head_group
                                  : args.num_heads / args.num_kv_heads);
  a->head_ids = args.head_ids;
  a->head_dim = static_cast<int>(args.head_dim);
  a->q_stride = q_width;
  a->kv_stride = kv_width;
  a->max_keys = static_cast<int>(args.k_cache->dim(0));
  if (args.key_rows != nullptr) {
    if (args.num_keys < 0 || args.num_keys > args.k_cache->dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attention: ", args.num_keys, " listed keys for a cache of ",
          args.k_cache->dim(0), " rows"));
    }
    a->max_keys = static_cast<int>(args.num_keys);
  }
  // Decode: chunks over the cache capacity, so a captured graph stays valid
  // as the sequence grows; over the listed keys only with a key list.
  a->chunks = static_cast<int>(CeilDiv(args.key_rows != nullptr
                                           ? std::max<int64_t>(args.num_keys, 1)
                                           : args.k_cache->dim(0),
                                       DecodeChunkKeys(args)));
  a->split_keys = 0;
  a->scale = args.scale;
  // Four elements: 16 bytes of f32, 8 of f16.
  const uintptr_t vec_bytes = 4 * DTypeSize(args.k_cache->dtype());
  a->vec4 = args.head_dim % 4 == 0 && IsAligned(a->k, vec_bytes) &&
            IsAligned(a->v, vec_bytes);
  return absl::OkStatus();
}

int PickHeadDim(int64_t head_dim) {
  for (int d : {32, 64, 128, 256}) {
    if (head_dim <= d) return d;
  }
  return 0;
}

// launch(std::integral_constant<int, D>) for the kernels' head dim D that
// holds `head_dim` (CheckArgs bounds it by kMaxAttentionHeadDim).
template <typename Launch>
absl::Status WithHeadDim(int64_t head_dim, Launch launch) {
  switch (PickHeadDim(head_dim)) {
    case 32:
      return launch(std::integral_constant<int, 32>());
    case 64:
      return launch(std::integral_constant<int, 64>());
    case 128:
      return launch(std::integral_constant<int, 128>());
    default:
      return launch(std::integral_constant<int, 256>());
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

// After the decode kernel's launch: its status, then the merge kernel when
// the chunks are not merged in the same launch.
absl::Status FinishDecodeLaunch(DeviceContext& ctx, const KernelArgs& a,
                                dim3 grid) {
  if (absl::Status s = LastLaunchStatus("DecodeAttentionKernel"); !s.ok()) {
    return s;
  }
  if (a.counters != nullptr) return absl::OkStatus();  // Merged in-kernel.
  const dim3 combine_grid(grid.y, grid.z);
  LaunchKernel(ctx.programmatic_launch(), DecodeCombineKernel, combine_grid,
               dim3(kThreads), 0, ctx.stream(), a);
  return LastLaunchStatus("DecodeCombineKernel");
}

template <int D, bool kNewRow, typename KvT>
absl::Status LaunchDecode(DeviceContext& ctx, const KernelArgs& args,
                          int64_t chunk_keys) {
  KernelArgs a = args;
  // Head ids and key lists may come from side work joined just before this
  // launch, so only plain decode prefetches (0.4-0.7% of a dense decode
  // step, results/bench/h200_run58).
  a.prefetch_kv = a.key_rows == nullptr && a.head_ids == nullptr &&
                  ctx.programmatic_launch();
  const dim3 grid(static_cast<unsigned>(a.chunks),
                  static_cast<unsigned>(a.heads), static_cast<unsigned>(a.n));
  if constexpr (D == 128) {
    if (a.cluster_merge) {
      cudaLaunchAttribute attributes[2];
      const cudaLaunchConfig_t config =
          ClusterLaunchConfig(grid, dim3(kThreads), 0, ctx.stream(),
                              static_cast<unsigned>(a.chunks),
                              ctx.programmatic_launch(), attributes);
      DS_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(
          &config, DecodeAttentionClusterKernel<D, kNewRow, 8, KvT>, a));
      return LastLaunchStatus("DecodeAttentionClusterKernel");
    }
  }
  // Shorter chunks only where DecodeChunkKeys allows them (head_dim 128),
  // longer ones only for f16 caches of head_dim <= 128.
  constexpr bool kLongChunks = !std::is_same_v<KvT, float> && D <= 128;
  if constexpr (kLongChunks) {
    if (chunk_keys == 2 * kDecodeKeysPerChunk) {
      LaunchKernel(ctx.programmatic_launch(),
                   DecodeAttentionKernel<D, kNewRow, 16, KvT>, grid,
                   dim3(kThreads), 0, ctx.stream(), a);
      return FinishDecodeLaunch(ctx, a, grid);
    }
  }
  if constexpr (D == 128) {
    if (chunk_keys == 16) {
      LaunchKernel(ctx.programmatic_launch(),
                   DecodeAttentionKernel<D, kNewRow, 2, KvT>, grid,
                   dim3(kThreads), 0, ctx.stream(), a);
    } else if (chunk_keys == 32) {
      LaunchKernel(ctx.programmatic_launch(),
                   DecodeAttentionKernel<D, kNewRow, 4, KvT>, grid,
                   dim3(kThreads), 0, ctx.stream(), a);
    } else {
      LaunchKernel(ctx.programmatic_launch(),
                   DecodeAttentionKernel<D, kNewRow, 8, KvT>, grid,
                   dim3(kThreads), 0, ctx.stream(), a);
    }
  } else {
    LaunchKernel(ctx.programmatic_launch(),
                 DecodeAttentionKernel<D, kNewRow, 8, KvT>, grid,
                 dim3(kThreads), 0, ctx.stream(), a);
  }
  return FinishDecodeLaunch(ctx, a, grid);
}

}  // namespace

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
  DecodeCombineKernel<<<dim3(static_cast<unsigned>(a.heads),
                             static_cast<unsigned>(a.n)),
                        kThreads, 0, ctx.stream()>>>(a);
  return LastLaunchStatus("DecodeCombineKernel");
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

// Cache rows above which an f16 cache decodes in 128-key chunks.
constexpr int64_t kLongChunkCacheRows = 2048;

int64_t DecodeChunkKeys(const DeviceAttentionArgs& args) {
  const int64_t keys = args.decode_chunk_keys;
  const int head_dim = PickHeadDim(args.head_dim);
  if (head_dim == 128 && (keys == 16 || keys == 32)) return keys;
  // Long f16 caches: a warp holds 16 keys in about the registers 8 f32 keys
  // take (HeldRun), so a block has the bytes of an f32 block in flight and
  // the grid half the blocks (with 8 keys a warp an f16 cache decoded no
  // faster than f32, h200_run87). Short caches keep more, shorter blocks.
  if (head_dim <= 128 && args.k_cache != nullptr &&
      args.k_cache->dtype() == DType::kF16 &&
      args.k_cache->dim(0) > kLongChunkCacheRows) {
    return 2 * kDecodeKeysPerChunk;
  }
  return kDecodeKeysPerChunk;
}

bool DecodeClusterMergeApplies(const DeviceContext& ctx,
                               const DeviceAttentionArgs& args) {
  return args.cluster_merge && args.key_rows == nullptr &&
         args.head_ids == nullptr && PickHeadDim(args.head_dim) == 128 &&
         args.k_cache != nullptr &&
         DecodeChunkKeys(args) == kDecodeKeysPerChunk &&
         CeilDiv(args.k_cache->dim(0), kDecodeKeysPerChunk) <=
             kMaxClusterChunks &&
         ctx.info().major >= 9;
}

int64_t DecodeAttentionScratchFloats(const DeviceAttentionArgs& args) {
  return args.q->dim(0) * args.num_heads *
         CeilDiv(args.k_cache->dim(0), DecodeChunkKeys(args)) *
         (args.head_dim + 2);
}

absl::Status DecodeAttention(DeviceContext& ctx,
                             const DeviceAttentionArgs& args, float* scratch) {
  KernelArgs a;
  if (absl::Status s = CheckArgs(args, &a); !s.ok()) return s;
  if (a.n == 0) return absl::OkStatus();
  a.scratch = scratch;
  a.cluster_merge = DecodeClusterMergeApplies(ctx, args);
  return DispatchKv(*args.k_cache, [&](auto kv) {
    return WithHeadDim(args.head_dim, [&](auto d) {
      return LaunchDecode<decltype(d)::value, false, decltype(kv)>(
          ctx, a, DecodeChunkKeys(args));
    });
  });
}

absl::Status DecodeAttentionWithNewRow(DeviceContext& ctx,
                                       const DeviceAttentionArgs& args,
                                       const DecodeNewRow& row,
                                       float* scratch) {
  KernelArgs a;
  if (absl::Status s = CheckArgs(args, &a); !s.ok()) return s;
  if (a.n != 1 || args.key_rows != nullptr || args.head_ids != nullptr) {
    return absl::InvalidArgumentError(
        "attention: a new row is one query row over the whole cache");
  }
  if (row.k == nullptr || row.v == nullptr || row.k_cache == nullptr ||
      row.v_cache == nullptr || row.k_cache != args.k_cache ||
      row.v_cache != args.v_cache) {
    return absl::InvalidArgumentError(
        "attention: the new row's caches must be the attention's caches");
  }
  const int64_t kv_width = args.num_kv_heads * args.head_dim;
  for (const Tensor* t : {row.k, row.v}) {
    if (absl::Status s = CheckOnDevice(*t, "attention new row"); !s.ok()) {
      return s;
    }
    if (t->dtype() != DType::kF32 || t->rank() != 2 || t->dim(0) != 1 ||
        t->dim(1) != kv_width) {
      return absl::InvalidArgumentError(
          absl::StrCat("attention: new k / v must be f32 [1, ", kv_width,
                       "], got ", t->DebugString()));
    }
  }
  const bool rotate = row.inv_freq != nullptr && !row.inv_freq->empty();
  if (rotate) {
    if (absl::Status s = CheckOnDevice(*row.inv_freq, "RoPE inv_freq");
        !s.ok()) {
      return s;
    }
    if (args.head_dim % 2 != 0 || row.inv_freq->dtype() != DType::kF32 ||
        row.inv_freq->numel() != args.head_dim / 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("attention: RoPE inv_freq must be f32 [",
                       args.head_dim / 2, "] for head_dim ", args.head_dim,
                       ", got ", row.inv_freq->DebugString()));
    }
    a.inv_freq = row.inv_freq->data<float>();
  }
  a.new_k = row.k->data<float>();
  a.new_v = row.v->data<float>();
  a.k_out = static_cast<float*>(row.k_cache->raw_data());
  a.v_out = static_cast<float*>(row.v_cache->raw_data());
  a.scratch = scratch;
  a.cluster_merge = DecodeClusterMergeApplies(ctx, args);
  // Safe before the wait: every key this kernel loads from the cache (rows
  // below the position) was written by an earlier step, and the positions
  // were staged before the step's first kernel; every decode kernel releases
  // its successor only after its own wait, so when this kernel starts every
  // kernel before the q/k/v GEMV has finished. (No key list or head ids here.)
  a.early_kv = args.early_kv_loads && ctx.programmatic_launch();
  return DispatchKv(*args.k_cache, [&](auto kv) {
    return WithHeadDim(args.head_dim, [&](auto d) {
      return LaunchDecode<decltype(d)::value, true, decltype(kv)>(
          ctx, a, DecodeChunkKeys(args));
    });
  });
}

}  // namespace dynsparse::cuda
