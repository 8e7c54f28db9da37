// Timing helpers shared by the CUDA kernel benchmarks (gemv_benchmark.cu,
// attention_benchmark.cu), following /work/.library/device/METHOD.md: random
// inputs, enough buffers that L2 cannot serve the reads, launches captured
// in a CUDA graph and timed with events after a warm-up, medians reported.
#ifndef DYNSPARSE_KERNELS_CUDA_BENCHMARK_TIMING_H_
#define DYNSPARSE_KERNELS_CUDA_BENCHMARK_TIMING_H_

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda::bench {

inline constexpr int kIterations = 30;  // Timed graph replays per benchmark.

struct Env {
  DeviceContext* ctx = nullptr;
  double copy_gbps = 0.0;  // measured in the same run
};

// Uniform values in [-scale, scale) from `seed` (f32, f16, bf16 tensors).
absl::Status FillRandom(DeviceContext& ctx, Tensor* t, uint64_t seed,
                        float scale);

double Median(std::vector<double> v);

// Captures `calls` invocations of `enqueue(i)` into a graph, replays it
// kIterations times (after warm-up) and reports per-call time, GB/s and
// pct_copy from `bytes_per_call`.
void TimeGraph(benchmark::State& state, DeviceContext& ctx, int calls,
               const std::function<absl::Status(int)>& enqueue,
               double bytes_per_call, double copy_gbps);

// Enough buffers of `bytes` that one pass over all is >= 3x L2 (at least 2).
int BuffersFor(const DeviceContext& ctx, double bytes);

// Calls per graph: a whole number of rotations, at least ~20 calls.
int CallsFor(int buffers);

// Device-to-device cudaMemcpyAsync of `bytes` (read + written counted):
// GB/s, the median of 20 after 3 warm-ups.
absl::StatusOr<double> MeasureCopyGbps(DeviceContext& ctx, size_t bytes);

}  // namespace dynsparse::cuda::bench

#endif  // DYNSPARSE_KERNELS_CUDA_BENCHMARK_TIMING_H_
