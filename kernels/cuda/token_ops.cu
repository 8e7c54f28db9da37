#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/kv_access.cuh"
#include "kernels/cuda/token_ops.h"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void CopyRowsKernel(const float* src, const int32_t* src_rows,
                               const int32_t* dst_rows, int64_t width,
                               bool vec4, float* dst) {
  const int64_t s = static_cast<int64_t>(src_rows[blockIdx.x]) * width;
  const int64_t d = static_cast<int64_t>(dst_rows[blockIdx.x]) * width;
  if (vec4) {
    const float4* from = reinterpret_cast<const float4*>(src + s);
    float4* to = reinterpret_cast<float4*>(dst + d);
    for (int64_t i = threadIdx.x; i < width / 4; i += blockDim.x) {
      to[i] = from[i];
    }
  } else {
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
      dst[d + i] = src[s + i];
    }
  }
}

// Keys a probe block scores (ProbeScoreBlocks): 4 for each half-warp.
constexpr int kProbeHalfWarps = kThreads / 16;
constexpr int kProbeKeysPerHalfWarp = 4;
constexpr int kProbeBlockKeys = kProbeHalfWarps * kProbeKeysPerHalfWarp;
static_assert(kProbeBlockKeys == 64, "ProbeScoreBlocks counts 64-key blocks");

// kVec cache elements of a key row from one load (16 bytes, or one element).
template <typename KvT, int kVec>
__device__ __forceinline__ float DotRun(const float* q, const KvT* k) {
  float dot = 0.f;
  if constexpr (kVec == 1) {
    dot = q[0] * KvLoad(k);
  } else if constexpr (std::is_same_v<KvT, float>) {
    static_assert(kVec == 4);
    const float4 kv = *reinterpret_cast<const float4*>(k);
    dot = q[0] * kv.x + q[1] * kv.y + q[2] * kv.z + q[3] * kv.w;
  } else {
    static_assert(kVec == 8);
    const uint4 bits = *reinterpret_cast<const uint4*>(k);
    __half2 h[4];
    memcpy(h, &bits, sizeof(bits));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(h[i]);
      dot += q[2 * i] * f.x + q[2 * i + 1] * f.y;
    }
  }
  return dot;
}

// scores[h, j] = scale * q_h . k_{key_rows[j], h / group} for the block's
// kProbeBlockKeys keys of head h = blockIdx.y, a half-warp per key reading
// the key's row in 16-byte runs (kVec elements; 1 where the rows do not
// allow it); and the block's (max, sum of exp(score - max)) into
// partials[h, blockIdx.x], so the per-head totals read a few hundred pairs
// instead of every score again.
template <typename KvT, int kVec>
__global__ void __launch_bounds__(kThreads)
    ProbeScoresKernel(const float* q, const KvT* k, const int32_t* key_rows,
                      int num_keys, int group, int head_dim, int64_t kv_stride,
                      float scale, float* scores, float* partials) {
  __shared__ float block_scores[kProbeBlockKeys];
  const int h = blockIdx.y;
  const int half_warp = threadIdx.x >> 4;
  const int sub = threadIdx.x & 15;
  const float* qh = q + static_cast<int64_t>(h) * head_dim;
  const int64_t col0 = static_cast<int64_t>(h / group) * head_dim;
  const int block0 = blockIdx.x * kProbeBlockKeys;
#pragma unroll
  for (int i = 0; i < kProbeKeysPerHalfWarp; ++i) {
    const int slot = i * kProbeHalfWarps + half_warp;
    const int j = block0 + slot;
    float dot = 0.f;
    if (j < num_keys) {
      const KvT* kj = k + static_cast<int64_t>(key_rows[j]) * kv_stride + col0;
      for (int d = sub * kVec; d < head_dim; d += 16 * kVec) {
        dot += DotRun<KvT, kVec>(qh + d, kj + d);
      }
    }
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) {
      dot += __shfl_xor_sync(0xffffffffu, dot, off);
    }
    if (sub == 0) {
      const float score = dot * scale;
      block_scores[slot] = j < num_keys ? score : -INFINITY;
      if (j < num_keys) scores[static_cast<int64_t>(h) * num_keys + j] = score;
    }
  }
  __syncthreads();
  if (threadIdx.x >= 32) return;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < kProbeBlockKeys; i += 32) {
    m = fmaxf(m, block_scores[i]);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  }
  float sum = 0.f;
  for (int i = threadIdx.x; i < kProbeBlockKeys; i += 32) {
    sum += expf(block_scores[i] - m);  // -inf - m: 0 (m is finite).
  }
  sum = WarpSum(sum);
  if (threadIdx.x == 0) {
    float* partial =
        partials + 2 * (static_cast<int64_t>(h) * gridDim.x + blockIdx.x);
    partial[0] = m;
    partial[1] = sum;
  }
}

