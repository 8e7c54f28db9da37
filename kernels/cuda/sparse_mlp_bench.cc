// Sparse MLP kernel benchmark (issue 6, "what it must show" 3): DejaVu's MLP
// at batch 1 (gather GEMV over the kept rows of W1 (+ gate) with fused bias
// and activation, then the transposed-W2 gather GEMV) against our dense
// 2-GEMV MLP, each replayed from a CUDA graph, on OPT / Llama MLP shapes.
// Prints one JSON object per line: time per MLP (Backend::GatherMlp: one
// launch where the fused kernel applies; as the two gathers, `unfused_ms`;
// and each gather timed alone), bytes read, GB/s, % of the device-to-device
// copy bandwidth measured in the same process, speedup;
// then the predictors with their TopK, and the down projection over a
// transposed W2 (every unit) against the dense one.
// Weights are rotated over enough copies (> 1 GB) that L2 never holds them.
//   dynsparse_sparse_mlp_bench [--iters N] [--shape NAME ...] [--timeline]
//                              [--cluster 0|4|8|12|16]
// (--shape OPT-66B etc.: only those MLP shapes, no predictor or down-of-all
// timings; for quick A/B runs. --timeline: after each MLP's line, one
// {"timeline": ...} line from the fused kernel's event times,
// sparse_mlp_timeline.h. --cluster: the fused kernel's cluster size, as
// DYNSPARSE_CUDA_MLP_CLUSTER; each line names the size, splits and grid
// (one block an SM or two) it ran.)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/sparse_mlp.h"
#include "kernels/cuda/sparse_mlp_timeline.h"

