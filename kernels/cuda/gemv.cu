// Decode GEMV (gemv.h): the launch plan for a shape (path, rows a warp,
// warps a row, K splits, sized by the chosen kernel's occupancy), the
// operand checks, and the launch. The kernels and why they look as they do:
// gemv_kernels.cu.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/gemv_kernels.cuh"

namespace dynsparse::cuda {
namespace {

using gemv_internal::GemvArgs;
using gemv_internal::KernelFn;
using gemv_internal::kMmaRows;
using gemv_internal::kMmaSplitChunks;
using gemv_internal::kMmaWarps;
using gemv_internal::kVec;
using gemv_internal::kWarps;
using gemv_internal::RowsPerWarp;
using gemv_internal::ThreadsFor;
using gemv_internal::UnrollFor;

// Resident blocks per SM of `kernel` at `threads`, asked of the driver once
// per (device, kernel, threads): PlanGemv runs before every eager GEMV, and
// the query was 2-3 us of host time each (h200_run76's API trace).
absl::StatusOr<int> BlocksPerSm(const DeviceContext& ctx, KernelFn kernel,
                                int threads) {
  using Key = std::tuple<int, KernelFn, int>;
  static std::mutex mu;
  static auto* known = new std::map<Key, int>();  // never destroyed
  const Key key{ctx.device(), kernel, threads};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known->find(key); it != known->end()) return it->second;
  }
  int blocks = 0;
  DS_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, kernel, threads, 0));
  std::lock_guard<std::mutex> lock(mu);
  known->emplace(key, blocks);
  return blocks;
}

// The kernel a launch with these options runs; `gate` as in LaunchedKernel.
KernelFn LaunchedKernel(const DeviceContext& ctx, DType dtype, int64_t batch,
                        GemvPath path, bool norm, bool pairs,
                        const std::optional<Activation>* gate,
                        bool deep_mma = false) {
  const gemv_internal::OneRowBuild one_row{
      .bounded = ctx.gemv_occupancy_bounds(),
      .evict_first = ctx.gemv_weights_evict_first()};
  return gemv_internal::LaunchedKernel(dtype, batch, path, norm, pairs, gate,
                                       one_row, deep_mma);
}

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

absl::Status ValidateOperands(const Tensor& x, const Tensor& w) {
  RETURN_IF_ERROR(CheckOnDevice(x, "Gemv x"));
  RETURN_IF_ERROR(CheckOnDevice(w, "Gemv w"));
  if (w.rank() != 2 || x.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv wants x [batch, in] and w [out, in], got x ",
                     x.DebugString(), " and w ", w.DebugString()));
  }
  if (x.dim(1) != w.dim(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv inner dimensions differ: x ", x.DebugString(),
                     ", w ", w.DebugString()));
  }
  if (x.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv x must be f32, got ", x.DebugString()));
  }
  if (!IsFloating(w.dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv w must be f16, bf16 or f32, got ", w.DebugString()));
  }
  if (x.dim(0) < 1 || x.dim(0) > kGemvMaxBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv batch must be 1..", kGemvMaxBatch, " (decode), got ",
                     x.dim(0), " rows; larger batches belong to a GEMM"));
  }
  if (x.dim(1) > (int64_t{1} << 31) - 1 || w.dim(0) > (int64_t{1} << 31) - 1) {
    return absl::InvalidArgumentError("Gemv dimensions must fit in int32");
  }
  return absl::OkStatus();
}

}  // namespace

// Batch at and above which kAuto takes the tensor-core path.
constexpr int64_t kTensorCoreMinBatch = 3;

const char* GemvPathName(GemvPath path) {
  switch (path) {
    case GemvPath::kAuto:
      return "auto";
    case GemvPath::kScalar:
      return "scalar";
    case GemvPath::kCudaCore:
      return "cuda_core";
    case GemvPath::kTensorCore:
      return "tensor_core";
  }
  return "?";
}

std::string GemvPlan::DebugString() const {
  return absl::StrCat(GemvPathName(path), " rows/warp=", rows_per_warp,
                      " warps/row=", warps_per_row, " k_splits=", k_splits,
                      " blocks=", grid_blocks,
                      " resident_warps=", resident_warps,
                      deep_mma ? " deep" : "");
}

