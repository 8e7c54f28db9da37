// Timeline of the one-launch sparse MLP (sparse_mlp_timeline.h).
#include "kernels/cuda/sparse_mlp_timeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {
namespace {

constexpr const char* kEventNames[kFusedMlpEvents] = {
    "begins", "up_done", "activations_in", "down_done", "written"};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Destroys a captured graph and its executable.
struct GraphDeleter {
  void operator()(cudaGraph_t g) const { cudaGraphDestroy(g); }
};
struct ExecDeleter {
  void operator()(cudaGraphExec_t e) const { cudaGraphExecDestroy(e); }
};

}  // namespace

absl::StatusOr<FusedMlpTimeline> MeasureFusedMlpTimeline(
    CudaBackend& backend, const Tensor& x,
    const std::vector<FusedMlpOperands>& copies, Activation activation,
    int calls) {
  if (copies.empty() || calls < 2) {
    return absl::InvalidArgumentError(
        "FusedMlpTimeline: needs operands and at least 2 calls");
  }
  DeviceContext& ctx = backend.context();
  const FusedMlpOperands& first = copies.front();
  const bool gated = !first.w_gate.empty();
  const int64_t d = x.numel(), k = first.ids.dim(1);
  const int clusters =
      FusedSparseMlpClusters(ctx, d, first.w_up.dtype(), gated, activation);
  const int splits =
      FusedSparseMlpSplits(clusters, x, first.w_up,
                           gated ? &first.w_gate : nullptr, first.w_down_t, k);
  if (splits == 0) {
    return absl::FailedPreconditionError(
        "FusedMlpTimeline: the fused kernel does not apply to these operands");
  }
  const int64_t blocks = int64_t{splits} * kFusedMlpClusterBlocks;
  const int64_t per_call = blocks * kFusedMlpEvents;
  // 64-bit stamps in an i32 tensor of twice the length.
  ASSIGN_OR_RETURN(Tensor stamps,
                   AllocateDevice(ctx, DType::kI32, {2 * calls * per_call}));
  auto* stamp_data = static_cast<uint64_t*>(stamps.raw_data());
  Tensor scratch = backend.Allocate(DType::kF32, {splits * d});
  Tensor y = backend.Allocate(DType::kF32, {1, d});
  auto launch = [&](int call) -> absl::Status {
    const FusedMlpOperands& op = copies[call % copies.size()];
    const Tensor empty;
    return FusedSparseMlp(
        ctx, x, op.w_up, op.b_up, gated ? &op.w_gate : nullptr,
        gated ? &empty : nullptr, op.w_down_t, op.b_down,
        op.ids.data<int32_t>(), k, activation, splits, scratch.data<float>(),
        &y, stamp_data + call * per_call);
  };
  for (int call = 0; call < calls; ++call) RETURN_IF_ERROR(launch(call));
  RETURN_IF_ERROR(ctx.Synchronize());
  cudaStream_t stream = ctx.stream();
  cudaGraph_t raw_graph = nullptr;
  DS_CUDA_RETURN_IF_ERROR(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  absl::Status captured = absl::OkStatus();
  for (int call = 0; call < calls && captured.ok(); ++call) {
    captured = launch(call);
  }
  DS_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream, &raw_graph));
  std::unique_ptr<CUgraph_st, GraphDeleter> graph(raw_graph);
  RETURN_IF_ERROR(captured);
  cudaGraphExec_t raw_exec = nullptr;
  DS_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&raw_exec, graph.get(), 0));
  std::unique_ptr<CUgraphExec_st, ExecDeleter> exec(raw_exec);
  for (int replay = 0; replay < 2; ++replay) {  // The second one is read.
    DS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec.get(), stream));
  }
  RETURN_IF_ERROR(ctx.Synchronize());
  std::vector<uint64_t> t(static_cast<size_t>(calls * per_call));
  DS_CUDA_RETURN_IF_ERROR(cudaMemcpy(t.data(), stamp_data,
                                     t.size() * sizeof(uint64_t),
                                     cudaMemcpyDeviceToHost));

  // Per call: each event's min / median / max over the blocks since the
  // call's first begin; then the median of each over the calls.
  std::vector<std::vector<double>> stat(kFusedMlpEvents * 3);
  std::vector<double> spans, gaps;
  auto at = [&](int call, int64_t block, int e) {
    return t[call * per_call + block * kFusedMlpEvents + e];
  };
  for (int call = 0; call < calls; ++call) {
    uint64_t t0 = UINT64_MAX, last = 0;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      t0 = std::min(t0, at(call, blk, 0));
      last = std::max(last, at(call, blk, kFusedMlpEvents - 1));
    }
    for (int e = 0; e < kFusedMlpEvents; ++e) {
      std::vector<double> us(blocks);
      for (int64_t blk = 0; blk < blocks; ++blk) {
        us[blk] = (at(call, blk, e) - t0) * 1e-3;
      }
      std::sort(us.begin(), us.end());
      stat[3 * e].push_back(us.front());
      stat[3 * e + 1].push_back(us[us.size() / 2]);
      stat[3 * e + 2].push_back(us.back());
    }
    spans.push_back((last - t0) * 1e-3);
    if (call + 1 < calls) {
      uint64_t next0 = UINT64_MAX;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        next0 = std::min(next0, at(call + 1, blk, 0));
      }
      gaps.push_back((static_cast<double>(next0) - static_cast<double>(last)) *
                     1e-3);
    }
  }
  FusedMlpTimeline out;
  out.splits = splits;
  out.blocks = static_cast<int>(blocks);
  out.calls = calls;
  out.span_us = Median(spans);
  out.between_calls_us = Median(gaps);
  for (int e = 0; e < kFusedMlpEvents; ++e) {
    for (int q = 0; q < 3; ++q) out.events_us[e][q] = Median(stat[3 * e + q]);
  }
  return out;
}

std::string FusedMlpTimelineJson(const FusedMlpTimeline& timeline,
                                 const std::string& label) {
  std::string json = absl::StrFormat(
      "{\"timeline\": \"%s\", \"splits\": %d, \"blocks\": %d, "
      "\"calls\": %d, \"span_us\": %.2f, \"between_calls_us\": %.2f",
      label, timeline.splits, timeline.blocks, timeline.calls, timeline.span_us,
      timeline.between_calls_us);
  for (int e = 0; e < kFusedMlpEvents; ++e) {
    absl::StrAppendFormat(&json, ", \"%s_us\": [%.2f, %.2f, %.2f]",
                          kEventNames[e], timeline.events_us[e][0],
                          timeline.events_us[e][1], timeline.events_us[e][2]);
  }
  return json + "}";
}

}  // namespace dynsparse::cuda