namespace dynsparse::cuda {
namespace {

struct Shape2 {
  const char* name;
  int64_t d, inter;
  bool gated;
};

constexpr Shape2 kShapes[] = {
    {"OPT-66B", 9216, 36864, false},   {"OPT-175B", 12288, 49152, false},
    {"OPT-13B", 5120, 20480, false},   {"OPT-30B", 7168, 28672, false},
    {"Llama-2-7B", 4096, 11008, true},
};

bool IsShapeName(const std::string& name) {
  for (const Shape2& s : kShapes) {
    if (name == s.name) return true;
  }
  return false;
}

#define BENCH_CHECK(expr)                                             \
  do {                                                                \
    const auto& s_ = (expr);                                          \
    if (!s_.ok()) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #expr, s_.ToString().c_str()); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

Tensor Device(CudaBackend& b, DType dt, Shape shape) {
  auto t = AllocateDevice(b.context(), dt, std::move(shape));
  BENCH_CHECK(t.status());
  BENCH_CHECK(FillBytes(b.context(), 0x21, &*t));
  return *t;
}

// Median ms of one call of `body` over `iters` graph launches, each graph
// holding `per_graph` calls (launch overhead amortised as in a decode step).
template <typename F>
double TimeGraph(CudaBackend& b, int per_graph, int iters, F&& body) {
  cudaStream_t s = b.context().stream();
  for (int i = 0; i < per_graph; ++i) body(i);  // Eager warm-up (pool growth).
  BENCH_CHECK(b.context().Synchronize());
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
  for (int i = 0; i < per_graph; ++i) body(i);
  cudaStreamEndCapture(s, &graph);
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) std::exit(2);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> ms;
  cudaGraphLaunch(exec, s);
  for (int it = 0; it < iters; ++it) {
    cudaEventRecord(e0, s);
    cudaGraphLaunch(exec, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    ms.push_back(t / per_graph);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One {"timeline": ...} line: the fused kernel's event times
// (sparse_mlp_timeline.h) from the second replay of a graph of `per_graph`
// launches over the weight copies, as the MLP line above times them.
template <typename Copy>
void Timeline(CudaBackend& b, const Shape2& sh, double keep,
              const std::vector<Copy>& c, const Tensor& x, Activation act,
              const FusedSparseMlpLaunch& launch, int per_graph) {
  DeviceContext& ctx = b.context();
  const int64_t d = sh.d, k = c[0].ids.dim(1);
  const int splits = launch.splits;
  const FusedSparseMlpGrid& grid = launch.grid;
  if (splits == 0) {
    std::fprintf(stderr, "%s: no fused kernel, no timeline\n", sh.name);
    return;
  }
  const int blocks = splits * grid.cluster;
  const int64_t per_call = int64_t{blocks} * kFusedMlpStamps;
  // 64-bit stamps in an i32 tensor of twice the length.
  const Tensor stamps = Device(b, DType::kI32, {2 * per_graph * per_call});
  auto* stamp_data = static_cast<uint64_t*>(stamps.raw_data());
  Tensor scratch = b.Allocate(DType::kF32, {splits * d});
  Tensor y = b.Allocate(DType::kF32, {1, d});
  const Tensor empty;
  TimeGraph(b, per_graph, /*iters=*/1, [&](int i) {
    const Copy& w = c[i % c.size()];
    BENCH_CHECK(FusedSparseMlp(
        ctx, x, w.w_up, w.b_up, sh.gated ? &w.w_gate : nullptr,
        sh.gated ? &empty : nullptr, w.w_down_t, w.b_down,
        w.ids.template data<int32_t>(), k, act, launch, scratch.data<float>(),
        b.FusedMlpCounters(), &y, stamp_data + i * per_call));
  });
  std::vector<uint64_t> host(per_graph * per_call);
  BENCH_CHECK(ctx.Synchronize());
  if (cudaMemcpy(host.data(), stamp_data, host.size() * sizeof(uint64_t),
                 cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::exit(2);
  }
  auto timed = SummarizeFusedMlpTimeline(host, per_graph, blocks);
  BENCH_CHECK(timed.status());
  std::printf("%s\n",
              FusedMlpTimelineJson(
                  *timed, absl::StrFormat("%s keep %.2f", sh.name, keep))
                  .c_str());
}

void Run(CudaBackend& b, CudaBackend& unfused, const Shape2& sh, double keep,
         double copy_gbps, int iters, bool timeline) {
  const int64_t d = sh.d, inter = sh.inter;
  const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(keep * inter));
  const int64_t dense_bytes = (sh.gated ? 3 : 2) * d * inter * 2;
  const int copies = static_cast<int>(
      std::clamp<int64_t>((int64_t{2} << 30) / dense_bytes + 1, 2, 16));
  std::mt19937 rng(7);
  struct Copy {
    Tensor up_gate, w_up, w_gate, b_up, w_down, w_down_t, b_down, ids;
  };
  std::vector<Copy> c(copies);
  for (Copy& w : c) {
    w.up_gate = Device(b, DType::kF16, {(sh.gated ? 2 : 1) * inter, d});
    w.w_up = w.up_gate.Rows(0, inter);
    if (sh.gated) w.w_gate = w.up_gate.Rows(inter, 2 * inter);
    if (!sh.gated) w.b_up = Device(b, DType::kF16, {inter});
    w.w_down = Device(b, DType::kF16, {d, inter});
    w.w_down_t = Device(b, DType::kF16, {inter, d});
    if (!sh.gated) w.b_down = Device(b, DType::kF16, {d});
    std::vector<int32_t> all(inter);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::sort(all.begin(), all.begin() + k);
    all.resize(k);
    auto ids = b.Upload(Tensor::FromI32(all, {1, k}));
    BENCH_CHECK(ids.status());
    w.ids = *ids;
  }
  const Tensor x = Device(b, DType::kF32, {1, d});
  const Activation act = sh.gated ? Activation::kSilu : Activation::kRelu;
  // The grid GatherMlp runs (cluster 0 where the kernel does not apply).
  FusedSparseMlpLaunch launch = b.FusedMlpLaunch(
      x, c[0].w_up, sh.gated ? &c[0].w_gate : nullptr, c[0].w_down_t, k, act);
  launch.early_copies = b.EarlyMlpCopies(c[0].ids);  // As GatherMlp runs it.
  Tensor h = b.Allocate(DType::kF32, {1, k});
  Tensor y = b.Allocate(DType::kF32, {1, d});
  Tensor up = b.Allocate(DType::kF32, {2 * inter});
  const int per_graph = 4 * copies;
  // Backend::GatherMlp: one launch (+ the split reduction) where the fused
  // kernel applies, else the two gathers; `unfused` always runs the two.
  auto mlp = [&](CudaBackend& be, int i) {
    const Copy& w = c[i % copies];
    const Tensor empty;
    be.GatherMlp(x, w.w_up, w.b_up, sh.gated ? &w.w_gate : nullptr,
                 sh.gated ? &empty : nullptr, w.w_down_t, w.b_down, w.ids, act,
                 &h, &y);
  };
  const double sparse_ms =
      TimeGraph(b, per_graph, iters, [&](int i) { mlp(b, i); });
  const double unfused_ms =
      TimeGraph(unfused, per_graph, iters, [&](int i) { mlp(unfused, i); });
  // Each half alone (back to back in the graph), to see where the time goes.
  const double up_ms = TimeGraph(b, per_graph, iters, [&](int i) {
    const Copy& w = c[i % copies];
    if (sh.gated) {
      b.GatherGatedLinear(x, w.w_up, w.w_gate, Tensor(), Tensor(), w.ids, act,
                          &h);
    } else {
      b.GatherLinear(x, w.w_up, w.b_up, w.ids, 1, true, act, &h);
    }
  });
  const double down_ms = TimeGraph(b, per_graph, iters, [&](int i) {
    const Copy& w = c[i % copies];
    b.GatherLinearT(h, w.w_down_t, w.b_down, w.ids, &y);
  });
  const double dense_ms = TimeGraph(b, per_graph, iters, [&](int i) {
    const Copy& w = c[i % copies];
    Tensor uu = up.Rows(0, inter).Reshape({1, inter});
    if (sh.gated) {
      Tensor gg = up.Rows(inter, 2 * inter).Reshape({1, inter});
      b.GatedMlp(x, w.w_up, w.w_gate, Tensor(), Tensor(), act, w.w_down,
                 Tensor(), &uu, &gg, &y);
    } else {
      b.LinearActivate(x, w.w_up, w.b_up, act, &uu);
      b.Linear(uu, w.w_down, w.b_down, &y);
    }
  });
  const double sparse_bytes = (sh.gated ? 3.0 : 2.0) * k * d * 2;
  const double sparse_gbps = sparse_bytes / (sparse_ms * 1e-3) / 1e9;
  const double dense_gbps = dense_bytes / (dense_ms * 1e-3) / 1e9;
  std::printf(
      "{\"shape\": \"%s\", \"d\": %lld, \"inter\": %lld, \"gated\": %s, "
      "\"keep\": %.3f, \"k\": %lld, \"sparse_ms\": %.5f, \"sparse_bytes\": "
      "%.0f, \"sparse_gbps\": %.1f, \"sparse_pct_copy\": %.1f, "
      "\"dense_ms\": %.5f, \"dense_bytes\": %lld, \"dense_gbps\": %.1f, "
      "\"dense_pct_copy\": %.1f, \"speedup\": %.2f, \"ideal_speedup\": "
      "%.2f, \"copy_gbps\": %.1f, \"weight_copies\": %d, \"up_ms\": %.5f, "
      "\"down_ms\": %.5f, \"unfused_ms\": %.5f, \"mlp_cluster\": %d, "
      "\"mlp_splits\": %d, \"mlp_one_block_an_sm\": %s}\n",
      sh.name, static_cast<long long>(d), static_cast<long long>(inter),
      sh.gated ? "true" : "false", keep, static_cast<long long>(k), sparse_ms,
      sparse_bytes, sparse_gbps, 100.0 * sparse_gbps / copy_gbps, dense_ms,
      static_cast<long long>(dense_bytes), dense_gbps,
      100.0 * dense_gbps / copy_gbps, dense_ms / sparse_ms,
      dense_bytes / sparse_bytes, copy_gbps, copies, up_ms, down_ms, unfused_ms,
      launch.grid.cluster, launch.splits,
      launch.grid.one_block_an_sm ? "true" : "false");
  if (timeline) Timeline(b, sh, keep, c, x, act, launch, per_graph);
  std::fflush(stdout);
}

// The down projection of a dense layer whose W2 was transposed in place
// (SparseBlocks::DownOfAll: every unit, ids null) against our dense GEMV /
// GEMM over W2, for `rows` rows of activations (1: decode; more: prefill).
void RunDownOfAll(CudaBackend& b, int64_t d, int64_t inter, int64_t rows,
                  double copy_gbps, int iters) {
  const int64_t bytes = d * inter * 2;
  const int copies = static_cast<int>(
      std::clamp<int64_t>((int64_t{2} << 30) / bytes + 1, 2, 16));
  std::vector<Tensor> w, w_t;
  for (int i = 0; i < copies; ++i) {
    w.push_back(Device(b, DType::kF16, {d, inter}));
    w_t.push_back(Device(b, DType::kF16, {inter, d}));
  }
  const Tensor x = Device(b, DType::kF32, {rows, inter});
  Tensor y = b.Allocate(DType::kF32, {rows, d});
  const int per_graph = rows == 1 ? 4 * copies : copies;
  const double t_ms = TimeGraph(b, per_graph, iters, [&](int i) {
    b.GatherLinearT(x, w_t[i % copies], Tensor(), Tensor(), &y);
  });
  const double dense_ms = TimeGraph(b, per_graph, iters, [&](int i) {
    b.Linear(x, w[i % copies], Tensor(), &y);
  });
  std::printf(
      "{\"down_of_all\": true, \"d\": %lld, \"inter\": %lld, \"rows\": "
      "%lld, \"transposed_ms\": %.5f, \"transposed_pct_copy\": %.1f, "
      "\"dense_ms\": %.5f, \"dense_pct_copy\": %.1f}\n",
      static_cast<long long>(d), static_cast<long long>(inter),
      static_cast<long long>(rows), t_ms,
      100.0 * bytes / (t_ms * 1e-3) / 1e9 / copy_gbps, dense_ms,
      100.0 * bytes / (dense_ms * 1e-3) / 1e9 / copy_gbps);
  std::fflush(stdout);
}

// The predictor of one OPT-66B layer (D = 1000 rank, f16) and its TopK.
void RunPredictor(CudaBackend& b, int64_t d, int64_t units, int64_t rank,
                  double keep, double copy_gbps, int iters) {
  const int64_t k = static_cast<int64_t>(keep * units);
  const int copies = 8;
  std::vector<Tensor> p1, p2;
  for (int i = 0; i < copies; ++i) {
    p1.push_back(Device(b, DType::kF16, {rank, d}));
    p2.push_back(Device(b, DType::kF16, {units, rank}));
  }
  const Tensor x = Device(b, DType::kF32, {1, d});
  Tensor low = b.Allocate(DType::kF32, {1, rank});
  Tensor scores = b.Allocate(DType::kF32, {1, units});
  // Distinct scores so TopK does real work.
  std::vector<float> v(units);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (float& f : v) f = dist(rng);
  auto s0 = b.Upload(Tensor::FromF32(v, {1, units}));
  BENCH_CHECK(s0.status());
  Tensor ids = b.Allocate(DType::kI32, {1, k});
  const double gemv_ms = TimeGraph(b, 4 * copies, iters, [&](int i) {
    b.Linear(x, p1[i % copies], Tensor(), &low);
    b.Linear(low, p2[i % copies], Tensor(), &scores);
  });
  const double topk_ms =
      TimeGraph(b, 32, iters, [&](int) { b.TopK(*s0, k, &ids); });
  const double bytes = 2.0 * rank * (d + units);
  std::printf(
      "{\"predictor\": true, \"d\": %lld, \"units\": %lld, \"rank\": %lld, "
      "\"k\": %lld, \"gemvs_ms\": %.5f, \"gemvs_pct_copy\": %.1f, "
      "\"topk_ms\": %.5f}\n",
      static_cast<long long>(d), static_cast<long long>(units),
      static_cast<long long>(rank), static_cast<long long>(k), gemv_ms,
      100.0 * bytes / (gemv_ms * 1e-3) / 1e9 / copy_gbps, topk_ms);
  std::fflush(stdout);
}

}  // namespace
}  // namespace dynsparse::cuda

int main(int argc, char** argv) {
  using namespace dynsparse::cuda;
  int iters = 20;
  int cluster = static_cast<int>(CudaBackendOptions().fused_sparse_mlp_cluster);
  std::vector<std::string> only;  // --shape: see the top comment.
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--cluster") == 0) {
      cluster = std::atoi(argv[i + 1]);
    }
    if (std::strcmp(argv[i], "--shape") == 0) only.push_back(argv[i + 1]);
  }
  const bool timeline = std::find_if(argv + 1, argv + argc, [](const char* a) {
                          return std::strcmp(a, "--timeline") == 0;
                        }) != argv + argc;
  for (const std::string& name : only) {
    if (!IsShapeName(name)) {
      std::fprintf(stderr, "--shape '%s': unknown (valid:", name.c_str());
      for (const Shape2& s : kShapes) std::fprintf(stderr, " %s", s.name);
      std::fprintf(stderr, ")\n");
      return 2;
    }
  }
  if (cluster != 0 && !IsFusedSparseMlpClusterSize(cluster)) {
    std::fprintf(stderr, "--cluster %d: 0, 4, 8, 12 or 16\n", cluster);
    return 2;
  }
  // Every MLP that the one-launch kernel applies to takes it here (option
  // 2), so its time is measured on every shape.
  CudaBackendOptions fused_options;
  fused_options.fused_sparse_mlp = 2;
  fused_options.fused_sparse_mlp_cluster = cluster;
  auto backend = CudaBackend::Create(fused_options);
  if (!backend.ok()) {
    std::fprintf(stderr, "no CUDA backend: %s\n",
                 backend.status().ToString().c_str());
    return 1;
  }
  CudaBackend& b = **backend;
  auto bw = b.MeasureCopyBandwidth(int64_t{1} << 30);
  BENCH_CHECK(bw.status());
  std::fprintf(stderr, "%s, copy bandwidth %.0f GB/s\n",
               b.context().info().DebugString().c_str(), *bw);
  CudaBackendOptions unfused_options;
  unfused_options.fused_sparse_mlp = 0;
  auto unfused = CudaBackend::Create(unfused_options);
  if (!unfused.ok()) {
    std::fprintf(stderr, "no CUDA backend: %s\n",
                 unfused.status().ToString().c_str());
    return 1;
  }
  for (const Shape2& s : kShapes) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), s.name) == only.end()) {
      continue;
    }
    for (double keep : {0.1, 0.25}) {
      Run(b, **unfused, s, keep, *bw, iters, timeline);
    }
  }
  if (!only.empty()) return 0;
  RunPredictor(b, 9216, 36864, 1000, 0.1, *bw, iters);
  RunPredictor(b, 9216, 72, 1000, 0.5, *bw, iters);
  RunPredictor(b, 12288, 49152, 1000, 0.1, *bw, iters);
  for (int64_t rows : {1, 128}) RunDownOfAll(b, 9216, 36864, rows, *bw, iters);
  return 0;
}