namespace {

// PlanGemv for the kernel LaunchedKernel picks (`gate` as there).
absl::StatusOr<GemvPlan> PlanLaunch(const DeviceContext& ctx, const Tensor& x,
                                    const Tensor& w, const GemvOptions& options,
                                    const std::optional<Activation>* gate) {
  RETURN_IF_ERROR(ValidateOperands(x, w));
  const int64_t batch = x.dim(0);
  const int64_t out = w.dim(0);
  const int64_t in = w.dim(1);
  const int64_t chunks = in / kVec;
  const bool fast_ok =
      (w.dtype() == DType::kF16 || w.dtype() == DType::kBF16) &&
      in % kVec == 0 && IsAligned(w.raw_data(), 16) &&
      IsAligned(x.raw_data(), 16);
  GemvPlan plan;
  switch (options.path) {
    case GemvPath::kAuto:
      plan.path = !fast_ok                       ? GemvPath::kScalar
                  : batch >= kTensorCoreMinBatch ? GemvPath::kTensorCore
                                                 : GemvPath::kCudaCore;
      break;
    case GemvPath::kScalar:
      plan.path = GemvPath::kScalar;
      break;
    case GemvPath::kCudaCore:
    case GemvPath::kTensorCore:
      if (!fast_ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Gemv path ", GemvPathName(options.path),
            " needs f16/bf16 weights, in % 8 == 0 and 16-byte aligned x and "
            "w; got x ",
            x.DebugString(), ", w ", w.DebugString()));
      }
      plan.path = options.path;
      break;
  }
  if (options.k_splits < 0) {
    return absl::InvalidArgumentError("k_splits must be >= 0");
  }
  if (options.early_loads_every < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "early_loads_every must be >= 0, got ", options.early_loads_every));
  }
  if ((options.norm.has_value() || options.gated_pairs) &&
      (batch != 1 || plan.path != GemvPath::kCudaCore)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a fused norm or gated pairs need one row on the CUDA-core path ",
        "(f16/bf16 weights, aligned, in % 8 == 0); got x ", x.DebugString(),
        ", w ", w.DebugString(), ", path ", GemvPathName(plan.path)));
  }
  if (options.gated_pairs &&
      (out % 2 != 0 || !options.activation.has_value() ||
       options.activation_from_row != out / 2 || options.accumulate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gated pairs need [w_up; w_gate] (even rows, got ", out,
                     "), an activation from row out / 2 and no accumulate"));
  }
  const KernelFn kernel =
      LaunchedKernel(ctx, w.dtype(), batch, plan.path, options.norm.has_value(),
                     options.gated_pairs, gate);
  if (kernel == nullptr) {
    return absl::InternalError("no GEMV kernel for this dtype and batch");
  }
  const int threads = ThreadsFor(plan.path);
  absl::StatusOr<int> blocks_per_sm = BlocksPerSm(ctx, kernel, threads);
  if (!blocks_per_sm.ok()) return blocks_per_sm.status();
  const int64_t resident_blocks =
      int64_t{std::max(1, *blocks_per_sm)} * ctx.sm_count();
  plan.resident_warps = static_cast<int>(resident_blocks * (threads / 32));
  plan.chunks_per_split = chunks;

  if (plan.path == GemvPath::kScalar) {
    plan.grid_blocks = CeilDiv(out, kWarps);
    return plan;
  }

  if (plan.path == GemvPath::kTensorCore) {
    plan.rows_per_warp = kMmaRows;
    plan.warps_per_row = kMmaWarps;
    plan.grid_blocks = CeilDiv(out, kMmaRows);
    const int64_t split_units = CeilDiv(chunks, kMmaSplitChunks);
    // Blocks the one-wave build holds at once (0: it is off).
    int64_t deep_capacity = 0;
    if (ctx.gemv_deep_mma()) {
      const KernelFn deep =
          LaunchedKernel(ctx, w.dtype(), batch, plan.path, false, false,
                         nullptr, /*deep_mma=*/true);
      absl::StatusOr<int> deep_per_sm = BlocksPerSm(ctx, deep, threads);
      if (!deep_per_sm.ok()) return deep_per_sm.status();
      deep_capacity = int64_t{*deep_per_sm} * ctx.sm_count();
    }
    int64_t splits = options.k_splits;
    if (splits == 0) {
      splits = 1;
      if (plan.grid_blocks < ctx.sm_count()) {
        // Fewer row groups than SMs: split K across blocks until there are
        // about two blocks per SM, keeping >= 2 units per warp per split.
        splits = std::min(CeilDiv(2 * ctx.sm_count(), plan.grid_blocks),
                          std::max<int64_t>(1, split_units / 2));
      } else if (2 * plan.grid_blocks <= resident_blocks &&
                 plan.grid_blocks > deep_capacity &&
                 static_cast<double>(out) * in * DTypeSize(w.dtype()) >= 64e6) {
        // The GPU could hold twice the blocks and the weights are large
        // enough (>= 64 MB, ~15 us) to amortise the reduce launch: two
        // splits double the warps in flight (4096x11008: 37.6 -> 30.3 us).
        // Where the one-wave build holds the unsplit grid it doubles the
        // loads in flight a warp instead, without the reduce launch.
        splits = 2;
      }
    }
    splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, split_units));
    const int64_t units_per_split = CeilDiv(split_units, splits);
    plan.chunks_per_split =
        std::max<int64_t>(1, units_per_split) * kMmaSplitChunks;
    plan.k_splits = static_cast<int>(
        std::max<int64_t>(1, CeilDiv(chunks, plan.chunks_per_split)));
    // The one-wave build when its fewer blocks an SM still hold the grid.
    plan.deep_mma = plan.grid_blocks * plan.k_splits <= deep_capacity;
    return plan;
  }

  // CUDA-core path.
  plan.rows_per_warp = RowsPerWarp(batch);
  const int unroll = UnrollFor(batch);
  const int64_t groups = CeilDiv(out, plan.rows_per_warp);
  const int64_t k_steps = CeilDiv(chunks, 32);  // 32-lane steps along K.
  if (options.warps_per_row != 0) {
    const int f = options.warps_per_row;
    if (f != 1 && f != 2 && f != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("warps_per_row must be 1, 2 or 4, got ", f));
    }
    plan.warps_per_row = f;
  } else {
    // Measured on an H200: splitting K over more warps (more, shorter
    // blocks) wins as long as each warp keeps a full unrolled step.
    int f = 1;
    while (f < kWarps && k_steps >= int64_t{2} * f * unroll) f *= 2;
    plan.warps_per_row = f;
  }
  const int64_t warps = groups * plan.warps_per_row;
  // A fused norm needs every row group to see all of K (its statistics).
  // Gated pairs: both rows of a neuron must end in the same block.
  int64_t splits =
      options.norm.has_value() || options.gated_pairs ? 1 : options.k_splits;
  if (splits == 0) {
    splits = 1;
    if (2 * warps < plan.resident_warps) {
      // Too few rows even with 4 warps a row: split K across blocks, keeping
      // at least one unrolled step per warp per split.
      const int64_t by_fill = CeilDiv(plan.resident_warps, warps);
      const int64_t by_k = std::max<int64_t>(
          1, k_steps / (int64_t{plan.warps_per_row} * unroll));
      splits = std::clamp<int64_t>(std::min(by_fill, by_k), 1, 64);
    }
  }
  splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, k_steps));
  // Splits start on 32-chunk (512-byte) boundaries.
  const int64_t steps_per_split = CeilDiv(k_steps, splits);
  plan.chunks_per_split = std::max<int64_t>(1, steps_per_split) * 32;
  plan.k_splits = static_cast<int>(
      std::max<int64_t>(1, CeilDiv(chunks, plan.chunks_per_split)));
  plan.grid_blocks = CeilDiv(groups, kWarps / plan.warps_per_row);
  return plan;
}

}  // namespace

