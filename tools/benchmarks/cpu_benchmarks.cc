// CPU benchmarks: the decode GEMV (the memory-bound kernel of batch-1
// decoding) and one whole decode step, each reporting bytes of weights read
// per second next to a measured copy bandwidth of the same machine; and
// LazyLLM's choice from n probe scores on the host (TopCountIndices), the
// time a CUDA decode step waits when the device does not choose.
//
//   build/tools/benchmarks/cpu_benchmarks --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/graph/session.h"
#include "core/graph/top_count.h"
#include "core/io/model_loader.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "methods/dense/dense.h"

namespace dynsparse {
namespace {

// Bytes read + written by a large memcpy: the ceiling for streaming kernels.
void BM_CopyBandwidth(benchmark::State& state) {
  const size_t bytes = size_t{256} << 20;
  std::vector<char> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * bytes * state.iterations(),
                                              benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CopyBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();

Tensor RandomMatrix(int64_t rows, int64_t cols, DType dtype) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> values(rows * cols);
  for (float& v : values) v = dist(rng);
  return Tensor::FromF32(values, {rows, cols}, dtype);
}

// A quarter of n softmax-like scores (keep=0.25 in a late decode step).
void BM_TopCountIndices(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::mt19937 rng(2);
  std::normal_distribution<float> dist;
  std::vector<float> scores(static_cast<size_t>(n));
  double total = 0;
  for (float& s : scores) total += (s = std::exp(4.f * dist(rng)));
  for (float& s : scores) s = static_cast<float>(s / total);
  for (auto _ : state) {
    std::vector<int32_t> top = TopCountIndices(scores, n / 4);
    benchmark::DoNotOptimize(top.data());
  }
}
BENCHMARK(BM_TopCountIndices)
    ->Arg(4096)
    ->Arg(8192)
    ->Arg(16384)
    ->Arg(65536)
    ->Unit(benchmark::kMicrosecond);

// y = W x for a [rows, cols] weight; args: rows, cols, dtype.
void BM_Gemv(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const DType dtype = static_cast<DType>(state.range(2));
  const Tensor w = RandomMatrix(rows, cols, dtype);
  std::vector<float> x(cols, 0.5f), y(rows);
  for (auto _ : state) {
    cpu::Gemv(w, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(DTypeName(dtype));
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(w.bytes()) * state.iterations(),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Gemv)
    ->ArgsProduct({{4096},
                   {4096},
                   {static_cast<int>(DType::kF32),
                    static_cast<int>(DType::kBF16),
                    static_cast<int>(DType::kF16)}})
    ->Args({11008, 4096, static_cast<int>(DType::kBF16)})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

int64_t WeightBytes(const ModelWeights& w) {
  int64_t total = w.lm_head.bytes();
  for (const LayerWeights& l : w.layers) {
    for (const Tensor* t :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_up, &l.w_gate, &l.w_down}) {
      if (!t->empty()) total += t->bytes();
    }
  }
  return total;
}

// One decode step after a 128-token prompt.
void DecodeStep(benchmark::State& state, const ModelConfig& config,
                const ModelWeights& weights) {
  CpuBackend backend;
  DenseMethod dense;
  const int64_t prompt = 128;
  Session session(config, weights, backend, dense, prompt + 1);
  std::vector<int32_t> ids(prompt);
  std::iota(ids.begin(), ids.end(), 1);
  for (auto _ : state) {
    state.PauseTiming();
    session.Reset();
    (void)session.Forward(ids, prompt - 1);
    state.ResumeTiming();
    const int32_t next = 7;
    auto logits = session.Forward(absl::MakeConstSpan(&next, 1), 0);
    benchmark::DoNotOptimize(logits);
  }
  state.counters["weight_GB/s"] = benchmark::Counter(
      static_cast<double>(WeightBytes(weights)) * state.iterations(),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// The README's default fixture model (tiny: launch-bound, not bandwidth-bound).
void BM_DecodeStepFixtureModel(benchmark::State& state) {
  const std::string path = std::string(DYNSPARSE_SOURCE_DIR) +
                           "/tests/fixtures/models/tiny-llama-chat";
  auto model = LoadModel(path, LoadOptions{});
  if (!model.ok()) {
    state.SkipWithError(std::string(model.status().message()).c_str());
    return;
  }
  DecodeStep(state, model->config, model->weights);
}
BENCHMARK(BM_DecodeStepFixtureModel)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A 0.2B-parameter Llama shape in bf16: large enough to stream from DRAM.
void BM_DecodeStepLlama200M(benchmark::State& state) {
  const ModelConfig c = LlamaConfigFromShape({.vocab_size = 32000,
                                              .hidden_size = 1024,
                                              .intermediate_size = 2816,
                                              .num_layers = 12,
                                              .num_heads = 16,
                                              .num_kv_heads = 4});
  static const ModelWeights* const kWeights =
      new ModelWeights(RandomWeights(c, 1, DType::kBF16));
  DecodeStep(state, c, *kWeights);
}
BENCHMARK(BM_DecodeStepLlama200M)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace dynsparse

BENCHMARK_MAIN();
