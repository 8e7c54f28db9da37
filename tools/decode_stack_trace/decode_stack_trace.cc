// Where a step of the persistent decode kernel (kernels/cuda/decode_stack.h)
// spends its time. Runs the kernel on random weights of a preset's shape with
// its timeline on (every block stamps %globaltimer at each phase event) and
// prints, per event, the time since the layer began: min / median / max over
// the blocks, each the median over the middle layers. The gaps name the
// costs: loading x, streaming a phase's rows, the spread of blocks reaching
// a grid barrier, the barrier itself (last arrival to first release), the
// attention. It also times steps with and without the timeline.
//   dynsparse_decode_stack_trace [--model llama-2-7b] [--prompt 128]
//                                [--steps 20]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/graph/rope.h"
#include "core/model_presets.h"
#include "kernels/cuda/decode_stack.h"
#include "kernels/cuda/device_weights.h"
#include "kernels/cuda/rope.h"

namespace dynsparse::cuda {
namespace {

constexpr const char* kEventNames[kDecodeStackEvents] = {
    "layer begins",         "q/k/v input loaded", "q/k/v rows done",
    "q/k/v barrier passed", "o input loaded",     "o rows done",
    "o barrier passed",     "up input loaded",    "up rows done",
    "up barrier passed",    "down input loaded",  "down rows done",
    "down barrier passed",  "attention done",     "attention barrier passed"};

// The events in time order within a layer.
constexpr int kOrder[kDecodeStackEvents] = {0, 1, 2, 3, 13, 14, 4, 5,
                                            6, 7, 8, 9, 10, 11, 12};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

#define TRACE_CHECK(expr)                                             \
  do {                                                                \
    const auto& s_ = (expr);                                          \
    if (!s_.ok()) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #expr, s_.ToString().c_str()); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

#define CUDA_TRACE_CHECK(expr)                                         \
  do {                                                                 \
    const cudaError_t e_ = (expr);                                     \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

int Run(int argc, char** argv) {
  std::string model = "llama-2-7b";
  int64_t prompt = 128, steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) {
      model = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--prompt")) {
      prompt = std::atoll(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--steps")) {
      steps = std::atoll(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  auto config = FindModelPreset(model);
  TRACE_CHECK(config.status());
  auto ctx = DeviceContext::Create();
  TRACE_CHECK(ctx.status());
  DeviceContext& c = **ctx;
  auto weights = DeviceRandomWeights(c, *config, 1, DType::kF16);
  TRACE_CHECK(weights.status());
  const int64_t layers = config->num_layers, capacity = prompt + 8;
  const DecodeStackShape shape =
      DecodeStackShapeOf(*config, DType::kF16, capacity);
  const std::string why = DecodeStackUnsupported(c, shape, layers);
  if (!why.empty()) {
    std::fprintf(stderr, "the decode stack does not run %s: %s\n",
                 model.c_str(), why.c_str());
    return 1;
  }
  const int64_t kv_dim = shape.kv_heads * shape.head_dim;
  std::vector<Tensor> caches;
  std::vector<DecodeStackLayer> table;
  for (int64_t l = 0; l < layers; ++l) {
    for (int i = 0; i < 2; ++i) {
      auto t = AllocateDevice(c, DType::kF32, {capacity, kv_dim});
      TRACE_CHECK(t.status());
      caches.push_back(*std::move(t));
    }
    table.push_back(DecodeStackEntry(weights->layers[l],
                                     caches[2 * l].data<float>(),
                                     caches[2 * l + 1].data<float>()));
  }
  const RopeTable rope = MakeRopeTable(*config);
  Tensor inv_freq;
  if (rope.enabled()) {
    auto f = UploadRopeInvFreq(c, rope);
    TRACE_CHECK(f.status());
    inv_freq = *std::move(f);
  }
  Tensor x0 = Tensor::Zeros(DType::kF32, {shape.hidden});
  for (int64_t i = 0; i < shape.hidden; ++i) {
    x0.data<float>()[i] = static_cast<float>((i * 37 % 101) - 50) / 50.0f;
  }
  auto x_start = ToDevice(c, x0);
  auto x = AllocateDevice(c, DType::kF32, {shape.hidden});
  auto scratch =
      AllocateDevice(c, DType::kF32, {DecodeStackScratchFloats(shape)});
  auto barrier = AllocateDevice(c, DType::kF32, {kDecodeStackBarrierWords});
  TRACE_CHECK(x_start.status());
  TRACE_CHECK(x.status());
  TRACE_CHECK(scratch.status());
  TRACE_CHECK(barrier.status());
  int32_t* position = nullptr;
  uint64_t* timeline = nullptr;
  const int grid = c.sm_count();
  const size_t stamps = static_cast<size_t>(layers) * kDecodeStackEvents * grid;
  CUDA_TRACE_CHECK(cudaMalloc(&position, sizeof(int32_t)));
  CUDA_TRACE_CHECK(cudaMalloc(&timeline, stamps * sizeof(uint64_t)));
  const int32_t at = static_cast<int32_t>(prompt);
  CUDA_TRACE_CHECK(
      cudaMemcpy(position, &at, sizeof(at), cudaMemcpyHostToDevice));

  cudaEvent_t begin, end;
  CUDA_TRACE_CHECK(cudaEventCreate(&begin));
  CUDA_TRACE_CHECK(cudaEventCreate(&end));
  std::vector<double> plain_ms, traced_ms;
  for (int64_t s = 0; s < 2 * steps; ++s) {
    const bool traced = s % 2 == 1;
    TRACE_CHECK(CopyDeviceToDevice(c, *x_start, &*x));
    CUDA_TRACE_CHECK(cudaEventRecord(begin, c.stream()));
    TRACE_CHECK(DecodeStack(c, shape, table, position,
                            inv_freq.empty() ? nullptr : inv_freq.data<float>(),
                            x->data<float>(), scratch->data<float>(),
                            static_cast<unsigned*>(barrier->raw_data()),
                            traced ? timeline : nullptr));
    CUDA_TRACE_CHECK(cudaEventRecord(end, c.stream()));
    CUDA_TRACE_CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CUDA_TRACE_CHECK(cudaEventElapsedTime(&ms, begin, end));
    if (s >= 2) (traced ? traced_ms : plain_ms).push_back(ms);
  }
  std::vector<uint64_t> t(stamps);
  CUDA_TRACE_CHECK(cudaMemcpy(t.data(), timeline, stamps * sizeof(uint64_t),
                              cudaMemcpyDeviceToHost));
  auto stamp = [&](int64_t l, int e, int b) {
    return static_cast<double>(
        t[(static_cast<size_t>(l) * kDecodeStackEvents + e) * grid + b]);
  };

  // Per event: min / median / max over blocks of (stamp - layer begin), the
  // layer beginning when its first block begins; medians over the middle
  // layers (the first and last stream differently).
  const int64_t first = std::min<int64_t>(2, layers - 1);
  const int64_t last = std::max<int64_t>(first + 1, layers - 2);
  std::vector<std::vector<double>> lo(kDecodeStackEvents),
      mid(kDecodeStackEvents), hi(kDecodeStackEvents);
  std::vector<double> layer_us;
  for (int64_t l = first; l < last; ++l) {
    double base = stamp(l, 0, 0), next = stamp(l + 1, 0, 0);
    for (int b = 1; b < grid; ++b) {
      base = std::min(base, stamp(l, 0, b));
      next = std::min(next, stamp(l + 1, 0, b));
    }
    layer_us.push_back((next - base) / 1e3);
    for (int e = 0; e < kDecodeStackEvents; ++e) {
      std::vector<double> v(grid);
      for (int b = 0; b < grid; ++b) v[b] = (stamp(l, e, b) - base) / 1e3;
      std::sort(v.begin(), v.end());
      lo[e].push_back(v.front());
      mid[e].push_back(v[v.size() / 2]);
      hi[e].push_back(v.back());
    }
  }
  std::printf("# decode stack timeline: %s, f16, position %lld, %d blocks\n\n",
              model.c_str(), static_cast<long long>(prompt), grid);
  std::printf("step: %.3f ms (timeline off), %.3f ms (on); medians of %zu\n",
              Median(plain_ms), Median(traced_ms), plain_ms.size());
  std::printf("layer (layers %lld-%lld): %.2f us median\n\n",
              static_cast<long long>(first), static_cast<long long>(last - 1),
              Median(layer_us));
  std::printf(
      "| event | first block us | median block us | last block us |\n"
      "|---|---|---|---|\n");
  for (int e : kOrder) {
    std::printf("| %s | %.2f | %.2f | %.2f |\n", kEventNames[e], Median(lo[e]),
                Median(mid[e]), Median(hi[e]));
  }
  return 0;
}

}  // namespace
}  // namespace dynsparse::cuda

int main(int argc, char** argv) { return dynsparse::cuda::Run(argc, argv); }