absl::StatusOr<GemvPlan> PlanGemv(const DeviceContext& ctx, const Tensor& x,
                                  const Tensor& w, const GemvOptions& options) {
  return PlanLaunch(ctx, x, w, options, nullptr);
}

namespace {

absl::Status CheckOutputs(const Tensor& x, const Tensor& w, const Tensor& bias,
                          const Tensor& y) {
  RETURN_IF_ERROR(CheckOnDevice(y, "Gemv y"));
  const int64_t batch = x.dim(0);
  const int64_t out = w.dim(0);
  if (y.dtype() != DType::kF32 || y.rank() != 2 || y.dim(0) != batch ||
      y.dim(1) != out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gemv y must be f32 [", batch, ",", out, "], got ", y.DebugString()));
  }
  if (!bias.empty()) {
    RETURN_IF_ERROR(CheckOnDevice(bias, "Gemv bias"));
    if (!IsFloating(bias.dtype()) || bias.numel() != out) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gemv bias must be a floating [", out, "] tensor, got ",
                       bias.DebugString()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSegments(const GemvOptions& options, int64_t out) {
  const std::vector<int64_t>& ends = options.segment_ends;
  bool ok = ends.empty() || (ends.size() <= 2 && !options.gated_pairs);
  for (size_t i = 0; ok && i < ends.size(); ++i) {
    ok = ends[i] > (i == 0 ? 0 : ends[i - 1]) && ends[i] < out;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "Gemv segment_ends must be at most two increasing rows inside (0, ", out,
      "), without gated pairs; got [", absl::StrJoin(ends, ", "), "]"));
}

absl::Status CheckNorm(const GemvNorm& norm, const Tensor& w) {
  const int64_t out = w.dim(0), in = w.dim(1);
  RETURN_IF_ERROR(CheckOnDevice(norm.weight, "Gemv norm weight"));
  if (norm.weight.dtype() != w.dtype() || norm.weight.numel() != in ||
      !IsAligned(norm.weight.raw_data(), 16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gemv norm weight must be an aligned [", in, "] tensor of w's dtype, ",
        "got ", norm.weight.DebugString()));
  }
  if (!norm.row_sums.empty()) {
    RETURN_IF_ERROR(CheckOnDevice(norm.row_sums, "Gemv norm row sums"));
    if (norm.row_sums.dtype() != DType::kF32 || norm.row_sums.numel() != out) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gemv norm row sums must be f32 [", out, "], got ",
                       norm.row_sums.DebugString()));
    }
  }
  return absl::OkStatus();
}

