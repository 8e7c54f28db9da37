// Split-K decode attention for 2-8 query rows (a LazyLLM decode step's new
// row and the rows it revives): a block loads its chunk's K and V rows once
// and runs every query row over them, where DecodeAttentionKernel gives each
// row its own blocks and so reads the cache once per row (run 141: a 16k
// keys=cached layer with a few revived rows took ~156 us against 119 for one
// row). Same chunks, scratch layout and merge as that kernel.
#include <climits>
#include <cmath>
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_kernels.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/decode_chunk.cuh"
#include "kernels/cuda/kv_access.cuh"

namespace dynsparse::cuda::attention_internal {
namespace {

// The chunk's partial for the row at `pos` into `entry` from the K and V a
// warp holds for keys key0.. (kk, vv), keys at or past `limit` being none.
// The keys' cache rows are read again (L1 hits) rather than held in
// registers, which K and V fill.
template <int D, int kKeysPerWarp, typename KvT>
__device__ __forceinline__ void RowPartial(
    const KernelArgs& a, int row, int h, int pos, int key0, int limit,
    const HeldRun<KvT, D / 32> (&kk)[kKeysPerWarp],
    const HeldRun<KvT, D / 32> (&vv)[kKeysPerWarp], float* entry) {
  constexpr int kCols = D / 32;
  const int lane = threadIdx.x & 31;
  float q[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int d = HeldColumn<KvT, kCols>(lane, c);
    q[c] = d < a.head_dim ? a.q[static_cast<int64_t>(row) * a.q_stride +
                                static_cast<int64_t>(h) * a.head_dim + d] *
                                a.scale
                          : 0.f;
  }
  bool live[kKeysPerWarp];
#pragma unroll
  for (int j = 0; j < kKeysPerWarp; ++j) {
    live[j] = key0 + j < limit && KeyRow(a, key0 + j) <= pos;
  }
  __syncthreads();  // The previous row's warps' partials were merged.
  ChunkEntry<D, kKeysPerWarp, KvT>(q, kk, vv, live, a.head_dim, entry);
}

// Two blocks an SM (128 registers) for f16 caches; f32 keys take twice the
// registers and spilled at that bound. 8 keys a warp: with 16 (the one-row
// kernel's chunks on long f16 caches) the f16 kernel spilled 132 bytes at
// 128 registers, so these rows take 64-key chunks (DecodeChunkKeys).
template <int D, int kKeysPerWarp, typename KvT>
__global__ void __launch_bounds__(kThreads, std::is_same_v<KvT, float> ? 1 : 2)
    DecodeRowsKernel(const KernelArgs a) {
  constexpr int kCols = D / 32;
  constexpr int kChunkKeys = kKeysPerWarp * kWarps;
  constexpr bool kRuns = !std::is_same_v<KvT, float>;
  PdlWait();
  const int chunk = blockIdx.x;
  const int h = blockIdx.y;
  const int kvh = h / a.group;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  int last_pos = a.positions[0];
  for (int row = 1; row < a.n; ++row)
    last_pos = max(last_pos, a.positions[row]);
  const int limit =
      a.key_rows == nullptr ? min(last_pos + 1, a.max_keys) : a.max_keys;
  const int chunk0 = chunk * kChunkKeys;
  const int key0 = chunk0 + warp * kKeysPerWarp;
  const int64_t col0 = static_cast<int64_t>(kvh) * a.head_dim;
  const bool whole_runs = kRuns && a.vec4 && a.head_dim == D;
  HeldRun<KvT, kCols> kk[kKeysPerWarp], vv[kKeysPerWarp];
#pragma unroll
  for (int j = 0; j < kKeysPerWarp; ++j) {
    const int key = key0 + j;
    const int key_row = key < limit ? KeyRow(a, key) : INT_MAX;
    const bool live = key_row <= last_pos;
    const int64_t base =
        live ? static_cast<int64_t>(key_row) * a.kv_stride + col0 : 0;
    if constexpr (kRuns) {
      if (whole_runs) {
        kk[j].Load(KvPtr<__half>(a.k) + base + kCols * lane, live);
        vv[j].Load(KvPtr<__half>(a.v) + base + kCols * lane, live);
        continue;
      }
    }
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int d = HeldColumn<KvT, kCols>(lane, c);
      const bool load = live && d < a.head_dim;
      kk[j].set(c, load ? KvLoad(KvPtr<KvT>(a.k) + (base + d)) : 0.f);
      vv[j].set(c, load ? KvLoad(KvPtr<KvT>(a.v) + (base + d)) : 0.f);
    }
  }
  for (int row = 0; row < a.n; ++row) {
    const int pos = a.positions[row];
    float* entry = ScratchEntry(a, row, h, chunk);
    const int row_limit =
        a.key_rows == nullptr ? min(pos + 1, a.max_keys) : a.max_keys;
    if (chunk0 >= row_limit ||
        (a.key_rows != nullptr && a.key_rows[chunk0] > pos)) {
      if (threadIdx.x == 0) {  // No key of the chunk is visible to the row.
        entry[0] = -INFINITY;
        entry[1] = 0.f;
      }
      continue;
    }
    RowPartial<D, kKeysPerWarp, KvT>(a, row, h, pos, key0, limit, kk, vv,
                                     entry);
  }
  if (a.counters == nullptr) return;
  // As DecodeAttentionKernel: the block that finishes a (row, head) last
  // merges its chunks and resets the counter.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  for (int row = 0; row < a.n; ++row) {
    int* counter = a.counters + static_cast<int64_t>(row) * a.heads + h;
    if (threadIdx.x == 0) last = atomicAdd(counter, 1) == a.chunks - 1;
    __syncthreads();
    if (last) {
      __threadfence();
      CombineChunks(a, h, row);
      if (threadIdx.x == 0) *counter = 0;
    }
    __syncthreads();  // `last` is rewritten for the next row.
  }
}

}  // namespace

absl::Status LaunchDecodeRows(DeviceContext& ctx, const KernelArgs& a,
                              DType cache) {
  const dim3 grid(static_cast<unsigned>(a.chunks),
                  static_cast<unsigned>(a.heads));
  const bool pdl = ctx.programmatic_launch();
  if (cache == DType::kF16) {
    LaunchKernel(pdl, DecodeRowsKernel<128, 8, __half>, grid, dim3(kThreads), 0,
                 ctx.stream(), a);
  } else {
    LaunchKernel(pdl, DecodeRowsKernel<128, 8, float>, grid, dim3(kThreads), 0,
                 ctx.stream(), a);
  }
  if (absl::Status s = LastLaunchStatus("DecodeRowsKernel"); !s.ok()) {
    return s;
  }
  if (a.counters != nullptr) return absl::OkStatus();  // Merged in-kernel.
  return LaunchChunkMerge(ctx, a, ctx.programmatic_launch());
}

}  // namespace dynsparse::cuda::attention_internal
