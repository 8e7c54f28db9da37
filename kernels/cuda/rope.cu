// RoPE: one block per row. The block first computes cos/sin of the row's
// head_dim/2 angles into shared memory (once per row, not per head), then
// rotates every (head, i) pair; consecutive threads touch consecutive floats,
// so the reads and writes of x are coalesced. Multiplies and the subtraction
// use explicit round-to-nearest intrinsics so no FMA contraction changes the
// rounding relative to kernels/cpu.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_utils.cuh"
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
    const float a = p[i];
    const float b = p[i + half];
    const float c = cos_t[i];
    const float s = sin_t[i];
    p[i] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    p[i + half] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
  }
}

}  // namespace

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
