// LazyLLM's choice on the device (top_count.h): a quarter of n probe
// scores, n from 4k to 64k candidates, as a late decode step keeps at
// keep=0.25. The kernel is one block, so its time is latency, not bytes:
// the reported bandwidth counts the scores once and means little. What it
// replaces is the host's selection while the device waits
// (cpu_benchmarks' BM_TopCountIndices times that).
//
//   dynsparse_cuda_benchmarks --benchmark_filter=top_count
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/top_count.h"
#include "kernels/cuda/top_count_benchmark.h"

namespace dynsparse::cuda {
namespace {

void BenchTopCount(benchmark::State& state, bench::Env* env, int64_t n) {
  DeviceContext& ctx = *env->ctx;
  const int64_t count = n / 4;
  absl::StatusOr<Tensor> scores = AllocateDevice(ctx, DType::kF32, {n});
  absl::StatusOr<Tensor> top = AllocateDevice(ctx, DType::kI32, {count});
  absl::Status ok = scores.status();
  ok.Update(top.status());
  // Uniform in [-0.5, 0.5): the probe's are positive, but signs cost the
  // select nothing (it always makes four passes).
  if (ok.ok()) ok.Update(bench::FillRandom(ctx, &*scores, 3, 0.5f));
  if (!ok.ok()) {
    state.SkipWithError(std::string(ok.message()).c_str());
    return;
  }
  bench::TimeGraph(
      state, ctx, bench::CallsFor(1),
      [&](int) { return TopCountDevice(ctx, *scores, count, &*top); },
      static_cast<double>(n) * sizeof(float), env->copy_gbps);
}

}  // namespace

void RegisterTopCountBenchmarks(bench::Env* env) {
  for (int64_t n : {4096, 8192, 16384, 65536}) {
    const std::string name = absl::StrFormat("top_count/n%d/count%d", n, n / 4);
    benchmark::RegisterBenchmark(name.c_str(), BenchTopCount, env, n)
        ->UseManualTime()
        ->Iterations(bench::kIterations)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace dynsparse::cuda
