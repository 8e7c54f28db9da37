// RoPE (and RopeWriteKv, the fused RoPE + KV-cache write, below): one block per
// row. The block first computes cos/sin of the row's head_dim/2 angles into
// shared memory (once per row, not per head), then rotates every (head, i)
// pair; consecutive threads touch consecutive floats, so the reads and writes
// of x are coalesced. Multiplies and the subtraction use explicit
// round-to-nearest intrinsics so no FMA contraction changes the rounding
// relative to kernels/cpu.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/kv_access.cuh"
#include "kernels/cuda/rope.h"

namespace dynsparse::cuda {
namespace {

constexpr int kRopeThreads = 128;

__global__ void RopeKernel(float* x, const int32_t* positions,
                           const float* inv_freq, int64_t heads, int64_t half) {
  PdlWait();
  extern __shared__ float table[];  // cos [half], then sin [half].
  float* cos_t = table;
  float* sin_t = table + half;
  const int64_t row = blockIdx.x;
  const float position = static_cast<float>(positions[row]);
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const float angle = __fmul_rn(position, inv_freq[i]);
    float s, c;
    sincosf(angle, &s, &c);
    cos_t[i] = c;
    sin_t[i] = s;
  }
  __syncthreads();
  float* v = x + row * heads * 2 * half;
  for (int64_t idx = threadIdx.x; idx < heads * half; idx += blockDim.x) {
    const int64_t h = idx / half;
    const int64_t i = idx - h * half;
    float* p = v + h * 2 * half;
    const float2 r = RotatePair(p[i], p[i + half], cos_t[i], sin_t[i]);
    p[i] = r.x;
    p[i + half] = r.y;
  }
}

// RopeWriteKv: the attention prologue in one launch. A work unit is one
// head: q heads (rotated in place), k heads (rotated in place and copied to
// the cache row) and v heads (copied to the cache row). Block (row, y) takes
// kUnitsPerBlock units so a decode step's single row still spreads over
// ~(q_heads + 2 kv_heads) / 4 blocks. Angles and rotation use the same
// intrinsics as RopeKernel, so the values are bit-identical to ApplyRope
// followed by two cache writes (an f16 cache: rounded to nearest once).
// Without inv_freq (no RoPE) the q units are skipped and k/v are only copied.
constexpr int kUnitsPerBlock = 4;

template <typename KvT>
__global__ void RopeWriteKvKernel(float* q, float* k, const float* v,
                                  const int32_t* positions,
                                  const float* inv_freq, int q_heads,
                                  int kv_heads, int64_t half, KvT* k_cache,
                                  KvT* v_cache) {
  PdlWait();
  extern __shared__ float table[];  // cos [half], then sin [half].
  float* cos_t = table;
  float* sin_t = table + half;
  const int64_t row = blockIdx.x;
  const int64_t pos = positions[row];
  const bool rotate = inv_freq != nullptr;
  if (rotate) {
    const float position = static_cast<float>(positions[row]);
    for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
      const float angle = __fmul_rn(position, inv_freq[i]);
      float sn, cs;
      sincosf(angle, &sn, &cs);
      cos_t[i] = cs;
      sin_t[i] = sn;
    }
    __syncthreads();
  }
  const int64_t head_dim = 2 * half;
  const int64_t q_row = q_heads * head_dim;
  const int64_t kv_row = kv_heads * head_dim;
  const int first = rotate ? 0 : q_heads;
  const int units = q_heads + 2 * kv_heads;
  const int u0 = first + static_cast<int>(blockIdx.y) * kUnitsPerBlock;
  const int u_end = min(units, u0 + kUnitsPerBlock);
  for (int64_t idx = threadIdx.x; idx < (u_end - u0) * half;
       idx += blockDim.x) {
    const int u = u0 + static_cast<int>(idx / half);
    const int64_t i = idx % half;
    float* p;
    KvT* dst = nullptr;
    bool turn = rotate;
    if (u < q_heads) {
      p = q + row * q_row + u * head_dim;
    } else if (u < q_heads + kv_heads) {
      const int64_t off = (u - q_heads) * head_dim;
      p = k + row * kv_row + off;
      dst = k_cache + pos * kv_row + off;
    } else {
      const int64_t off = (u - q_heads - kv_heads) * head_dim;
      p = const_cast<float*>(v) + row * kv_row + off;
      dst = v_cache + pos * kv_row + off;
      turn = false;
    }
    float a = p[i];
    float b = p[i + half];
    if (turn) {
      const float2 r = RotatePair(a, b, cos_t[i], sin_t[i]);
      a = r.x;
      b = r.y;
      p[i] = a;
      p[i + half] = b;
    }
    if (dst != nullptr) {
      KvStore(dst + i, a);
      KvStore(dst + i + half, b);
    }
  }
}

