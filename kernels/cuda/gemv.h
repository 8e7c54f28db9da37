// Decode GEMV on CUDA: y[b, o] = sum_k x[b, k] * w[o, k] (+ bias[o]).
//
// The decode step of an LLM multiplies a handful of activation rows (batch
// 1..8) by every weight matrix, so the time is the time to stream the weights
// from HBM once; the arithmetic is negligible. gemv_kernels.cu explains the
// kernel.
//
// Types: w is f16 or bf16 (fast paths) or f32 (correct but slow path), in the
// [out, in] row-major layout of torch.nn.Linear / safetensors. x and y are
// f32, the activation type of core/graph/backend.h, so no conversion pass is
// needed between ops; accumulation is f32. The CUDA-core path uses x as is;
// the tensor-core path splits x into hi + lo halves of w's type (x = hi + lo
// to 16 bits for bf16, 22 for f16), so its products match f32 to ~1e-5
// relative. With f16 weights |x| must stay below 65504 (f16's range, as in an
// f16 model's own activations). bias is empty or [out] in any floating dtype.
#ifndef DYNSPARSE_KERNELS_CUDA_GEMV_H_
#define DYNSPARSE_KERNELS_CUDA_GEMV_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/model_config.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

inline constexpr int64_t kGemvMaxBatch = 8;

// Which kernel computes the product (gemv_kernels.cu explains each).
enum class GemvPath {
  kAuto,        // PlanGemv chooses.
  kScalar,      // Any shape, alignment and weight dtype; slow.
  kCudaCore,    // 16-byte loads, f32 FMA; fastest at batch 1-2.
  kTensorCore,  // 16-byte loads, mma.sync with x split into hi + lo halves.
};
const char* GemvPathName(GemvPath path);

// How one launch divides the work. PlanGemv picks it; tests and benchmarks
// may force the path and split factors through GemvOptions.
struct GemvPlan {
  GemvPath path = GemvPath::kScalar;
  int rows_per_warp = 1;  // Output rows one warp computes together.
  int warps_per_row = 1;  // Warps of one block that split one row's K.
  int k_splits = 1;  // Blocks that split K (partials summed in a 2nd pass).
  int64_t chunks_per_split = 0;  // 8-element chunks of K per split.
  int64_t grid_blocks = 0;       // Blocks per K split.
  int resident_warps = 0;        // Warps the whole GPU holds at once.
  // kTensorCore: the one-wave build with more loads in flight a warp
  // (DeviceContext::gemv_deep_mma), taken when it holds the whole grid.
  bool deep_mma = false;

  std::string DebugString() const;
};

// A block's pre-norm folded into the GEMV (one row, CUDA-core path): the
// kernel reads x, multiplies it by gamma as it loads it and sums x and x^2 on
// the way, so y = norm(x) * w^T + bias without norm(x) being written.
// RMSNorm: y = (w . (gamma x)) / rms(x) + bias. LayerNorm: y = (w . (gamma x)
// - mean * c) / sigma + bias with c = w gamma (row_sums) and bias = w beta +
// b (FoldLayerNorm computes both once per weight).
struct GemvNorm {
  Tensor weight;    // gamma [in], w's dtype, 16-byte aligned.
  Tensor row_sums;  // LayerNorm: f32 [out]; empty for RMSNorm.
  double eps = 0.0;
};

// LayerNorm's per-row constants for GemvNorm: row_sums = w gamma and
// bias = w beta + b (beta, b may be empty), f32 [out] each, made with this
// GEMV (synchronous: call outside graph capture).
struct LayerNormFold {
  Tensor row_sums;
  Tensor bias;
};
absl::StatusOr<LayerNormFold> FoldLayerNorm(DeviceContext& ctx, const Tensor& w,
                                            const Tensor& gamma,
                                            const Tensor& beta,
                                            const Tensor& b);

struct GemvOptions {
  GemvPath path = GemvPath::kAuto;  // A forced fast path that cannot run is
                                    // an InvalidArgument error.
  int warps_per_row = 0;  // kCudaCore only. 0: automatic; else 1, 2 or 4.
  int k_splits = 0;       // 0: automatic; else >= 1.
  // Applied to y after the bias, in the GEMV's epilogue (Linear + Activate
  // in one launch).
  std::optional<Activation> activation;
  int64_t activation_from_row = 0;  // Rows below keep y = x w^T + bias.
  std::optional<GemvNorm> norm;     // x is normalised as it is loaded.
  bool accumulate = false;  // y += result: a residual add in the epilogue.
  // With DeviceContext::gemv_early_loads, the CUDA-core kernel's blocks
  // whose index is a multiple of this issue their first weight loads before
  // the PDL wait (0: none do; negative is an error), for A/B timing of the
  // queue they build ahead of the kernel still running (the o-projection after
  // the attention: fewer lost or tied on an H100, results/bench/h100_run192).
  int early_loads_every = 1;
  // The gated MLP's up/gate pair (one row, CUDA-core path): w is [w_up;
  // w_gate] (2n rows, bias likewise), activation_from_row must be n, and y is
  // [1, n] = (x w_up^T + b_up) * act(x w_gate^T + b_gate), the vector the
  // down projection reads.
  bool gated_pairs = false;
  // y holds the outputs of weights stacked in w (q/k/v, up/gate of a step of
  // a few rows) as their own [batch, rows] matrices, back to back: rows [0,
  // e0), [e0, e1), [e1, out) for segment_ends {e0, e1} (at most two,
  // increasing, inside (0, out)); row r of a segment of n rows starting at
  // s lands at y[batch * s + b * n + r - s]. Empty: one [batch, out]
  // matrix, which is the same layout at batch 1.
  std::vector<int64_t> segment_ends;
};

// The plan Gemv would run for these operands (validates them too).
absl::StatusOr<GemvPlan> PlanGemv(const DeviceContext& ctx, const Tensor& x,
                                  const Tensor& w,
                                  const GemvOptions& options = {});

// y = x * w^T (+ bias), queued on ctx's stream. x [batch, in] f32 with
// 1 <= batch <= 8, w [out, in] f16/bf16/f32, bias empty or [out], y [batch,
// out] f32 (must not alias x). Uses ctx's workspace when K is split across
// blocks; the first call of a shape may grow it (do that outside graph
// capture).
absl::Status Gemv(DeviceContext& ctx, const Tensor& x, const Tensor& w,
                  const Tensor& bias, Tensor* y,
                  const GemvOptions& options = {});

// The gated MLP's down projection in one launch: y = (act(gate) * x) * w^T
// (+ bias), where act(gate) * x is formed while x is loaded, so SwiGLU's
// elementwise pass over the intermediate vector (one more kernel per layer)
// disappears. Same values as GatedActivate followed by Gemv. Without an
// activation gate must already hold act(gate) (one multiply per load; with
// one, every block recomputes the activation of all of x, which measured
// slower than the separate pass on Llama-2-7B). One row only
// (decode at batch 1), f16/bf16 weights on the CUDA-core path; other operands
// are an InvalidArgument error (check GatedGemvSupported first: one f32 row
// of x, a 16-byte aligned f32 gate of x's size, aligned f16/bf16 weights).
bool GatedGemvSupported(const Tensor& gate, const Tensor& x, const Tensor& w);
// `accumulate`: y += the result (the residual add).
absl::Status GatedGemv(DeviceContext& ctx, std::optional<Activation> activation,
                       const Tensor& gate, const Tensor& x, const Tensor& w,
                       const Tensor& bias, Tensor* y, bool accumulate = false);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_GEMV_H_
