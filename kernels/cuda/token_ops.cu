#include <cmath>

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

// scores[h, j] = scale * q_h . k_{key_rows[j], h / group}; a warp per key.
template <typename KvT>
__global__ void ProbeScoresKernel(const float* q, const KvT* k,
                                  const int32_t* key_rows, int num_keys,
                                  int group, int head_dim, int64_t kv_stride,
                                  float scale, float* scores) {
  const int h = blockIdx.y;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int j = blockIdx.x * (kThreads / 32) + warp;
  if (j >= num_keys) return;
  const float* qh = q + static_cast<int64_t>(h) * head_dim;
  const KvT* kj = k + static_cast<int64_t>(key_rows[j]) * kv_stride +
                  static_cast<int64_t>(h / group) * head_dim;
  float dot = 0.f;
  for (int d = lane; d < head_dim; d += 32) dot += qh[d] * KvLoad(kj + d);
  dot = WarpSum(dot);
  if (lane == 0) scores[static_cast<int64_t>(h) * num_keys + j] = dot * scale;
}

// stats[h] = (max, sum of exp(s - max)) over head h's scores; a block each.
__global__ void ProbeStatsKernel(const float* scores, int num_keys,
                                 float* stats) {
  __shared__ float scratch[32];
  const float* s = scores + static_cast<int64_t>(blockIdx.x) * num_keys;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < num_keys; j += blockDim.x) m = fmaxf(m, s[j]);
  // Block max through BlockSum's pattern: warp max, then across warps.
  for (int off = 16; off > 0; off >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  }
  __shared__ float warp_max[32];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) {
    m = fmaxf(m, warp_max[w]);
  }
  float sum = 0.f;
  for (int j = threadIdx.x; j < num_keys; j += blockDim.x) {
    sum += expf(s[j] - m);
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
  float* scores = scratch;
  float* stats = scratch + a.num_heads * a.num_keys;
  const dim3 grid(static_cast<unsigned>(CeilDiv(nk, kThreads / 32)),
                  static_cast<unsigned>(heads));
  DispatchKv(*a.k_cache, [&](auto kv) {
    using KvT = decltype(kv);
    ProbeScoresKernel<KvT><<<grid, kThreads, 0, ctx.stream()>>>(
        a.q->data<float>(), a.k_cache->data<KvT>(), a.key_rows, nk,
        static_cast<int>(a.num_heads / a.num_kv_heads),
        static_cast<int>(a.head_dim), a.num_kv_heads * a.head_dim, a.scale,
        scores);
  });
  if (absl::Status s = LastLaunchStatus("ProbeScoresKernel"); !s.ok()) {
    return s;
  }
  ProbeStatsKernel<<<static_cast<unsigned>(heads), kThreads, 0, ctx.stream()>>>(
      scores, nk, stats);
  if (absl::Status s = LastLaunchStatus("ProbeStatsKernel"); !s.ok()) return s;
  ProbeMeanKernel<<<static_cast<unsigned>(CeilDiv(nk, kThreads)), kThreads, 0,
                    ctx.stream()>>>(scores, stats, nk, heads,
                                    a.out->data<float>());
  return LastLaunchStatus("ProbeMeanKernel");
}

}  // namespace dynsparse::cuda
