// Backend::TopCount on CUDA: the ascending indices of the `count` largest
// of n f32 scores, ties to the lower index (core/graph/top_count.h is the
// host reference, matched index for index). One block of 1024 threads: a
// radix select finds the count-th largest a byte at a time (four histogram
// passes over the scores, warp-aggregated shared atomics), then an ordered
// compaction writes every index above it and the earliest equal ones. Run
// next to LazyLLM's probe, it lets the host download `count` indices
// instead of scoring n candidates itself while the device waits.
#ifndef DYNSPARSE_KERNELS_CUDA_TOP_COUNT_H_
#define DYNSPARSE_KERNELS_CUDA_TOP_COUNT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// scores: f32 [n] on the device; indices: i32 [count], 0 < count < n.
absl::Status TopCountDevice(DeviceContext& ctx, const Tensor& scores,
                            int64_t count, Tensor* indices);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_TOP_COUNT_H_
