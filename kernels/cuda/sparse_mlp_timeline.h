// Where a launch of the one-launch sparse MLP (sparse_mlp.h) spends its time,
// from the global time each block records at every FusedMlpEvent: what the
// ramp (blocks beginning late), the up projection, the wait for the cluster's
// activations, the transposed gather and the tail cost, on a real shape.
// Plain C++ (the stamps are read back by the caller), built with or without
// nvcc.
#ifndef DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_TIMELINE_H_
#define DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_TIMELINE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace dynsparse::cuda {

// What a timeline run of FusedSparseMlp records: each block's global time
// (ns) at these events, then the SM it ran on (kFusedMlpSmSlot);
// [splits][cluster][kFusedMlpStamps] a launch.
enum class FusedMlpEvent {
  kBegins,         // After the wait for the previous kernel.
  kUpDone,         // The block's units' up projections summed.
  kActivationsIn,  // Every activation of the split arrived.
  kDownDone,       // The transposed gather's loop done.
  kWritten,        // The block's partial sums written.
};
inline constexpr int kFusedMlpEvents = 5;
inline constexpr int kFusedMlpSmSlot = kFusedMlpEvents;
inline constexpr int kFusedMlpStamps = kFusedMlpEvents + 1;

// Where the launches spent their time, in us. events_us[e] = {min, median,
// max} over the blocks of event e's time since the launch's first block
// began, each the median over the launches; span: the first block's begin
// to the last block's write; between_calls: one launch's last write to the
// next launch's first begin (the split reduction and the launch boundary).
// by_sm_us[e] = {median over the blocks alone on their SM, median over
// those that shared one} of event e (0 where a launch had none of a kind),
// the median over the launches; shared_sm_blocks: the blocks that shared an
// SM (median over the launches).
struct FusedMlpTimeline {
  int blocks = 0, calls = 0, shared_sm_blocks = 0;
  double span_us = 0, between_calls_us = 0;
  double events_us[kFusedMlpEvents][3] = {};
  double by_sm_us[kFusedMlpEvents][2] = {};
};

// `stamps` holds `calls` (>= 2) back-to-back launches of `blocks` blocks
// each, [call][block][stamp] (times in ns, then the SM id).
absl::StatusOr<FusedMlpTimeline> SummarizeFusedMlpTimeline(
    absl::Span<const uint64_t> stamps, int calls, int blocks);

// One JSON object: {"timeline": label, "blocks", "calls", "span_us",
// "between_calls_us", "shared_sm_blocks", "<event>_us": [min, median, max],
// ..., "<event>_by_sm_us": [alone, shared], ...}.
std::string FusedMlpTimelineJson(const FusedMlpTimeline& timeline,
                                 const std::string& label);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_TIMELINE_H_
