// Causal GQA decode attention (split-K over the KV cache; attention.h
// explains the strategies).
//
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
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_kernels.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/kv_access.cuh"

namespace dynsparse::cuda {
namespace attention_internal {
namespace {

// Chunks a (row, head) may have for DecodeAttentionClusterKernel: one
// cluster of at most the portable 8 blocks.
constexpr int kMaxClusterChunks = 8;

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
  // which block was last).
  int32_t* counter = a.counters + static_cast<int64_t>(row) * a.heads + h;
  if (!ArrivesLast(counter, a.chunks)) return;
  CombineChunks(a, h, row);
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

// After the decode kernel's launch: its status, then the merge kernel when
// the chunks are not merged in the same launch.
absl::Status FinishDecodeLaunch(DeviceContext& ctx, const KernelArgs& a) {
  if (absl::Status s = LastLaunchStatus("DecodeAttentionKernel"); !s.ok()) {
    return s;
  }
  if (a.counters != nullptr) return absl::OkStatus();  // Merged in-kernel.
  return LaunchChunkMerge(ctx, a, ctx.programmatic_launch());
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
      return FinishDecodeLaunch(ctx, a);
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
  return FinishDecodeLaunch(ctx, a);
}

}  // namespace
}  // namespace attention_internal

using attention_internal::CheckArgs;
using attention_internal::KernelArgs;
using attention_internal::kMaxClusterChunks;
using attention_internal::LaunchDecode;
using attention_internal::PickHeadDim;
using attention_internal::WithHeadDim;

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