absl::Status CheckRows(const Tensor& t, int64_t rows, int64_t cols,
                       const char* what) {
  RETURN_IF_ERROR(CheckOnDevice(t, what));
  if (t.dtype() != DType::kF32 || t.rank() != 2 || t.dim(0) != rows ||
      t.dim(1) != cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("RopeWriteKv ", what, " must be f32 [", rows, ", ", cols,
                     "], got ", t.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RopeWriteKv(DeviceContext& ctx, const Tensor& inv_freq,
                         const Tensor& positions, int64_t q_heads,
                         int64_t kv_heads, int64_t head_dim, Tensor* q,
                         Tensor* k, const Tensor& v, Tensor* k_cache,
                         Tensor* v_cache) {
  if (head_dim <= 0 || head_dim % 2 != 0 || q_heads <= 0 || kv_heads <= 0 ||
      q_heads > (1 << 20) || kv_heads > (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat("RopeWriteKv: bad heads ",
                                                   q_heads, "/", kv_heads,
                                                   " or head_dim ", head_dim));
  }
  const int64_t half = head_dim / 2;
  const bool rotate = !inv_freq.empty();
  if (rotate) {
    RETURN_IF_ERROR(CheckOnDevice(inv_freq, "RoPE inv_freq"));
    if (inv_freq.dtype() != DType::kF32 || inv_freq.numel() != half) {
      return absl::InvalidArgumentError(
          absl::StrCat("RopeWriteKv inv_freq must be f32 [", half, "], got ",
                       inv_freq.DebugString()));
    }
  }
  const int64_t n = q->rank() == 2 ? q->dim(0) : -1;
  RETURN_IF_ERROR(CheckRows(*q, n, q_heads * head_dim, "q"));
  RETURN_IF_ERROR(CheckRows(*k, n, kv_heads * head_dim, "k"));
  RETURN_IF_ERROR(CheckRows(v, n, kv_heads * head_dim, "v"));
  RETURN_IF_ERROR(CheckOnDevice(positions, "RoPE positions"));
  if (positions.dtype() != DType::kI32 || positions.numel() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("RopeWriteKv positions must be i32 [", n, "], got ",
                     positions.DebugString()));
  }
  RETURN_IF_ERROR(CheckKvPair(*k_cache, *v_cache, "RopeWriteKv"));
  for (const Tensor* cache : {k_cache, v_cache}) {
    RETURN_IF_ERROR(CheckOnDevice(*cache, "KV cache"));
    if (cache->rank() != 2 || cache->dim(1) != kv_heads * head_dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("RopeWriteKv caches must be [capacity, ",
                       kv_heads * head_dim, "], got ", cache->DebugString()));
    }
  }
  const size_t smem = rotate ? 2 * half * sizeof(float) : 0;
  if (smem > 48 * 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("RoPE head_dim ", head_dim, " too large (max 12288)"));
  }
  if (n == 0) return absl::OkStatus();
  if (n > 0x7fffffff) return absl::InvalidArgumentError("too many rows");
  const int64_t units = (rotate ? q_heads : 0) + 2 * kv_heads;
  RETURN_IF_ERROR(ctx.Activate());
  DispatchKv(*k_cache, [&](auto kv) {
    using KvT = decltype(kv);
    LaunchKernel(ctx.programmatic_launch(), RopeWriteKvKernel<KvT>,
                 dim3(static_cast<unsigned>(n),
                      static_cast<unsigned>(CeilDiv(units, kUnitsPerBlock))),
                 dim3(kRopeThreads), smem, ctx.stream(), q->data<float>(),
                 k->data<float>(), v.data<float>(), positions.data<int32_t>(),
                 rotate ? inv_freq.data<float>() : nullptr,
                 static_cast<int>(q_heads), static_cast<int>(kv_heads), half,
                 k_cache->data<KvT>(), v_cache->data<KvT>());
  });
  return LastLaunchStatus("RopeWriteKvKernel");
}

absl::StatusOr<Tensor> UploadRopeInvFreq(const DeviceContext& ctx,
                                         const RopeTable& rope) {
  if (rope.head_dim <= 0 || rope.head_dim % 2 != 0 ||
      static_cast<int64_t>(rope.inv_freq.size()) != rope.head_dim / 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoPE table needs an even head_dim and head_dim/2 frequencies, got "
        "head_dim ",
        rope.head_dim, " and ", rope.inv_freq.size()));
  }
  std::vector<float> values(rope.inv_freq.size());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(rope.inv_freq[i]);
  }
  return ToDevice(
      ctx, Tensor::FromF32(values, {static_cast<int64_t>(values.size())}));
}

absl::Status ApplyRope(DeviceContext& ctx, const Tensor& inv_freq,
                       const Tensor& positions, int64_t heads, Tensor* x) {
  RETURN_IF_ERROR(CheckOnDevice(inv_freq, "RoPE inv_freq"));
  RETURN_IF_ERROR(CheckOnDevice(positions, "RoPE positions"));
  RETURN_IF_ERROR(CheckOnDevice(*x, "RoPE x"));
  if (inv_freq.dtype() != DType::kF32 || inv_freq.numel() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoPE inv_freq must be non-empty f32, got ", inv_freq.DebugString()));
  }
  const int64_t half = inv_freq.numel();
  const int64_t head_dim = 2 * half;
  if (x->dtype() != DType::kF32 || x->rank() != 2 || heads <= 0 ||
      x->dim(1) != heads * head_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("RoPE x must be f32 [n, ", heads, " * ", head_dim,
                     "], got ", x->DebugString()));
  }
  if (positions.dtype() != DType::kI32 || positions.numel() != x->dim(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RoPE positions must be i32 [", x->dim(0), "], got ",
                     positions.DebugString()));
  }
  const size_t smem = 2 * half * sizeof(float);
  if (smem > 48 * 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("RoPE head_dim ", head_dim, " too large (max 12288)"));
  }
  const int64_t rows = x->dim(0);
  if (rows == 0) return absl::OkStatus();
  if (rows > 0x7fffffff) return absl::InvalidArgumentError("too many rows");
  RETURN_IF_ERROR(ctx.Activate());
  LaunchKernel(ctx.programmatic_launch(), RopeKernel,
               dim3(static_cast<unsigned>(rows)), dim3(kRopeThreads), smem,
               ctx.stream(), x->data<float>(), positions.data<int32_t>(),
               inv_freq.data<float>(), heads, half);
  return LastLaunchStatus("RopeKernel");
}

}  // namespace dynsparse::cuda
