// What the attention kernels (attention_prefill.cu, attention_decode.cu)
// share: their arguments as the kernels take them, tile constants, key and
// scratch addressing, and the merge of per-chunk (or per-split) partials.
// Include from .cu files only.
#ifndef DYNSPARSE_KERNELS_CUDA_ATTENTION_KERNELS_CUH_
#define DYNSPARSE_KERNELS_CUDA_ATTENTION_KERNELS_CUH_

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda::attention_internal {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kTileQ = 64;
inline constexpr int kTileK = 32;
inline constexpr int kRowsPerWarp = kTileQ / kWarps;  // 8

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

// Chunks whose (max, sum) CombineChunks keeps in shared memory; caches of
// more than kCombineChunks * kDecodeKeysPerChunk keys merge serially.
inline constexpr int kCombineChunks = 512;

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

// Checks the arguments and fills the kernels' view of them (decode chunks
// over the cache capacity, or over the listed keys with a key list).
absl::Status CheckArgs(const DeviceAttentionArgs& args, KernelArgs* a);

// Merges a.chunks partials of every (head, row) in ScratchEntry layout into
// a.out: the decode chunks, or a split prefill's key splits. `pdl`: launch
// with programmatic dependent launch.
absl::Status LaunchChunkMerge(DeviceContext& ctx, const KernelArgs& a,
                              bool pdl);

inline int PickHeadDim(int64_t head_dim) {
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

}  // namespace dynsparse::cuda::attention_internal

#endif  // DYNSPARSE_KERNELS_CUDA_ATTENTION_KERNELS_CUH_