// Queues `kernel` (and the split-K reduce) for a validated plan.
absl::Status LaunchPlan(DeviceContext& ctx, const GemvPlan& plan,
                        KernelFn kernel, const Tensor& x, const Tensor& w,
                        const Tensor& bias, const float* gate,
                        const GemvOptions& options, Tensor* y) {
  const int64_t batch = x.dim(0);
  const int64_t out = w.dim(0);
  if (out == 0) return absl::OkStatus();
  if (plan.grid_blocks > 0x7fffffff || plan.k_splits > 65535) {
    return absl::InvalidArgumentError("Gemv grid too large");
  }

  GemvArgs args;
  args.w = w.raw_data();
  args.x = x.data<float>();
  args.bias = bias.empty() ? nullptr : bias.raw_data();
  args.bias_kind = bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype());
  args.y = y->data<float>();
  args.partial = nullptr;
  args.gate = gate;
  args.act = options.activation.has_value()
                 ? static_cast<int>(*options.activation)
                 : -1;
  args.act_from_row = options.activation_from_row;
  args.norm_weight =
      options.norm.has_value() ? options.norm->weight.raw_data() : nullptr;
  args.norm_row_sums =
      options.norm.has_value() && !options.norm->row_sums.empty()
          ? options.norm->row_sums.data<float>()
          : nullptr;
  args.norm_eps =
      options.norm.has_value() ? static_cast<float>(options.norm->eps) : 0.0f;
  args.layer_norm = args.norm_row_sums != nullptr;
  args.accumulate = options.accumulate;
  args.early_loads_every =
      ctx.gemv_early_loads() ? options.early_loads_every : 0;
  args.prefetch_store_inputs = ctx.gemv_prefetch_store();
  args.batch = static_cast<int>(batch);
  args.out = out;
  const std::vector<int64_t>& ends = options.segment_ends;
  args.segment_end0 = ends.empty() ? out : ends[0];
  args.segment_end1 = ends.size() < 2 ? out : ends[1];
  args.in = w.dim(1);
  args.warps_per_row = plan.warps_per_row;
  args.chunks_per_split = plan.chunks_per_split;
  if (plan.k_splits > 1) {
    ASSIGN_OR_RETURN(void* workspace,
                     ctx.Workspace(static_cast<size_t>(plan.k_splits) * batch *
                                   out * sizeof(float)));
    args.partial = static_cast<float*>(workspace);
  }

  RETURN_IF_ERROR(ctx.Activate());
  const dim3 grid(static_cast<unsigned>(plan.grid_blocks),
                  static_cast<unsigned>(plan.k_splits));
  LaunchKernel(ctx.programmatic_launch(), kernel, grid,
               dim3(ThreadsFor(plan.path)), 0, ctx.stream(), args);
  RETURN_IF_ERROR(LastLaunchStatus(GemvPathName(plan.path)));
  if (plan.k_splits > 1) {
    RETURN_IF_ERROR(
        gemv_internal::LaunchSplitReduce(ctx, args, batch, plan.k_splits));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Gemv(DeviceContext& ctx, const Tensor& x, const Tensor& w,
                  const Tensor& bias, Tensor* y, const GemvOptions& options) {
  ASSIGN_OR_RETURN(const GemvPlan plan, PlanGemv(ctx, x, w, options));
  if (options.gated_pairs) {
    // y holds the products: [1, out / 2].
    if (y->dtype() != DType::kF32 || y->rank() != 2 || y->dim(0) != 1 ||
        y->dim(1) * 2 != w.dim(0) ||
        (!bias.empty() && bias.numel() != w.dim(0))) {
      return absl::InvalidArgumentError(
          absl::StrCat("gated pairs: y must be f32 [1, ", w.dim(0) / 2,
                       "] and bias empty or [", w.dim(0), "], got y ",
                       y->DebugString(), ", bias ", bias.DebugString()));
    }
    RETURN_IF_ERROR(CheckOnDevice(*y, "Gemv y"));
  } else {
    RETURN_IF_ERROR(CheckOutputs(x, w, bias, *y));
  }
  RETURN_IF_ERROR(CheckSegments(options, w.dim(0)));
  if (options.norm.has_value()) RETURN_IF_ERROR(CheckNorm(*options.norm, w));
  const KernelFn kernel = LaunchedKernel(
      ctx, w.dtype(), x.dim(0), plan.path, options.norm.has_value(),
      options.gated_pairs, nullptr, plan.deep_mma);
  return LaunchPlan(ctx, plan, kernel, x, w, bias, nullptr, options, y);
}

bool GatedGemvSupported(const Tensor& gate, const Tensor& x, const Tensor& w) {
  return x.rank() == 2 && x.dim(0) == 1 && x.dtype() == DType::kF32 &&
         w.rank() == 2 && w.dim(1) == x.dim(1) && x.dim(1) % kVec == 0 &&
         (w.dtype() == DType::kF16 || w.dtype() == DType::kBF16) &&
         gate.dtype() == DType::kF32 && gate.numel() == x.numel() &&
         IsAligned(x.raw_data(), 16) && IsAligned(w.raw_data(), 16) &&
         IsAligned(gate.raw_data(), 16);
}

absl::Status GatedGemv(DeviceContext& ctx, std::optional<Activation> activation,
                       const Tensor& gate, const Tensor& x, const Tensor& w,
                       const Tensor& bias, Tensor* y, bool accumulate) {
  RETURN_IF_ERROR(CheckOnDevice(gate, "GatedGemv gate"));
  RETURN_IF_ERROR(CheckOnDevice(x, "GatedGemv x"));
  RETURN_IF_ERROR(CheckOnDevice(w, "GatedGemv w"));
  if (!GatedGemvSupported(gate, x, w)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GatedGemv needs one f32 row of x, a 16-byte aligned f32 gate of x's "
        "size and aligned f16/bf16 weights, got gate ",
        gate.DebugString(), ", x ", x.DebugString(), ", w ", w.DebugString()));
  }
  GemvOptions options;
  options.path = GemvPath::kCudaCore;
  options.accumulate = accumulate;
  const KernelFn kernel = LaunchedKernel(ctx, w.dtype(), 1, GemvPath::kCudaCore,
                                         false, false, &activation);
  if (kernel == nullptr) {
    return absl::InvalidArgumentError("GatedGemv: unknown activation");
  }
  ASSIGN_OR_RETURN(const GemvPlan plan,
                   PlanLaunch(ctx, x, w, options, &activation));
  RETURN_IF_ERROR(CheckOutputs(x, w, bias, *y));
  return LaunchPlan(ctx, plan, kernel, x, w, bias, gate.data<float>(), options,
                    y);
}

}  // namespace dynsparse::cuda

