// Where a launch of the one-launch sparse MLP (sparse_mlp.h) spends its time,
// from the global time each block records at every FusedMlpEvent: what the
// ramp (blocks beginning late), the up projection, the wait for the cluster's
// activations, the transposed gather and the tail cost, on a real shape.
#ifndef DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_TIMELINE_H_
#define DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_TIMELINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model_config.h"
#include "core/tensor.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/sparse_mlp.h"

namespace dynsparse::cuda {

// One copy of an MLP's operands (device tensors; gated: w_gate set, biases
// empty). The timeline rotates over copies as the benchmark does, so the
// weights come from HBM, not L2.
struct FusedMlpOperands {
  Tensor w_up, b_up, w_gate, w_down_t, b_down, ids;
};

// Where the launches spent their time, in us. events[e] = {min, median,
// max} over the blocks of event e's time since the launch's first block
// began, each the median over the calls; span: the first block's begin to
// the last block's write; between_calls: one launch's last write to the
// next launch's first begin (the split reduction and the launch boundary).
struct FusedMlpTimeline {
  int splits = 0, blocks = 0, calls = 0;
  double span_us = 0, between_calls_us = 0;
  double events_us[kFusedMlpEvents][3] = {};
};

// Runs `calls` (>= 2) launches of FusedSparseMlp back to back in a CUDA graph
// with the timeline on. Fails when the fused kernel does not apply to these
// operands.
absl::StatusOr<FusedMlpTimeline> MeasureFusedMlpTimeline(
    CudaBackend& backend, const Tensor& x,
    const std::vector<FusedMlpOperands>& copies, Activation activation,
    int calls);

// One JSON object: {"timeline": label, "splits", "blocks", "calls",
// "span_us", "between_calls_us", "<event>_us": [min, median, max], ...}.
std::string FusedMlpTimelineJson(const FusedMlpTimeline& timeline,
                                 const std::string& label);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_TIMELINE_H_
