// Shared timing helpers of the CUDA kernel benchmarks (benchmark_timing.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/benchmark_timing.h"

namespace dynsparse::cuda::bench {
namespace {

constexpr int kWarmupReplays = 3;

__device__ __forceinline__ float HashToUniform(uint64_t x) {
  // splitmix64 -> [-1, 1).
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

template <typename T>
__global__ void FillRandomKernel(T* dst, int64_t n, uint64_t seed,
                                 float scale) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    dst[i] = FromFloat<T>(scale * HashToUniform(seed * 0x100000001b3ull + i));
  }
}

}  // namespace

absl::Status FillRandom(DeviceContext& ctx, Tensor* t, uint64_t seed,
                        float scale) {
  const int64_t n = t->numel();
  const int blocks = 4 * ctx.sm_count();
  switch (t->dtype()) {
    case DType::kF32:
      FillRandomKernel<<<blocks, 256, 0, ctx.stream()>>>(t->data<float>(), n,
                                                         seed, scale);
      break;
    case DType::kF16:
      FillRandomKernel<<<blocks, 256, 0, ctx.stream()>>>(t->data<__half>(), n,
                                                         seed, scale);
      break;
    case DType::kBF16:
      FillRandomKernel<<<blocks, 256, 0, ctx.stream()>>>(
          t->data<__nv_bfloat16>(), n, seed, scale);
      break;
    case DType::kI32:
      return absl::InvalidArgumentError("FillRandom of i32");
  }
  return LastLaunchStatus("FillRandomKernel");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Captures `calls` invocations of `enqueue(i)` into a graph, replays it
// kIterations times (after warm-up) and reports per-call time.
void TimeGraph(benchmark::State& state, DeviceContext& ctx, int calls,
               const std::function<absl::Status(int)>& enqueue,
               double bytes_per_call, double copy_gbps) {
  // One eager call first: module load, workspace growth, cuBLAS setup.
  if (absl::Status s = enqueue(0); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  if (absl::Status s = ctx.Synchronize(); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStream_t stream = ctx.stream();
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) !=
      cudaSuccess) {
    state.SkipWithError("cudaStreamBeginCapture failed");
    return;
  }
  absl::Status captured = absl::OkStatus();
  for (int i = 0; i < calls && captured.ok(); ++i) captured.Update(enqueue(i));
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (!captured.ok() || end != cudaSuccess ||
      cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    state.SkipWithError(
        absl::StrCat("graph capture failed: ", captured.message(), " ",
                     cudaGetErrorString(end))
            .c_str());
    if (graph != nullptr) cudaGraphDestroy(graph);
    return;
  }
  cudaEvent_t start, stop;
  DS_CUDA_CHECK(cudaEventCreate(&start));
  DS_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmupReplays; ++i) {
    DS_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  }
  DS_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> per_call_s;
  for (auto _ : state) {
    DS_CUDA_CHECK(cudaEventRecord(start, stream));
    DS_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    DS_CUDA_CHECK(cudaEventRecord(stop, stream));
    DS_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    DS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double s = ms * 1e-3 / calls;
    per_call_s.push_back(s);
    state.SetIterationTime(s);
  }
  DS_CUDA_CHECK(cudaGetLastError());
  const double median_s = Median(per_call_s);
  const double gbps = bytes_per_call / median_s / 1e9;
  state.counters["GB/s"] = gbps;
  state.counters["pct_copy"] = copy_gbps > 0 ? 100.0 * gbps / copy_gbps : 0.0;
  state.counters["us"] = median_s * 1e6;
  state.counters["MB"] = bytes_per_call / 1e6;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// Enough buffers that one pass over all of them is >= 3x L2 (at least 2).
int BuffersFor(const DeviceContext& ctx, double bytes) {
  const double want = 3.0 * static_cast<double>(ctx.l2_bytes());
  return static_cast<int>(std::clamp<double>(std::ceil(want / bytes), 2, 32));
}

// Calls per graph: a whole number of rotations, at least ~20 calls.
int CallsFor(int buffers) {
  return buffers * std::max(1, (20 + buffers - 1) / buffers);
}

// Measures cudaMemcpyAsync device-to-device of `bytes` (bytes read + written
// counted); returns GB/s (median of 20 after 3 warm-ups).
absl::StatusOr<double> MeasureCopyGbps(DeviceContext& ctx, size_t bytes) {
  ASSIGN_OR_RETURN(
      Tensor src,
      AllocateDevice(ctx, DType::kF32, {static_cast<int64_t>(bytes / 4)}));
  ASSIGN_OR_RETURN(
      Tensor dst,
      AllocateDevice(ctx, DType::kF32, {static_cast<int64_t>(bytes / 4)}));
  RETURN_IF_ERROR(FillRandom(ctx, &src, 1, 1.0f));
  cudaEvent_t start, stop;
  DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  std::vector<double> gbps;
  for (int i = 0; i < 23; ++i) {
    DS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start, ctx.stream()));
    RETURN_IF_ERROR(CopyDeviceToDevice(ctx, src, &dst));
    DS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop, ctx.stream()));
    DS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
    float ms = 0.0f;
    DS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 3)
      gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return Median(gbps);
}

}  // namespace dynsparse::cuda::bench