namespace dynsparse::cuda {

absl::StatusOr<LayerNormFold> FoldLayerNorm(DeviceContext& ctx, const Tensor& w,
                                            const Tensor& gamma,
                                            const Tensor& beta,
                                            const Tensor& b) {
  const int64_t out = w.dim(0), in = w.dim(1);
  // gamma and beta as f32 rows, the GEMV's x.
  auto as_row = [&](const Tensor& v) -> absl::StatusOr<Tensor> {
    Tensor host = Tensor::Zeros(DType::kF32, {1, in});
    if (!v.empty()) {
      ASSIGN_OR_RETURN(Tensor h, ToHost(ctx, v));
      host = h.ConvertTo(DType::kF32).Reshape({1, in});
    }
    return ToDevice(ctx, host);
  };
  ASSIGN_OR_RETURN(const Tensor g, as_row(gamma));
  ASSIGN_OR_RETURN(const Tensor be, as_row(beta));
  ASSIGN_OR_RETURN(Tensor row_sums, AllocateDevice(ctx, DType::kF32, {1, out}));
  ASSIGN_OR_RETURN(Tensor bias, AllocateDevice(ctx, DType::kF32, {1, out}));
  RETURN_IF_ERROR(Gemv(ctx, g, w, Tensor(), &row_sums));
  RETURN_IF_ERROR(Gemv(ctx, be, w, b, &bias));
  RETURN_IF_ERROR(ctx.Synchronize());  // g and be go out of scope.
  return LayerNormFold{row_sums.Reshape({out}), bias.Reshape({out})};
}

}  // namespace dynsparse::cuda
