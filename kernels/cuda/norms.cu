// RMSNorm / LayerNorm: one block per row. Pass 1 reads the row (adding the
// residual and writing it back when fused) and block-reduces the f32 sum (of
// squares for RMSNorm); LayerNorm's pass 2 reduces the centred squares (two
// passes, so no cancellation in E[x^2] - E[x]^2); the last pass writes y.
// Re-reads of the row hit L1/L2: rows are at most a few tens of KB. The
// element order of each expression follows kernels/cpu so the two agree to
// f32 rounding.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/norms.h"

namespace dynsparse::cuda {
namespace {

struct NormArgs {
  const float* x;
  float* residual;
  const void* weight;
  FloatKind weight_kind;
  const void* bias;
  FloatKind bias_kind;
  float* y;
  int64_t width;
  float eps;
};

template <bool kLayerNorm, bool kResidual>
__global__ void NormKernel(const NormArgs a) {
  PdlWait();
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * a.width;
  const float* in = a.x + offset;
  float* res = kResidual ? a.residual + offset : nullptr;
  float* out = a.y + offset;
  // After pass 1 the normalised input lives in `res` when fused.
  const float* src = kResidual ? res : in;

  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < a.width; i += blockDim.x) {
    float v = in[i];
    if constexpr (kResidual) {
      v = res[i] + v;
      res[i] = v;
    }
    sum += kLayerNorm ? v : v * v;
  }
  const float total = BlockSum(sum, scratch);
  const float inv_width = 1.0f / static_cast<float>(a.width);

  if constexpr (kLayerNorm) {
    const float mean = total * inv_width;
    float sq = 0.0f;
    for (int64_t i = threadIdx.x; i < a.width; i += blockDim.x) {
      const float d = src[i] - mean;
      sq += d * d;
    }
    const float var = BlockSum(sq, scratch) * inv_width;
    const float inv = 1.0f / sqrtf(var + a.eps);
    for (int64_t i = threadIdx.x; i < a.width; i += blockDim.x) {
      const float w = LoadAsFloat(a.weight, a.weight_kind, i, 1.0f);
      const float b = LoadAsFloat(a.bias, a.bias_kind, i, 0.0f);
      out[i] = ((src[i] - mean) * inv) * w + b;
    }
  } else {
    const float inv = 1.0f / sqrtf(total * inv_width + a.eps);
    for (int64_t i = threadIdx.x; i < a.width; i += blockDim.x) {
      const float w = LoadAsFloat(a.weight, a.weight_kind, i, 1.0f);
      out[i] = w * (src[i] * inv);
    }
  }
}

absl::Status CheckVector(const Tensor& v, int64_t width,
                         absl::string_view what) {
  if (v.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(CheckOnDevice(v, what));
  if (ToFloatKind(v.dtype()) == FloatKind::kNone || v.numel() != width) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a floating [", width, "] tensor, got ",
                     v.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status CheckActivations(const Tensor& t, absl::string_view what) {
  RETURN_IF_ERROR(CheckOnDevice(t, what));
  if (t.dtype() != DType::kF32 || t.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be f32 [rows, width], got ", t.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status LaunchNorm(DeviceContext& ctx, bool layer_norm, const Tensor& x,
                        const Tensor& weight, const Tensor& bias, double eps,
                        Tensor* y, Tensor* residual) {
  RETURN_IF_ERROR(CheckActivations(x, "norm x"));
  RETURN_IF_ERROR(CheckActivations(*y, "norm y"));
  if (y->shape() != x.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "norm y ", y->DebugString(), " does not match x ", x.DebugString()));
  }
  if (residual != nullptr) {
    RETURN_IF_ERROR(CheckActivations(*residual, "norm residual"));
    if (residual->shape() != x.shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("norm residual ", residual->DebugString(),
                       " does not match x ", x.DebugString()));
    }
  }
  const int64_t rows = x.dim(0);
  const int64_t width = x.dim(1);
  if (width == 0) return absl::InvalidArgumentError("norm of width 0");
  if (!layer_norm && weight.empty()) {
    return absl::InvalidArgumentError("RmsNorm needs a weight");
  }
  RETURN_IF_ERROR(CheckVector(weight, width, "norm weight"));
  RETURN_IF_ERROR(CheckVector(bias, width, "norm bias"));
  if (rows == 0) return absl::OkStatus();
  if (rows > 0x7fffffff) return absl::InvalidArgumentError("too many rows");

  NormArgs args;
  args.x = x.data<float>();
  args.residual = residual == nullptr ? nullptr : residual->data<float>();
  args.weight = weight.empty() ? nullptr : weight.raw_data();
  args.weight_kind =
      weight.empty() ? FloatKind::kNone : ToFloatKind(weight.dtype());
  args.bias = bias.empty() ? nullptr : bias.raw_data();
  args.bias_kind = bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype());
  args.y = y->data<float>();
  args.width = width;
  args.eps = static_cast<float>(eps);

  // About 8 elements per thread, 64..1024 threads.
  const int threads =
      static_cast<int>(std::clamp<int64_t>(CeilDiv(width, 256) * 32, 64, 1024));
  RETURN_IF_ERROR(ctx.Activate());
  const dim3 grid(static_cast<unsigned>(rows));
  cudaStream_t stream = ctx.stream();
  const bool fused = residual != nullptr;
  const bool pdl = ctx.programmatic_launch();
  if (layer_norm) {
    if (fused) {
      LaunchKernel(pdl, NormKernel<true, true>, grid, dim3(threads), 0, stream,
                   args);
    } else {
      LaunchKernel(pdl, NormKernel<true, false>, grid, dim3(threads), 0, stream,
                   args);
    }
  } else {
    if (fused) {
      LaunchKernel(pdl, NormKernel<false, true>, grid, dim3(threads), 0, stream,
                   args);
    } else {
      LaunchKernel(pdl, NormKernel<false, false>, grid, dim3(threads), 0,
                   stream, args);
    }
  }
  return LastLaunchStatus(layer_norm ? "LayerNorm" : "RmsNorm");
}

}  // namespace

absl::Status RmsNorm(DeviceContext& ctx, const Tensor& x, const Tensor& weight,
                     double eps, Tensor* y, Tensor* residual) {
  return LaunchNorm(ctx, /*layer_norm=*/false, x, weight, Tensor(), eps, y,
                    residual);
}

absl::Status LayerNorm(DeviceContext& ctx, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, double eps,
                       Tensor* y, Tensor* residual) {
  return LaunchNorm(ctx, /*layer_norm=*/true, x, weight, bias, eps, y,
                    residual);
}

}  // namespace dynsparse::cuda
