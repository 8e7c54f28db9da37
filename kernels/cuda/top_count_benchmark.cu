// LazyLLM's choice on the device: a quarter of n probe scores, n from 4k to
// 64k candidates, as a late decode step keeps at keep=0.25. Two kernels make
// the same choice (ascending ids, ties to the lower id): TopCountDevice (a
// radix select over the float bits, top_count.h) and TopKRows (equal-width
// value bins, then an exact select in the threshold bin, sparse_ops.h; one
// block, or a cluster of 8 from 4096 scores). Which is faster depends on the
// scores: value bins spread uniform (or DejaVu's normal-ish) scores, while a
// probe's mean attention is heavy-tailed (a few large, most near 1/n), which
// puts nearly every score in the lowest bin. Both run on both shapes:
//  * uniform: uniform in [-0.5, 0.5);
//  * attention: exp(2 g), g standard normal, normalised to sum 1, with a
//    sink of 0.3 at id 0 (a softmax row's shape, averaged over heads).
// One block or one cluster: the time is latency, not bytes, so the reported
// bandwidth (the scores once) means little. What the device choice replaces
// is the host's selection while the device waits (cpu_benchmarks'
// BM_TopCountIndices).
//
//   dynsparse_cuda_benchmarks --benchmark_filter=top_count
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/sparse_ops.h"
#include "kernels/cuda/top_count.h"
#include "kernels/cuda/top_count_benchmark.h"

namespace dynsparse::cuda {
namespace {

enum class Scores { kUniform, kAttention };
enum class Kernel { kRadix, kBins, kBinsCluster };

Tensor HostScores(Scores shape, int64_t n) {
  Tensor t = Tensor::Zeros(DType::kF32, {1, n});
  float* v = t.data<float>();
  std::mt19937 rng(7);
  if (shape == Scores::kUniform) {
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (int64_t i = 0; i < n; ++i) v[i] = u(rng);
    return t;
  }
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> e(n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += e[i] = std::exp(2.0 * g(rng));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(0.7 * e[i] / sum);
  v[0] += 0.3f;
  return t;
}

void BenchTopCount(benchmark::State& state, bench::Env* env, int64_t n,
                   Scores shape, Kernel kernel) {
  DeviceContext& ctx = *env->ctx;
  const int64_t count = n / 4;
  absl::StatusOr<Tensor> scores = ToDevice(ctx, HostScores(shape, n));
  absl::StatusOr<Tensor> top = AllocateDevice(ctx, DType::kI32, {1, count});
  absl::Status ok = scores.status();
  ok.Update(top.status());
  if (!ok.ok()) {
    state.SkipWithError(std::string(ok.message()).c_str());
    return;
  }
  const Tensor flat_scores = scores->Reshape({n});
  Tensor flat_top = top->Reshape({count});
  bench::TimeGraph(
      state, ctx, bench::CallsFor(1),
      [&](int) {
        if (kernel == Kernel::kRadix) {
          return TopCountDevice(ctx, flat_scores, count, &flat_top);
        }
        return TopKRows(ctx, *scores, count, &*top,
                        /*cluster=*/kernel == Kernel::kBinsCluster);
      },
      static_cast<double>(n) * sizeof(float), env->copy_gbps);
}

}  // namespace

void RegisterTopCountBenchmarks(bench::Env* env) {
  const struct {
    Scores shape;
    const char* name;
  } shapes[] = {{Scores::kUniform, "uniform"},
                {Scores::kAttention, "attention"}};
  const struct {
    Kernel kernel;
    const char* name;
  } kernels[] = {{Kernel::kRadix, "radix"},
                 {Kernel::kBins, "bins"},
                 {Kernel::kBinsCluster, "bins_cluster"}};
  for (const auto& shape : shapes) {
    for (const auto& kernel : kernels) {
      for (int64_t n : {4096, 8192, 16384, 65536}) {
        const std::string name = absl::StrFormat(
            "top_count/%s/%s/n%d/count%d", shape.name, kernel.name, n, n / 4);
        benchmark::RegisterBenchmark(name.c_str(), BenchTopCount, env, n,
                                     shape.shape, kernel.kernel)
            ->UseManualTime()
            ->Iterations(bench::kIterations)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace dynsparse::cuda
