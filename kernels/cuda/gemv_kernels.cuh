// What the GEMV kernels (gemv_kernels.cu) and their planner and launcher
// (gemv.cu) share: the kernels' arguments, their block shapes, and the choice
// of kernel for a launch. Include from .cu files only.
#ifndef DYNSPARSE_KERNELS_CUDA_GEMV_KERNELS_CUH_
#define DYNSPARSE_KERNELS_CUDA_GEMV_KERNELS_CUH_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/gemv.h"

namespace dynsparse::cuda::gemv_internal {

inline constexpr int kThreads = 128;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kVec = 8;  // Halves per 16-byte load.

// Rows per warp and loads in flight per row, by batch (see the top comment of
// gemv_kernels.cu).
template <int B>
struct GemvTile {
  static constexpr int kRows = B <= 4 ? 2 : 4;
  static constexpr int kUnroll = B <= 4 ? 4 : 2;
};

inline int RowsPerWarp(int64_t batch) { return batch <= 4 ? 2 : 4; }
inline int UnrollFor(int64_t batch) { return batch <= 4 ? 4 : 2; }

struct GemvArgs {
  const void* w;
  const float* x;
  const void* bias;
  FloatKind bias_kind;
  float* y;
  float* partial;     // [k_splits, batch, out] when k_splits > 1.
  const float* gate;  // GatedGemv only: x is read as act(gate) * x.
  // Fused pre-norm of x (NormInput): gamma (w's dtype), LayerNorm's row sums
  // c[o] = sum_k w[o, k] gamma[k] (null for RMSNorm) and eps.
  const void* norm_weight;
  const float* norm_row_sums;
  float norm_eps;
  bool layer_norm;
  bool accumulate;       // y += result (the residual add in the epilogue).
  int act;               // -1, or an Activation applied to y (+ bias)
  int64_t act_from_row;  // ... in rows >= this one only.
  // Weight loads before PdlWait: 0 none; N in the vector kernel's blocks
  // whose blockIdx.x is a multiple of N (GemvOptions::early_loads_every),
  // in every block of the deep MMA kernel.
  int early_loads_every;
  // The vector kernel asks L2 for its stores' bias, LayerNorm row sums and
  // old y before its weight loads (DeviceContext::gemv_prefetch_store).
  bool prefetch_store_inputs;
  int batch;
  int64_t out;
  // GemvOptions::segment_ends, out where unused: y[b, row] is at YAt().
  int64_t segment_end0;
  int64_t segment_end1;
  int64_t in;
  int warps_per_row;
  int64_t chunks_per_split;  // 8-element chunks of K per blockIdx.y.
};

// Tensor-core path (GemvMmaKernel).
inline constexpr int kMmaWarps = 8;
inline constexpr int kMmaThreads = kMmaWarps * 32;
inline constexpr int kMmaRows = 16;  // m of mma.m16n8k16.
inline constexpr int kMmaV = 2;      // 16-byte loads per row per lane per unit.
inline constexpr int kMmaU = 2;  // Units whose loads a warp issues together.
inline constexpr int kMmaDeepU = 4;  // ... in the one-wave build (kDeep).
// One unit: 4 lanes (t) x kMmaV chunks of 8 = 64 K elements of 16 rows.
inline constexpr int kMmaUnitChunks = 4 * kMmaV;
// Splits of K start on multiples of this (all 8 warps get whole units).
inline constexpr int kMmaSplitChunks = kMmaWarps * kMmaUnitChunks;

using KernelFn = void (*)(GemvArgs);

// How the one-row CUDA-core kernels are built (DeviceContext's switches).
struct OneRowBuild {
  // For one more block an SM (DeviceContext::gemv_occupancy_bounds).
  bool bounded = true;
  // ... and with evict_first weight loads (gemv_weights_evict_first).
  bool evict_first = false;
};

// The kernel a launch with these options runs (its plan is sized by that
// kernel's occupancy). `gate`: GatedGemv's activation, null for Gemv.
// `deep_mma`: the tensor-core kernel's one-wave build (GemvMmaKernel's
// kDeep).
KernelFn LaunchedKernel(DType dtype, int64_t batch, GemvPath path, bool norm,
                        bool pairs, const std::optional<Activation>* gate,
                        OneRowBuild one_row, bool deep_mma);

inline int ThreadsFor(GemvPath path) {
  return path == GemvPath::kTensorCore ? kMmaThreads : kThreads;
}

// Queues the sum of a split-K launch's partials into y (+ bias, epilogue).
absl::Status LaunchSplitReduce(DeviceContext& ctx, const GemvArgs& args,
                               int64_t batch, int k_splits);

}  // namespace dynsparse::cuda::gemv_internal

#endif  // DYNSPARSE_KERNELS_CUDA_GEMV_KERNELS_CUH_
