// Rotary position embedding on CUDA, HF "rotate_half" convention (see
// core/graph/rope.h): in each head, dimension i pairs with i + head_dim/2 and
// both rotate by angle position * inv_freq[i].
#ifndef DYNSPARSE_KERNELS_CUDA_ROPE_H_
#define DYNSPARSE_KERNELS_CUDA_ROPE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph/rope.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// The f32 inv_freq table [head_dim / 2] on the device, rounded from the
// double table exactly as kernels/cpu rounds it.
absl::StatusOr<Tensor> UploadRopeInvFreq(const DeviceContext& ctx,
                                         const RopeTable& rope);

// Rotates every head of x (f32 [n, heads * head_dim], in place) by its row's
// position: positions is a device i32 [n], inv_freq a device f32
// [head_dim / 2]. Angles are f32 (position * inv_freq, as transformers
// computes them) and their sin/cos accurate to a few ulp.
absl::Status ApplyRope(DeviceContext& ctx, const Tensor& inv_freq,
                       const Tensor& positions, int64_t heads, Tensor* x);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_ROPE_H_
