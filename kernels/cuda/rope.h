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

// The attention prologue of a step in one launch instead of three (RoPE of q
// and k, then two cache writes): rotates q (f32 [n, q_heads * head_dim]) and
// k (f32 [n, kv_heads * head_dim]) in place as ApplyRope does, then writes k
// and v (same shape as k) into rows positions[i] of k_cache and v_cache (f32
// or f16, both the same, [capacity, kv_heads * head_dim]; f16 rows are the
// f32 values rounded to nearest). An empty inv_freq means no RoPE (OPT): q is
// left alone and k, v are only copied. Bit-identical to the unfused ops.
absl::Status RopeWriteKv(DeviceContext& ctx, const Tensor& inv_freq,
                         const Tensor& positions, int64_t q_heads,
                         int64_t kv_heads, int64_t head_dim, Tensor* q,
                         Tensor* k, const Tensor& v, Tensor* k_cache,
                         Tensor* v_cache);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_ROPE_H_