// stats[h] = (max, sum of exp(s - max)) over head h's scores, from the
// score blocks' partials; a block each.
__global__ void ProbeStatsKernel(const float* partials, int blocks,
                                 float* stats) {
  __shared__ float scratch[32];
  __shared__ float warp_max[32];
  const float* p = partials + 2 * static_cast<int64_t>(blockIdx.x) * blocks;
  float m = -INFINITY;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    m = fmaxf(m, p[2 * b]);
  }
  // Block max through BlockSum's pattern: warp max, then across warps.
  for (int off = 16; off > 0; off >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  }
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) {
    m = fmaxf(m, warp_max[w]);
  }
  float sum = 0.f;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    sum += p[2 * b + 1] * expf(p[2 * b] - m);
  }
  sum = BlockSum(sum, scratch);
  if (threadIdx.x == 0) {
    stats[2 * blockIdx.x] = m;
    stats[2 * blockIdx.x + 1] = sum;
  }
}

// out[j] = mean over heads of exp(s[h, j] - max_h) / sum_h.
__global__ void ProbeMeanKernel(const float* scores, const float* stats,
                                int num_keys, int heads, float* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= num_keys) return;
  float total = 0.f;
  for (int h = 0; h < heads; ++h) {
    total +=
        expf(scores[static_cast<int64_t>(h) * num_keys + j] - stats[2 * h]) /
        stats[2 * h + 1];
  }
  out[j] = total / static_cast<float>(heads);
}

}  // namespace

absl::Status CopyRowsDevice(DeviceContext& ctx, const Tensor& src,
                            const int32_t* src_rows, const int32_t* dst_rows,
                            int64_t count, Tensor* dst) {
  if (absl::Status s = CheckOnDevice(src, "CopyRows source"); !s.ok()) return s;
  if (absl::Status s = CheckOnDevice(*dst, "CopyRows destination"); !s.ok()) {
    return s;
  }
  if (src.dtype() != DType::kF32 || dst->dtype() != DType::kF32 ||
      src.rank() != 2 || dst->rank() != 2 || src.dim(1) != dst->dim(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CopyRows: f32 matrices of one width, got ",
                     src.DebugString(), " and ", dst->DebugString()));
  }
  if (count == 0) return absl::OkStatus();
  const int64_t width = src.dim(1);
  const bool vec4 = width % 4 == 0 && IsAligned(src.raw_data(), 16) &&
                    IsAligned(dst->raw_data(), 16);
  CopyRowsKernel<<<static_cast<unsigned>(count), kThreads, 0, ctx.stream()>>>(
      src.data<float>(), src_rows, dst_rows, width, vec4, dst->data<float>());
  return LastLaunchStatus("CopyRowsKernel");
}

absl::Status LastQueryAttentionDevice(DeviceContext& ctx,
                                      const DeviceLastQueryArgs& a,
                                      float* scratch) {
  if (a.q == nullptr || a.k_cache == nullptr || a.out == nullptr ||
      a.key_rows == nullptr || a.num_heads <= 0 || a.num_kv_heads <= 0 ||
      a.num_heads % a.num_kv_heads != 0 || a.out->numel() != a.num_keys) {
    return absl::InvalidArgumentError("LastQueryAttention: bad arguments");
  }
  if (absl::Status s = CheckKvDtype(*a.k_cache, "LastQueryAttention");
      !s.ok()) {
    return s;
  }
  if (a.num_keys == 0) return absl::OkStatus();
  const int nk = static_cast<int>(a.num_keys);
  const int heads = static_cast<int>(a.num_heads);
  const int blocks = static_cast<int>(ProbeScoreBlocks(a.num_keys));
  float* scores = scratch;
  float* partials = scratch + a.num_heads * a.num_keys;
  float* stats = partials + 2 * a.num_heads * blocks;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(heads));
  const int group = static_cast<int>(a.num_heads / a.num_kv_heads);
  const int head_dim = static_cast<int>(a.head_dim);
  const int64_t kv_stride = a.num_kv_heads * a.head_dim;
  DispatchKv(*a.k_cache, [&](auto kv) {
    using KvT = decltype(kv);
    constexpr int kVec = 16 / sizeof(KvT);
    // 16-byte runs need every row slice to start on 16 bytes.
    const bool runs =
        head_dim % kVec == 0 && IsAligned(a.k_cache->raw_data(), 16);
    const auto launch = [&](auto kernel) {
      kernel<<<grid, kThreads, 0, ctx.stream()>>>(
          a.q->data<float>(), a.k_cache->data<KvT>(), a.key_rows, nk, group,
          head_dim, kv_stride, a.scale, scores, partials);
    };
    if (runs) {
      launch(ProbeScoresKernel<KvT, kVec>);
    } else {
      launch(ProbeScoresKernel<KvT, 1>);
    }
  });
  if (absl::Status s = LastLaunchStatus("ProbeScoresKernel"); !s.ok()) {
    return s;
  }
  ProbeStatsKernel<<<static_cast<unsigned>(heads), kThreads, 0, ctx.stream()>>>(
      partials, blocks, stats);
  if (absl::Status s = LastLaunchStatus("ProbeStatsKernel"); !s.ok()) return s;
  ProbeMeanKernel<<<static_cast<unsigned>(CeilDiv(nk, kThreads)), kThreads, 0,
                    ctx.stream()>>>(scores, stats, nk, heads,
                                    a.out->data<float>());
  return LastLaunchStatus("ProbeMeanKernel");
}

}  // namespace dynsparse::cuda
