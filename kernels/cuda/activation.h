// Elementwise kernels on f32 device tensors: activations, the gated
// activation of SwiGLU-style MLPs, bias add and residual add. Each is one
// memory pass (16-byte accesses when the tensor allows).
#ifndef DYNSPARSE_KERNELS_CUDA_ACTIVATION_H_
#define DYNSPARSE_KERNELS_CUDA_ACTIVATION_H_

#include "absl/status/status.h"
#include "core/model_config.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// x = act(x) in place (ReLU, SiLU, GELU erf, GELU tanh), as kernels/cpu.
absl::Status Activate(DeviceContext& ctx, Activation activation, Tensor* x);
// up = act(gate) * up (SwiGLU when act is SiLU); same element count.
absl::Status GatedActivate(DeviceContext& ctx, Activation activation,
                           const Tensor& gate, Tensor* up);
// out = round(act(gate) * up) in out's dtype (f16 or bf16): GatedActivate and
// ConvertF32 in one pass, bit for bit, for a GEMM that reads out.
absl::Status GatedActivateRounded(DeviceContext& ctx, Activation activation,
                                  const Tensor& gate, const Tensor& up,
                                  Tensor* out);
// y[r, c] += bias[c]; y f32 [rows, cols], bias [cols] f32/f16/bf16.
absl::Status AddBias(DeviceContext& ctx, const Tensor& bias, Tensor* y);
// y += x (f32, same element count).
absl::Status AddInPlace(DeviceContext& ctx, const Tensor& x, Tensor* y);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_ACTIVATION_H_
