// RMSNorm and LayerNorm over the last dimension of an f32 [rows, width]
// tensor, statistics in f32, optionally fused with the residual add that
// precedes them in a pre-norm transformer block.
#ifndef DYNSPARSE_KERNELS_CUDA_NORMS_H_
#define DYNSPARSE_KERNELS_CUDA_NORMS_H_

#include "absl/status/status.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// y = x / sqrt(mean(x^2) + eps) * weight.
// When `residual` is non-null the input is h = residual + x: residual is
// updated in place to h and y = RmsNorm(h) (one pass instead of two).
// x, residual: f32 [rows, width] on the device; y: f32 (may alias x, not
// residual) or f16/bf16 (rounded to nearest even, the bits ConvertF32 gives:
// the input of a cuBLAS prefill GEMM); weight: [width] f32/f16/bf16.
absl::Status RmsNorm(DeviceContext& ctx, const Tensor& x, const Tensor& weight,
                     double eps, Tensor* y, Tensor* residual = nullptr);

// y = (x - mean) / sqrt(var + eps) * weight + bias (biased variance, two-pass
// f32 statistics). weight and bias may each be empty (1 and 0); otherwise
// [width] f32/f16/bf16. `residual` as for RmsNorm.
absl::Status LayerNorm(DeviceContext& ctx, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, double eps,
                       Tensor* y, Tensor* residual = nullptr);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_NORMS_H_
