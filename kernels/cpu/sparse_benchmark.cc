// CPU benchmark of DejaVu's sparse MLP at batch 1: the gathered up rows
// (fused bias + ReLU) and the transposed-W2 gather (cpu_sparse.h) at keep
// fractions 0.1 / 0.25 / 0.5 against the dense up + down GEMVs, reporting
// weight bytes read per second. Sparse GEMV pays off on the CPU too: the
// time falls with the kept fraction.
//
//   build/kernels/cpu/cpu_sparse_benchmarks --benchmark_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_backend.h"

namespace dynsparse {
namespace {

Tensor Random(Shape shape, DType dtype) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> v(NumElements(shape));
  for (float& x : v) x = dist(rng);
  return Tensor::FromF32(v, std::move(shape), dtype);
}

// args: d, inter, keep per mille (1000: the dense MLP).
void BM_Mlp(benchmark::State& state) {
  const int64_t d = state.range(0), inter = state.range(1);
  const int64_t keep = state.range(2);
  CpuBackend backend;
  const Tensor w_up = Random({inter, d}, DType::kF16);
  const Tensor w_down = Random({d, inter}, DType::kF16);
  const Tensor b_up = Random({inter}, DType::kF32);
  const Tensor b_down = Random({d}, DType::kF32);
  const Tensor& w_down_t = backend.TransposedWeight(w_down);
  const Tensor x = Random({1, d}, DType::kF32);
  Tensor y = Tensor::Zeros(DType::kF32, {1, d});
  const int64_t k = keep >= 1000 ? inter : inter * keep / 1000;
  std::vector<int32_t> ids(inter);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(2));
  ids.resize(k);
  std::sort(ids.begin(), ids.end());
  const Tensor id_tensor = Tensor::FromI32(ids, {1, k});
  Tensor h = Tensor::Zeros(DType::kF32, {1, k});
  for (auto _ : state) {
    if (keep >= 1000) {
      backend.LinearActivate(x, w_up, b_up, Activation::kRelu, &h);
      backend.Linear(h, w_down, b_down, &y);
    } else {
      backend.GatherLinear(x, w_up, b_up, id_tensor, 1, true, Activation::kRelu,
                           &h);
      backend.GatherLinearT(h, w_down_t, b_down, id_tensor, &y);
    }
    benchmark::DoNotOptimize(y.data<float>());
  }
  const double bytes = 2.0 * k * d * 2;
  state.counters["GB/s"] = benchmark::Counter(bytes * state.iterations(),
                                              benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
  state.counters["k"] = static_cast<double>(k);
}
BENCHMARK(BM_Mlp)
    ->ArgsProduct({{2048}, {8192}, {100, 250, 500, 1000}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace dynsparse

BENCHMARK_MAIN();
