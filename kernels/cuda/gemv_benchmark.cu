// CUDA kernel benchmarks: decode GEMV (here) and attention
// (attention_benchmark.cu) bandwidth against the device-to-device copy
// bandwidth measured in the same run (the practical HBM ceiling).
//
// Method (benchmark_timing.h): inputs are random, never zeros; each shape
// rotates over enough weight buffers (>= 3x L2 in total) that L2 cannot
// serve the reads; launches are captured in a CUDA graph so launch gaps stay
// out of the kernel time; the graph replays are timed with CUDA events after
// a warm-up, and the counters report medians. Bytes counted per GEMV call:
// weights + x + y (each once).
//
// Counters: GB/s (median), pct_copy (GB/s as % of the measured copy
// bandwidth), us (median microseconds per call), and the GEMV plan.
//   dynsparse_cuda_benchmarks --benchmark_format=json --benchmark_out=x.json
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "kernels/cuda/attention_benchmark.h"
#include "kernels/cuda/benchmark_timing.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/top_count_benchmark.h"

namespace dynsparse::cuda {
namespace {

using bench::BuffersFor;
using bench::CallsFor;
using bench::Env;
using bench::FillRandom;
using bench::kIterations;
using bench::Median;
using bench::TimeGraph;

// Eager cudaMemcpyAsync timed with events (a memcpy node inside a graph can
// take a slower copy path, so no graph here).
void BenchCopy(benchmark::State& state, Env* env, size_t bytes) {
  DeviceContext& ctx = *env->ctx;
  absl::StatusOr<Tensor> src =
      AllocateDevice(ctx, DType::kF32, {static_cast<int64_t>(bytes / 4)});
  absl::StatusOr<Tensor> dst =
      AllocateDevice(ctx, DType::kF32, {static_cast<int64_t>(bytes / 4)});
  if (!src.ok() || !dst.ok() || !FillRandom(ctx, &*src, 2, 1.0f).ok()) {
    state.SkipWithError("allocation failed");
    return;
  }
  cudaEvent_t start, stop;
  DS_CUDA_CHECK(cudaEventCreate(&start));
  DS_CUDA_CHECK(cudaEventCreate(&stop));
  DS_CUDA_CHECK(cudaMemcpyAsync(dst->raw_data(), src->raw_data(), bytes,
                                cudaMemcpyDeviceToDevice, ctx.stream()));
  std::vector<double> times;
  for (auto _ : state) {
    DS_CUDA_CHECK(cudaEventRecord(start, ctx.stream()));
    DS_CUDA_CHECK(cudaMemcpyAsync(dst->raw_data(), src->raw_data(), bytes,
                                  cudaMemcpyDeviceToDevice, ctx.stream()));
    DS_CUDA_CHECK(cudaEventRecord(stop, ctx.stream()));
    DS_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    DS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1e-3);
    state.SetIterationTime(ms * 1e-3);
  }
  const double median_s = Median(times);
  const double gbps = 2.0 * static_cast<double>(bytes) / median_s / 1e9;
  state.counters["GB/s"] = gbps;
  state.counters["pct_copy"] = 100.0 * gbps / env->copy_gbps;
  state.counters["us"] = median_s * 1e6;
  state.counters["MB"] = 2.0 * static_cast<double>(bytes) / 1e6;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

struct GemvCase {
  int64_t out;
  int64_t in;
  int64_t batch;
  DType dtype;
  GemvOptions options;
};

void BenchGemv(benchmark::State& state, Env* env, GemvCase c) {
  DeviceContext& ctx = *env->ctx;
  const double w_bytes = static_cast<double>(c.out) * c.in *
                         static_cast<double>(DTypeSize(c.dtype));
  const int buffers = BuffersFor(ctx, w_bytes);
  std::vector<Tensor> weights;
  for (int i = 0; i < buffers; ++i) {
    absl::StatusOr<Tensor> w = AllocateDevice(ctx, c.dtype, {c.out, c.in});
    if (!w.ok()) {
      state.SkipWithError(std::string(w.status().message()).c_str());
      return;
    }
    if (!FillRandom(ctx, &*w, 100 + i, 1.0f / std::sqrt(float(c.in))).ok()) {
      state.SkipWithError("fill failed");
      return;
    }
    weights.push_back(*w);
  }
  absl::StatusOr<Tensor> x = AllocateDevice(ctx, DType::kF32, {c.batch, c.in});
  absl::StatusOr<Tensor> y = AllocateDevice(ctx, DType::kF32, {c.batch, c.out});
  if (!x.ok() || !y.ok() || !FillRandom(ctx, &*x, 7, 1.0f).ok()) {
    state.SkipWithError("allocation failed");
    return;
  }
  absl::StatusOr<GemvPlan> plan = PlanGemv(ctx, *x, weights[0], c.options);
  if (!plan.ok()) {
    state.SkipWithError(std::string(plan.status().message()).c_str());
    return;
  }
  state.counters["warps_per_row"] = plan->warps_per_row;
  state.counters["k_splits"] = plan->k_splits;
  state.counters["buffers"] = buffers;
  state.SetLabel(plan->DebugString());
  const double bytes = w_bytes + 4.0 * c.batch * (c.in + c.out);
  TimeGraph(
      state, ctx, CallsFor(buffers),
      [&](int i) {
        return Gemv(ctx, *x, weights[i % buffers], Tensor(), &*y, c.options);
      },
      bytes, env->copy_gbps);
}

// cuBLAS reference point: bf16 W and bf16 x (cuBLAS has no bf16 x f32 GEMM),
// f32 y and accumulation, through cublasGemmEx.
void BenchCublas(benchmark::State& state, Env* env, GemvCase c) {
  DeviceContext& ctx = *env->ctx;
  const double w_bytes = static_cast<double>(c.out) * c.in * 2.0;
  const int buffers = BuffersFor(ctx, w_bytes);
  std::vector<Tensor> weights;
  for (int i = 0; i < buffers; ++i) {
    absl::StatusOr<Tensor> w = AllocateDevice(ctx, DType::kBF16, {c.out, c.in});
    if (!w.ok() || !FillRandom(ctx, &*w, 200 + i, 0.01f).ok()) {
      state.SkipWithError("allocation failed");
      return;
    }
    weights.push_back(*w);
  }
  absl::StatusOr<Tensor> x = AllocateDevice(ctx, DType::kBF16, {c.batch, c.in});
  absl::StatusOr<Tensor> y = AllocateDevice(ctx, DType::kF32, {c.batch, c.out});
  if (!x.ok() || !y.ok() || !FillRandom(ctx, &*x, 9, 1.0f).ok()) {
    state.SkipWithError("allocation failed");
    return;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const double bytes = w_bytes + 2.0 * c.batch * c.in + 4.0 * c.batch * c.out;
  TimeGraph(
      state, ctx, CallsFor(buffers),
      [&](int i) -> absl::Status {
        // Column-major view: y^T [out, b] = W^T^T [out, in] * x^T [in, b].
        DS_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
            ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(c.out),
            static_cast<int>(c.batch), static_cast<int>(c.in), &alpha,
            weights[i % buffers].raw_data(), CUDA_R_16BF,
            static_cast<int>(c.in), x->raw_data(), CUDA_R_16BF,
            static_cast<int>(c.in), &beta, y->raw_data(), CUDA_R_32F,
            static_cast<int>(c.out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        return absl::OkStatus();
      },
      bytes, env->copy_gbps);
}

void Register(Env* env) {
  const size_t copy_bytes = size_t{2} << 30;
  benchmark::RegisterBenchmark("copy_d2d/2GiB", BenchCopy, env, copy_bytes)
      ->UseManualTime()
      ->Iterations(kIterations)
      ->Unit(benchmark::kMicrosecond);

  struct OutIn {
    int64_t out, in;
  };
  const std::vector<OutIn> shapes = {
      {4096, 4096}, {11008, 4096}, {4096, 11008}, {36864, 9216}};
  auto add = [&](const std::string& name, GemvCase c) {
    benchmark::RegisterBenchmark(name.c_str(), BenchGemv, env, c)
        ->UseManualTime()
        ->Iterations(kIterations)
        ->Unit(benchmark::kMicrosecond);
  };
  auto forced = [](GemvPath path, int wpr, int splits) {
    GemvOptions o;
    o.path = path;
    o.warps_per_row = wpr;
    o.k_splits = splits;
    return o;
  };
  // Automatic plan, then each fast path forced, on the model shapes.
  for (const OutIn& s : shapes) {
    for (int64_t batch : {1, 2, 4, 8}) {
      add(absl::StrFormat("gemv/bf16/%dx%d/b%d", s.out, s.in, batch),
          {s.out, s.in, batch, DType::kBF16, {}});
    }
    for (int64_t batch : {1, 8}) {
      add(absl::StrFormat("gemv/f16/%dx%d/b%d", s.out, s.in, batch),
          {s.out, s.in, batch, DType::kF16, {}});
    }
    for (int64_t batch : {1, 2, 4, 8}) {
      add(absl::StrFormat("gemv_cc/bf16/%dx%d/b%d", s.out, s.in, batch),
          {s.out, s.in, batch, DType::kBF16,
           forced(GemvPath::kCudaCore, 0, 0)});
      add(absl::StrFormat("gemv_tc/bf16/%dx%d/b%d", s.out, s.in, batch),
          {s.out, s.in, batch, DType::kBF16,
           forced(GemvPath::kTensorCore, 0, 0)});
    }
  }
  // A Llama-2-7B layer's decode GEMV shapes (q/k/v and up/gate as one
  // weight each, as batch 1 runs them; o; down) at batch 3-8: the
  // tensor-core path.
  for (const OutIn& s : std::vector<OutIn>{
           {12288, 4096}, {4096, 4096}, {22016, 4096}, {4096, 11008}}) {
    for (int64_t batch : {3, 4, 8}) {
      add(absl::StrFormat("gemv_llama/f16/%dx%d/b%d", s.out, s.in, batch),
          {s.out, s.in, batch, DType::kF16, {}});
    }
  }
  // Small-out shapes where the K split matters (GQA k/v projections, a
  // router-sized output).
  for (const OutIn& s :
       std::vector<OutIn>{{1024, 4096}, {128, 4096}, {32, 8192}}) {
    for (int64_t batch : {1, 8}) {
      add(absl::StrFormat("gemv/bf16/%dx%d/b%d", s.out, s.in, batch),
          {s.out, s.in, batch, DType::kBF16, {}});
    }
  }
  // Sweeps of the split factors.
  for (const OutIn& s :
       std::vector<OutIn>{{4096, 4096}, {11008, 4096}, {36864, 9216}}) {
    for (int wpr : {1, 2, 4}) {
      add(absl::StrFormat("sweep_cc/bf16/%dx%d/b1/wpr%d", s.out, s.in, wpr),
          {s.out, s.in, 1, DType::kBF16, forced(GemvPath::kCudaCore, wpr, 1)});
    }
  }
  for (const OutIn& s : std::vector<OutIn>{
           {4096, 4096}, {11008, 4096}, {4096, 11008}, {36864, 9216}}) {
    for (int splits : {1, 2, 4}) {
      add(absl::StrFormat("sweep_tc/bf16/%dx%d/b8/ks%d", s.out, s.in, splits),
          {s.out, s.in, 8, DType::kBF16,
           forced(GemvPath::kTensorCore, 0, splits)});
    }
  }
  // 16-64 rows: a LazyLLM decode step's revived rows, which take cuBLAS.
  for (const OutIn& s : shapes) {
    for (int64_t batch : {1, 8, 16, 32, 64}) {
      const std::string name =
          absl::StrFormat("cublas_bf16x/%dx%d/b%d", s.out, s.in, batch);
      benchmark::RegisterBenchmark(
          name.c_str(), BenchCublas, env,
          GemvCase{s.out, s.in, batch, DType::kBF16, {}})
          ->UseManualTime()
          ->Iterations(kIterations)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace dynsparse::cuda

int main(int argc, char** argv) {
  using namespace dynsparse::cuda;  // NOLINT
  benchmark::Initialize(&argc, argv);
  absl::StatusOr<std::unique_ptr<DeviceContext>> ctx = DeviceContext::Create();
  if (!ctx.ok()) {
    std::fprintf(stderr, "dynsparse_cuda_benchmarks: %s\n",
                 std::string(ctx.status().message()).c_str());
    return 1;
  }
  const DeviceInfo& info = (*ctx)->info();
  absl::StatusOr<double> copy = bench::MeasureCopyGbps(**ctx, size_t{2} << 30);
  if (!copy.ok()) {
    std::fprintf(stderr, "copy bandwidth measurement failed: %s\n",
                 std::string(copy.status().message()).c_str());
    return 1;
  }
  std::fprintf(
      stderr, "device: %s\ncopy bandwidth (2 GiB D2D, read+write): %.1f GB/s\n",
      info.DebugString().c_str(), *copy);
  benchmark::AddCustomContext("device", info.DebugString());
  benchmark::AddCustomContext("copy_GBps", absl::StrFormat("%.1f", *copy));
  bench::Env env{ctx->get(), *copy};
  Register(&env);
  RegisterAttentionBenchmarks(&env);
  RegisterTopCountBenchmarks(&env);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
