// Linear layers on CUDA: y = x * w^T (+ bias) with f32 activations.
//
// A few rows (decode, batch <= 8) go to our GEMV, which streams the weights
// once and keeps x in f32. More rows (prefill) go to cuBLAS: x is rounded to
// w's dtype (f16/bf16, as an f16 model's activations are) and the product is
// accumulated and written in f32 by a tensor-core GEMM; f32 weights use an
// f32 GEMM (no TF32).
#ifndef DYNSPARSE_KERNELS_CUDA_LINEAR_H_
#define DYNSPARSE_KERNELS_CUDA_LINEAR_H_

#include <optional>

#include "absl/status/status.h"
#include "core/model_config.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_pool.h"

namespace dynsparse::cuda {

// x [n, in] f32, w [out, in] f32/f16/bf16, bias empty or [out], y [n, out]
// f32 (not aliasing x). `pool` supplies the rounded copy of x for cuBLAS.
// For more than kGemvMaxBatch rows x may also come already rounded to w's
// dtype (RoundForLinear), so weights that share an input convert it once.
// `activation`, when set, is applied to y after the bias: in the GEMV's
// epilogue for a few rows, as a separate pass after cuBLAS.
absl::Status Linear(DeviceContext& ctx, DevicePool& pool, const Tensor& x,
                    const Tensor& w, const Tensor& bias, Tensor* y,
                    std::optional<Activation> activation = std::nullopt);

// True when Linear(x, w) with these many rows runs on cuBLAS from x rounded
// to w's dtype (f16/bf16 weights, more than kGemvMaxBatch rows).
bool RoundsInputForLinear(const Tensor& x, const Tensor& w);

// y = x * w_t (+ bias) for a weight stored transposed, w_t [in, out]
// f16/bf16 (DejaVu's W2^T, sparse_ops.h GatherGemvT), x [n, in] f32 with
// more than kGemvMaxBatch rows: one cuBLAS GEMM from x rounded to w_t's
// dtype, as Linear's prefill. A 128-row prefill over OPT-66B's W2^T took
// GatherGemvT 3.27 ms against 0.195 ms for the GEMM over W2
// (results/dejavu_speed/README.md).
absl::Status LinearTransposed(DeviceContext& ctx, DevicePool& pool,
                              const Tensor& x, const Tensor& w_t,
                              const Tensor& bias, Tensor* y);

// y_i = x w_i^T for `count` weights of w_first's shape that sit back to back
// in memory (q/k/v, up/gate) into `count` f32 outputs of y_first's shape that
// do too, as one strided-batched cuBLAS GEMM: one launch and one cuBLAS call
// instead of `count` (a LazyLLM decode step's revived rows paid ~15 us of
// host time per call, h200_run76). x holds more than kGemvMaxBatch rows in
// w's dtype (already rounded). No bias: callers add their own.
absl::Status LinearBatched(DeviceContext& ctx, const Tensor& x,
                           const Tensor& w_first, int64_t count,
                           Tensor* y_first);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_LINEAR_H_
