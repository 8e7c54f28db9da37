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
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/graph/rope.h"
#include "core/model_presets.h"
#include "core/status_macros.h"
#include "kernels/cuda/decode_stack.h"
#include "kernels/cuda/device_context.h"
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

struct Options {
  std::string model = "llama-2-7b";
  int64_t prompt = 128;
  int64_t steps = 20;
};

absl::StatusOr<Options> ParseFlags(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return absl::InvalidArgumentError(argv[i]);
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model") {
      o.model = value;
    } else if (flag == "--prompt") {
      o.prompt = std::atoll(value.c_str());
    } else if (flag == "--steps") {
      o.steps = std::atoll(value.c_str());
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
    }
  }
  if (o.prompt < 1 || o.steps < 2) {
    return absl::InvalidArgumentError("--prompt >= 1 and --steps >= 2");
  }
  return o;
}

// Per event: min / median / max over blocks of (stamp - layer begin), the
// layer beginning when its first block begins; medians over the middle
// layers (the first and last stream differently).
void PrintTimeline(const std::vector<uint64_t>& t, int64_t layers, int grid) {
  auto stamp = [&](int64_t l, int e, int b) {
    return static_cast<double>(
        t[(static_cast<size_t>(l) * kDecodeStackEvents + e) * grid + b]);
  };
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
}

absl::Status Trace(const Options& o) {
  ASSIGN_OR_RETURN(const ModelConfig config, FindModelPreset(o.model));
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceContext> ctx, DeviceContext::Create());
  DeviceContext& c = *ctx;
  ASSIGN_OR_RETURN(ModelWeights weights,
                   DeviceRandomWeights(c, config, 1, DType::kF16));
  const int64_t layers = config.num_layers, capacity = o.prompt + 8;
  const DecodeStackShape shape =
      DecodeStackShapeOf(config, DType::kF16, capacity);
  const std::string why = DecodeStackUnsupported(c, shape, layers);
  if (!why.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the decode stack does not run ", o.model, ": ", why));
  }
  const int64_t kv_dim = shape.kv_heads * shape.head_dim;
  std::vector<Tensor> caches;
  std::vector<DecodeStackLayer> table;
  for (int64_t l = 0; l < layers; ++l) {
    for (int i = 0; i < 2; ++i) {
      ASSIGN_OR_RETURN(Tensor cache,
                       AllocateDevice(c, DType::kF32, {capacity, kv_dim}));
      caches.push_back(std::move(cache));
    }
    table.push_back(DecodeStackEntry(weights.layers[l],
                                     caches[2 * l].data<float>(),
                                     caches[2 * l + 1].data<float>()));
  }
  const RopeTable rope = MakeRopeTable(config);
  Tensor inv_freq;
  if (rope.enabled()) {
    ASSIGN_OR_RETURN(inv_freq, UploadRopeInvFreq(c, rope));
  }
  Tensor x0 = Tensor::Zeros(DType::kF32, {shape.hidden});
  for (int64_t i = 0; i < shape.hidden; ++i) {
    x0.data<float>()[i] = static_cast<float>((i * 37 % 101) - 50) / 50.0f;
  }
  const int grid = c.sm_count();
  const int64_t stamps = layers * kDecodeStackEvents * grid;
  ASSIGN_OR_RETURN(Tensor x_start, ToDevice(c, x0));
  ASSIGN_OR_RETURN(Tensor x, AllocateDevice(c, DType::kF32, {shape.hidden}));
  ASSIGN_OR_RETURN(
      Tensor scratch,
      AllocateDevice(c, DType::kF32, {DecodeStackScratchFloats(shape)}));
  ASSIGN_OR_RETURN(Tensor barrier,
                   AllocateDevice(c, DType::kI32, {kDecodeStackBarrierWords}));
  ASSIGN_OR_RETURN(
      Tensor position,
      ToDevice(c, Tensor::FromI32({static_cast<int32_t>(o.prompt)}, {1})));
  // u64 stamps in an i32 tensor of twice the length (cudaMalloc aligns it).
  ASSIGN_OR_RETURN(Tensor timeline,
                   AllocateDevice(c, DType::kI32, {2 * stamps}));
  auto* timeline_words = static_cast<uint64_t*>(timeline.raw_data());

  cudaEvent_t begin, end;
  DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&begin));
  DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&end));
  std::vector<double> plain_ms, traced_ms;
  for (int64_t s = 0; s < 2 * o.steps; ++s) {
    const bool traced = s % 2 == 1;
    RETURN_IF_ERROR(CopyDeviceToDevice(c, x_start, &x));
    DS_CUDA_RETURN_IF_ERROR(cudaEventRecord(begin, c.stream()));
    RETURN_IF_ERROR(DecodeStack(
        c, shape, table, position.data<int32_t>(),
        inv_freq.empty() ? nullptr : inv_freq.data<float>(), x.data<float>(),
        scratch.data<float>(), static_cast<unsigned*>(barrier.raw_data()),
        traced ? timeline_words : nullptr));
    DS_CUDA_RETURN_IF_ERROR(cudaEventRecord(end, c.stream()));
    DS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(end));
    float ms = 0;
    DS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, begin, end));
    if (s >= 2) (traced ? traced_ms : plain_ms).push_back(ms);
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  std::vector<uint64_t> t(static_cast<size_t>(stamps));
  DS_CUDA_RETURN_IF_ERROR(cudaMemcpy(t.data(), timeline_words,
                                     t.size() * sizeof(uint64_t),
                                     cudaMemcpyDeviceToHost));
  std::printf("# decode stack timeline: %s, f16, position %lld, %d blocks\n\n",
              o.model.c_str(), static_cast<long long>(o.prompt), grid);
  std::printf("step: %.3f ms (timeline off), %.3f ms (on); medians of %zu\n",
              Median(plain_ms), Median(traced_ms), plain_ms.size());
  PrintTimeline(t, layers, grid);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dynsparse::cuda

int main(int argc, char** argv) {
  auto options = dynsparse::cuda::ParseFlags(argc, argv);
  absl::Status s =
      options.ok() ? dynsparse::cuda::Trace(*options) : options.status();
  if (!s.ok()) {
    std::fprintf(stderr, "dynsparse_decode_stack_trace: %s\n",
                 s.ToString().c_str());
    return 1;
  }
  return 0;
}
