// CUDA sparse execution (kernels/cuda/sparse_ops.h) against the CPU backend:
// each op on random inputs, lazy K/V over many steps, and whole sparse
// decodes (graph replays) against masked execution and against the CPU.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "experiments/bench/lowrank_predictor_method.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/sparse_mlp.h"
#include "methods/method_args.h"
#include "methods/registry.h"

namespace dynsparse::cuda {
namespace {

class SparseOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = CudaBackend::Create();
    if (!b.ok()) GTEST_SKIP() << "skipping CUDA test: " << b.status().message();
    gpu_ = std::move(*b);
    rng_.seed(std::random_device()());
  }
  Tensor Random(Shape shape, DType dtype = DType::kF32) {
    std::normal_distribution<float> dist(0.f, 1.f);
    std::vector<float> v(NumElements(shape));
    for (float& x : v) x = dist(rng_);
    return Tensor::FromF32(v, std::move(shape), dtype);
  }
  // k distinct sorted ids in [0, units) per row.
  Tensor RandomIds(int64_t rows, int64_t k, int64_t units) {
    std::vector<int32_t> all(units), out;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t u = 0; u < units; ++u) all[u] = static_cast<int32_t>(u);
      std::shuffle(all.begin(), all.end(), rng_);
      std::sort(all.begin(), all.begin() + k);
      out.insert(out.end(), all.begin(), all.begin() + k);
    }
    return Tensor::FromI32(out, {rows, k});
  }
  // A fresh backend whose lazy K/V and head-column kernels compute
  // rows_per_warp rows a warp (0: their automatic choice), with f16 lazy K/V
  // on tensor cores or not.
  void UseSparseKernels(int64_t rows_per_warp, bool lazy_mma = true,
                        int64_t mma_blocks = 0) {
    CudaBackendOptions options;
    options.sparse_rows_per_warp = rows_per_warp;
    options.lazy_kv_tensor_cores = lazy_mma;
    options.lazy_kv_mma_blocks_per_sm = mma_blocks;
    auto b = CudaBackend::Create(options);
    ASSERT_TRUE(b.ok()) << b.status();
    gpu_ = std::move(*b);
  }
  // A fresh backend whose TopK uses a cluster of blocks a row (long rows on
  // sm_90) or one block a row.
  void UseTopKCluster(bool cluster) {
    CudaBackendOptions options;
    options.topk_cluster = cluster;
    auto b = CudaBackend::Create(options);
    ASSERT_TRUE(b.ok()) << b.status();
    gpu_ = std::move(*b);
  }
  Tensor Up(const Tensor& host) {
    auto t = gpu_->Upload(host);
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }
  std::vector<float> Down(const Tensor& t) {
    return gpu_->ToHost(t).ToF32Vector();
  }
  std::vector<int32_t> DownI32(const Tensor& t) {
    EXPECT_TRUE(gpu_->context().Synchronize().ok());
    auto host = ToHost(gpu_->context(), t);
    EXPECT_TRUE(host.ok()) << host.status();
    return std::vector<int32_t>(host->data<int32_t>(),
                                host->data<int32_t>() + host->numel());
  }
  static double RelErr(const std::vector<float>& a,
                       const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      num += (a[i] - b[i]) * double(a[i] - b[i]);
      den += double(b[i]) * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
  }
  // Largest |a - b| over `scale`, element by element: an error measured
  // against the size of each output's terms, which a sum that cancels
  // (random inputs, a few outputs) cannot inflate.
  static double ScaledErr(const std::vector<float>& a,
                          const std::vector<float>& b,
                          const std::vector<float>& scale) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::abs(double{a[i]} - b[i]) /
                                  std::max(double{scale[i]}, 1e-30));
    }
    return worst;
  }
  // Each value rounded to f16 (to nearest, as the kernels' stores round)
  // and back.
  static std::vector<float> RoundedToF16(const std::vector<float>& v) {
    return Tensor::FromF32(v, {static_cast<int64_t>(v.size())}, DType::kF16)
        .ToF32Vector();
  }
  static Tensor Abs(const Tensor& t) {
    std::vector<float> v = t.ToF32Vector();
    for (float& x : v) x = std::abs(x);
    return Tensor::FromF32(v, t.shape());
  }
  // sum_k |w_jk x_k| + |b_j| for each gathered row j: the scale of its f32
  // rounding error.
  std::vector<float> TermScale(const Tensor& x, const Tensor& w,
                               const Tensor& b, const Tensor& ids, int64_t uw) {
    Tensor scale = Tensor::Zeros(DType::kF32, {x.dim(0), ids.dim(1) * uw});
    cpu_.GatherLinear(Abs(x), Abs(w), b.empty() ? b : Abs(b), ids, uw, false,
                      Activation::kRelu, &scale);
    return scale.ToF32Vector();
  }

  std::unique_ptr<CudaBackend> gpu_;
  CpuBackend cpu_{1};
  std::mt19937 rng_;
};

TEST_F(SparseOpsTest, TopKMatchesCpuIncludingTies) {
  for (bool cluster : {true, false}) {
    UseTopKCluster(cluster);
    for (int64_t n : {72, 100, 256, 257, 4095, 5000, 49152, 70000}) {
      for (int64_t k : {int64_t{1}, n / 10, n - 1, n}) {
        Tensor scores = Random({3, n});
        // Coarse values create ties, which go to the lower id.
        for (int64_t i = 0; i < scores.numel(); ++i) {
          scores.data<float>()[i] = std::round(scores.data<float>()[i] * 4) / 4;
        }
        Tensor ref = Tensor::Zeros(DType::kI32, {3, k});
        cpu_.TopK(scores, k, &ref);
        Tensor ids = gpu_->Allocate(DType::kI32, {3, k});
        gpu_->TopK(Up(scores), k, &ids);
        const std::vector<int32_t> host = DownI32(ids);
        for (int64_t i = 0; i < ref.numel(); ++i) {
          ASSERT_EQ(host[i], ref.data<int32_t>()[i])
              << "cluster=" << cluster << " n=" << n << " k=" << k << " at "
              << i;
        }
      }
    }
  }
}

// The predictor's selection at model size (Llama-2-7B: 1100 of 11008
// neurons; OPT-66B: 3686 of 36864; OPT-175B: 4915 of 49152), with distinct
// scores, with ties inside the
// threshold's value bin (scores on a 1/64 grid), with a handful of values
// (ties spanning whole bins) and with only +0 and -0 (an empty range).
TEST_F(SparseOpsTest, TopKAtModelSizeWithManyTies) {
  struct Case {
    const char* name;
    float grid;  // Scores rounded to multiples of this (0: kept as drawn).
  };
  for (bool cluster : {true, false}) {
    UseTopKCluster(cluster);
    for (int64_t n : {11008, 36864, 49152}) {
      const int64_t k = n / 10;
      for (const Case c :
           {Case{"distinct", 0.f}, Case{"grid 1/64", 1.f / 64},
            Case{"grid 1", 1.f}, Case{"zeros of both signs", 1e9f}}) {
        Tensor scores = Random({1, n});
        for (int64_t i = 0; i < n; ++i) {
          float& v = scores.data<float>()[i];
          if (c.grid > 0.f) v = std::round(v / c.grid) * c.grid;
        }
        Tensor ref = Tensor::Zeros(DType::kI32, {1, k});
        cpu_.TopK(scores, k, &ref);
        Tensor ids = gpu_->Allocate(DType::kI32, {1, k});
        gpu_->TopK(Up(scores), k, &ids);
        const std::vector<int32_t> host = DownI32(ids);
        for (int64_t i = 0; i < k; ++i) {
          ASSERT_EQ(host[i], ref.data<int32_t>()[i])
              << c.name << " cluster=" << cluster << " n=" << n << " at " << i;
        }
      }
    }
  }
}

TEST_F(SparseOpsTest, UnitNormsMatchCpu) {
  for (int64_t uw : {1, 16}) {
    Tensor x = Random({2, 64});
    Tensor ref = Tensor::Zeros(DType::kF32, {2, 64 / uw});
    cpu_.UnitNorms(x, uw, &ref);
    Tensor out = gpu_->Allocate(DType::kF32, {2, 64 / uw});
    gpu_->UnitNorms(Up(x), uw, &out);
    EXPECT_LT(RelErr(Down(out), ref.ToF32Vector()), 1e-6);
  }
}

TEST_F(SparseOpsTest, GatherGemvsMatchCpu) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    // Vector path (96: remainder loop only; 1280: unrolled loop, remainder
    // and the gated form), element-wise path (36).
    for (int64_t in : {96, 1280, 36}) {
      for (int64_t rows : {1, 3}) {
        const int64_t units = 40, uw = in == 96 ? 8 : 1, k = 10;
        Tensor x = Random({rows, in}), w = Random({units * uw, in}, dt),
               g = Random({units * uw, in}, dt), b = Random({units * uw}, dt);
        Tensor ids = RandomIds(rows, k, units);
        Tensor ref = Tensor::Zeros(DType::kF32, {rows, k * uw});
        cpu_.GatherLinear(x, w, b, ids, uw, true, Activation::kRelu, &ref);
        Tensor out = gpu_->Allocate(DType::kF32, {rows, k * uw});
        const Tensor dw = Up(w), db = Up(b), dids = Up(ids), dx = Up(x);
        gpu_->GatherLinear(dx, dw, db, dids, uw, true, Activation::kRelu, &out);
        const std::vector<float> up_scale = TermScale(x, w, b, ids, uw);
        EXPECT_LT(ScaledErr(Down(out), ref.ToF32Vector(), up_scale), 1e-5)
            << in;
        if (uw == 1) {
          cpu_.GatherGatedLinear(x, w, g, b, Tensor(), ids, Activation::kSilu,
                                 &ref);
          gpu_->GatherGatedLinear(dx, dw, Up(g), db, Tensor(), dids,
                                  Activation::kSilu, &out);
          // silu(gate) * up: an error d in gate moves it by at most
          // 1.1 |up| d (|silu'| < 1.1), one in up by |silu(gate)| d.
          Tensor gate = Tensor::Zeros(DType::kF32, {rows, k});
          Tensor up = Tensor::Zeros(DType::kF32, {rows, k});
          cpu_.GatherLinear(x, g, Tensor(), ids, 1, false, Activation::kRelu,
                            &gate);
          cpu_.GatherLinear(x, w, b, ids, 1, false, Activation::kRelu, &up);
          const std::vector<float> gate_scale =
              TermScale(x, g, Tensor(), ids, 1);
          const std::vector<float> gv = gate.ToF32Vector(),
                                   uv = up.ToF32Vector();
          std::vector<float> scale(gv.size());
          for (size_t i = 0; i < gv.size(); ++i) {
            const float silu = gv[i] / (1.0f + std::exp(-gv[i]));
            scale[i] = 1.1f * std::abs(uv[i]) * gate_scale[i] +
                       std::abs(silu) * up_scale[i];
          }
          EXPECT_LT(ScaledErr(Down(out), ref.ToF32Vector(), scale), 1e-5) << in;
        }
        // Transposed down projection over the kept rows, and over all.
        for (int64_t out_dim : {64, 30}) {
          Tensor wt = Random({units, out_dim}, dt), b2 = Random({out_dim});
          Tensor a = Random({rows, k}), all = Random({rows, units});
          Tensor r2 = Tensor::Zeros(DType::kF32, {rows, out_dim});
          Tensor o2 = gpu_->Allocate(DType::kF32, {rows, out_dim});
          const Tensor dwt = Up(wt), db2 = Up(b2);
          cpu_.GatherLinearT(a, wt, b2, ids, &r2);
          gpu_->GatherLinearT(Up(a), dwt, db2, dids, &o2);
          EXPECT_LT(RelErr(Down(o2), r2.ToF32Vector()), 1e-5) << out_dim;
          cpu_.GatherLinearT(all, wt, b2, Tensor(), &r2);
          gpu_->GatherLinearT(Up(all), dwt, db2, Tensor(), &o2);
          EXPECT_LT(RelErr(Down(o2), r2.ToF32Vector()), 1e-5) << out_dim;
        }
      }
    }
  }
}

// Every unit of a prefill over a transposed weight (a layer whose W2 was
// transposed in place) is one cuBLAS GEMM from x rounded to the weight's
// dtype: against the CPU on the same rounded x.
TEST_F(SparseOpsTest, TransposedWeightPrefillMatchesCpu) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (const auto& [rows, units, out] :
         {std::tuple<int64_t, int64_t, int64_t>{9, 96, 64}, {40, 300, 136}}) {
      const Tensor x = Random({rows, units}), wt = Random({units, out}, dt),
                   bias = Random({out}, dt);
      const Tensor ref_in = Tensor::FromF32(
          Tensor::FromF32(x.ToF32Vector(), x.shape(), dt).ToF32Vector(),
          x.shape());
      Tensor ref = Tensor::Zeros(DType::kF32, {rows, out});
      cpu_.GatherLinearT(ref_in, wt, bias, Tensor(), &ref);
      Tensor y = gpu_->Allocate(DType::kF32, {rows, out});
      gpu_->GatherLinearT(Up(x), Up(wt), Up(bias), Tensor(), &y);
      EXPECT_LT(RelErr(Down(y), ref.ToF32Vector()), 1e-5)
          << DTypeName(dt) << " rows " << rows;
    }
  }
}

// The one-launch sparse MLP of a decode row (sm_90: clusters of 4, 8, 12
// and 16 column blocks, sparse_mlp.h) against the CPU's two gathers, OPT
// (ReLU, biases) and Llama (gated SiLU) forms, f16 and bf16, from one kept
// unit to splits of ~400 units; hidden 1536 has 96-thread blocks. Errors are
// measured against the size of each output's terms (a single kept unit
// makes the output one dot product, which may cancel). And
// Backend::GatherMlp, which picks the kernel or the two gathers, against the
// CPU.
TEST_F(SparseOpsTest, FusedSparseMlpMatchesTheTwoGathers) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (const auto& [d, units, k] :
         {std::tuple<int64_t, int64_t, int64_t>{1536, 300, 1},
          {1536, 300, 45},
          {9216, 4096, 410},
          {9216, 4096, 3000},
          // More than 256 units a split at clusters of 12 and 16.
          {9216, 6144, 6000},
          // 768-thread blocks (hidden > 9216), loads before the wait for
          // the pushed activations.
          {12288, 1024, 600}}) {
      for (bool gated : {false, true}) {
        Tensor x = Random({1, d}), w_up = Random({units, d}, dt),
               w_gate = Random({units, d}, dt), w_t = Random({units, d}, dt);
        Tensor b_up = gated ? Tensor() : Random({units}, dt);
        Tensor b_down = gated ? Tensor() : Random({d}, dt);
        Tensor ids = RandomIds(1, k, units);
        const Activation act = gated ? Activation::kSilu : Activation::kRelu;
        Tensor hidden = Tensor::Zeros(DType::kF32, {1, k});
        Tensor ref = Tensor::Zeros(DType::kF32, {1, d});
        const Tensor* gate = gated ? &w_gate : nullptr;
        cpu_.GatherMlp(x, w_up, b_up, gate, gated ? &b_up : nullptr, w_t,
                       b_down, ids, act, &hidden, &ref);
        // Per kept unit: |h| plus the size of the terms behind h (through
        // silu's derivative, < 1.1, when gated); then through |w_t|.
        const std::vector<float> h = hidden.ToF32Vector();
        const std::vector<float> up_scale = TermScale(x, w_up, b_up, ids, 1);
        std::vector<float> h_scale(k);
        Tensor u = Tensor::Zeros(DType::kF32, {1, k});
        Tensor g = Tensor::Zeros(DType::kF32, {1, k});
        cpu_.GatherLinear(x, w_up, b_up, ids, 1, false, act, &u);
        cpu_.GatherLinear(x, w_gate, Tensor(), ids, 1, false, act, &g);
        const std::vector<float> gate_scale =
            TermScale(x, w_gate, Tensor(), ids, 1);
        for (int64_t j = 0; j < k; ++j) {
          const float gj = g.data<float>()[j], uj = u.data<float>()[j];
          const float silu = gj / (1.0f + std::exp(-gj));
          h_scale[j] =
              std::abs(h[j]) + (gated ? 1.1f * std::abs(uj) * gate_scale[j] +
                                            std::abs(silu) * up_scale[j]
                                      : up_scale[j]);
        }
        Tensor scale = Tensor::Zeros(DType::kF32, {1, d});
        cpu_.GatherLinearT(Tensor::FromF32(h_scale, {1, k}), Abs(w_t),
                           b_down.empty() ? b_down : Abs(b_down), ids, &scale);
        const std::vector<float> out_scale = scale.ToF32Vector();
        const std::string what = absl::StrCat(DTypeName(dt), " d=", d, " k=", k,
                                              gated ? " gated" : "");

        const Tensor dx = Up(x), dw = Up(w_up), dg = Up(w_gate), dwt = Up(w_t);
        const Tensor db = b_up.empty() ? Tensor() : Up(b_up);
        const Tensor dbd = b_down.empty() ? Tensor() : Up(b_down);
        const Tensor dids = Up(ids);
        const Tensor* dgate = gated ? &dg : nullptr;
        DeviceContext& ctx = gpu_->context();
        for (int cluster : {16, 12, 8, 4}) {
          const FusedSparseMlpGrid grid =
              FusedSparseMlpClusters(ctx, d, dt, gated, act, cluster);
          const int splits = FusedSparseMlpSplits(grid, dx, dw, dgate, dwt, k);
          if (ctx.info().major < 9) break;
          const std::string where = absl::StrCat(what, " cluster ", cluster);
          ASSERT_EQ(grid.cluster, cluster) << where;
          if (splits == 0) {  // One wave holds too few units a split.
            EXPECT_GT(k, int64_t{grid.clusters} *
                             FusedSparseMlpMaxSplitUnits(cluster))
                << where;
            continue;
          }
          // One block an SM: at most as many blocks as SMs, fewer splits
          // (another summation order).
          const FusedSparseMlpGrid alone = FusedSparseMlpClusters(
              ctx, d, dt, gated, act, cluster, /*one_block_an_sm=*/true);
          EXPECT_LE(alone.clusters * cluster, ctx.info().sm_count) << where;
          const int alone_splits =
              FusedSparseMlpSplits(alone, dx, dw, dgate, dwt, k);
          Tensor scratch =
              gpu_->Allocate(DType::kF32, {std::max(splits, alone_splits) * d});
          auto run = [&](const FusedSparseMlpLaunch& launch, int32_t* counters,
                         Tensor* out) {
            // NaN first: a y the kernel failed to write shows.
            EXPECT_TRUE(FillBytes(ctx, 0xff, out).ok());
            return FusedSparseMlp(ctx, dx, dw, db, dgate, gated ? &db : nullptr,
                                  dwt, dbd, dids.data<int32_t>(), k, act,
                                  launch, scratch.data<float>(), counters, out);
          };
          auto fused = [&](bool early_copies, int32_t* counters, Tensor* out) {
            return run({grid, splits, early_copies}, counters, out);
          };
          Tensor dy = gpu_->Allocate(DType::kF32, {1, d});
          ASSERT_TRUE(fused(false, nullptr, &dy).ok()) << where;
          EXPECT_LT(ScaledErr(Down(dy), ref.ToF32Vector(), out_scale), 1e-5)
              << where;
          // The splits are summed in a fixed order: the same y, bit for bit,
          // on a second call (whichever blocks finish first), and with the
          // ids and first weight copies read before the PDL wait.
          Tensor again = gpu_->Allocate(DType::kF32, {1, d});
          ASSERT_TRUE(fused(false, nullptr, &again).ok()) << where;
          EXPECT_EQ(Down(again), Down(dy)) << where;
          Tensor early = gpu_->Allocate(DType::kF32, {1, d});
          ASSERT_TRUE(fused(true, nullptr, &early).ok()) << where;
          EXPECT_EQ(Down(early), Down(dy)) << where << " early copies";
          // Summed by each column block's last block in the launch: as
          // close to the reference, the same bits on every call (so each
          // call left its counters at zero for the next), and at clusters
          // of 16 (8 unit groups, as ReduceSplits' 8 warps) the same order
          // as ReduceSplits.
          Tensor counters = gpu_->Allocate(DType::kI32, {16});
          ASSERT_TRUE(FillBytes(ctx, 0, &counters).ok());
          std::vector<float> first;
          for (bool early_copies : {false, true, false}) {
            Tensor in_launch = gpu_->Allocate(DType::kF32, {1, d});
            ASSERT_TRUE(
                fused(early_copies, counters.data<int32_t>(), &in_launch).ok())
                << where;
            const std::vector<float> got = Down(in_launch);
            if (first.empty()) {
              first = got;
              EXPECT_LT(ScaledErr(got, ref.ToF32Vector(), out_scale), 1e-5)
                  << where << " summed in the launch";
              if (cluster == 16) {
                EXPECT_EQ(got, Down(dy)) << where;
              }
            } else {
              EXPECT_EQ(got, first) << where << " summed in the launch again";
            }
          }
          EXPECT_EQ(DownI32(counters), std::vector<int32_t>(16, 0)) << where;
          if (alone_splits > 0) {
            Tensor alone_y = gpu_->Allocate(DType::kF32, {1, d});
            ASSERT_TRUE(
                run({alone, alone_splits, false}, nullptr, &alone_y).ok())
                << where;
            EXPECT_LT(ScaledErr(Down(alone_y), ref.ToF32Vector(), out_scale),
                      1e-5)
                << where << " one block an SM";
          }
        }
        Tensor dh = gpu_->Allocate(DType::kF32, {1, k});
        Tensor dy = gpu_->Allocate(DType::kF32, {1, d});
        gpu_->GatherMlp(dx, dw, db, dgate, gated ? &db : nullptr, dwt, dbd,
                        dids, act, &dh, &dy);
        EXPECT_LT(ScaledErr(Down(dy), ref.ToF32Vector(), out_scale), 1e-5)
            << what << " (GatherMlp)";
      }
    }
  }
}

// The fused MLP reads its ids before its PDL wait only where they are not
// the output of the main stream's last op (CudaBackend::IdsSettled): right
// after TopK wrote them they are read after the wait, and either way
// GatherMlp computes the MLP of the ids TopK chose.
TEST_F(SparseOpsTest, IdsAreReadEarlyOnlyOnceSettled) {
  if (gpu_->context().info().major < 9) GTEST_SKIP() << "needs sm_90";
  constexpr int64_t d = 1024, units = 2048, k = 300;
  const Tensor x = Random({1, d}), w_up = Random({units, d}, DType::kF16),
               w_t = Random({units, d}, DType::kF16),
               b_up = Random({units}, DType::kF16),
               b_down = Random({d}, DType::kF16), scores = Random({1, units});
  const Tensor dx = Up(x), dw = Up(w_up), dwt = Up(w_t), db = Up(b_up),
               dbd = Up(b_down), dscores = Up(scores);
  Tensor ids = gpu_->Allocate(DType::kI32, {1, k});
  EXPECT_TRUE(gpu_->IdsSettled(ids));
  gpu_->TopK(dscores, k, &ids);
  EXPECT_FALSE(gpu_->IdsSettled(ids));
  ASSERT_GT(
      gpu_->FusedMlpLaunch(dx, dw, nullptr, dwt, k, Activation::kRelu).splits,
      0);
  Tensor dh = gpu_->Allocate(DType::kF32, {1, k});
  Tensor dy = gpu_->Allocate(DType::kF32, {1, d});
  gpu_->GatherMlp(dx, dw, db, nullptr, nullptr, dwt, dbd, ids,
                  Activation::kRelu, &dh, &dy);
  // GatherMlp was the main stream's last op: TopK's ids are settled now.
  EXPECT_TRUE(gpu_->IdsSettled(ids));
  const std::vector<int32_t> chosen = DownI32(ids);
  const Tensor host_ids = Tensor::FromI32(chosen, {1, k});
  Tensor hidden = Tensor::Zeros(DType::kF32, {1, k});
  Tensor ref = Tensor::Zeros(DType::kF32, {1, d});
  cpu_.GatherMlp(x, w_up, b_up, nullptr, nullptr, w_t, b_down, host_ids,
                 Activation::kRelu, &hidden, &ref);
  EXPECT_LT(RelErr(Down(dy), ref.ToF32Vector()), 1e-5);
  // Again with the ids settled (read before the wait): the same bits.
  Tensor again = gpu_->Allocate(DType::kF32, {1, d});
  gpu_->GatherMlp(dx, dw, db, nullptr, nullptr, dwt, dbd, ids,
                  Activation::kRelu, &dh, &again);
  EXPECT_EQ(Down(again), Down(dy));
}

// GatherMlp's choice of grid (CudaBackend::FusedMlpLaunch): the first size
// of the preference order (gated MLPs 16, 8, 4; others 16, 12, 8, 4 from
// hidden 7168, else 12, 8, 4) whose one wave holds the kept units (ReLU
// MLPs at 16: at most kReluCluster16MaxSplitUnits a split), on the grid of
// one block an SM first for every MLP (the default option), then on the
// grid of two; the two gathers where none holds them. A forced
// size or the fused kernel off are obeyed, and above hidden 9216 the
// automatic choice takes the grid of two only from 8192 kept units.
TEST_F(SparseOpsTest, FusedMlpLaunchPicksTheClusterSize) {
  DeviceContext& ctx = gpu_->context();
  if (ctx.info().major < 9) GTEST_SKIP() << "the fused MLP needs sm_90";
  ASSERT_TRUE(CudaBackendOptions().fused_mlp_one_block_an_sm);
  for (const auto& [d, gated] : {std::pair<int64_t, bool>{9216, false},
                                 {12288, false},
                                 {5120, false},
                                 {4096, true}}) {
    const std::string what = absl::StrCat("hidden ", d, gated ? " gated" : "");
    const Activation act = gated ? Activation::kSilu : Activation::kRelu;
    const Tensor x = gpu_->Allocate(DType::kF32, {1, d});
    const Tensor w = gpu_->Allocate(DType::kF16, {8, d});
    // Clusters of 12 only where the hidden size is a multiple of 1536.
    std::vector<int> order = gated       ? std::vector<int>{16, 8, 4}
                             : d >= 7168 ? std::vector<int>{16, 12, 8, 4}
                                         : std::vector<int>{12, 8, 4};
    if (d % 1536 != 0) std::erase(order, 12);
    // (cluster, one block an SM) in the order tried, and the units each
    // one wave holds.
    std::vector<std::pair<int, bool>> tried;
    for (bool alone : {true, false}) {
      for (const int cluster : order) tried.emplace_back(cluster, alone);
    }
    std::vector<int64_t> reach, ks = {2048, 8192};
    for (const auto& [cluster, alone] : tried) {
      const FusedSparseMlpGrid grid = FusedSparseMlpClusters(
          ctx, d, DType::kF16, gated, act, cluster, alone);
      ASSERT_GT(grid.clusters, 0) << what << " cluster " << cluster;
      EXPECT_EQ(grid.one_block_an_sm, alone);
      if (alone) {
        EXPECT_LE(grid.clusters * cluster, ctx.info().sm_count);
      }
      const int split_units = !gated && cluster == 16
                                  ? CudaBackend::kReluCluster16MaxSplitUnits
                                  : FusedSparseMlpMaxSplitUnits(cluster);
      reach.push_back(int64_t{grid.clusters} * split_units);
      ks.push_back(reach.back());
      ks.push_back(reach.back() + 1);
    }
    const bool wide = d > 9216;
    for (const int64_t k : ks) {
      const FusedSparseMlpLaunch got =
          gpu_->FusedMlpLaunch(x, w, gated ? &w : nullptr, w, k, act);
      const std::string where = absl::StrCat(what, " k ", k);
      int want = -1;
      for (size_t i = 0; i < tried.size() && want < 0; ++i) {
        if (k <= reach[i]) want = static_cast<int>(i);
      }
      if (want < 0 || (wide && k < 8192 && !tried[want].second)) {
        EXPECT_EQ(got.splits, 0) << where;
        continue;
      }
      EXPECT_EQ(got.grid.cluster, tried[want].first) << where;
      EXPECT_EQ(got.grid.one_block_an_sm, tried[want].second) << where;
      EXPECT_EQ(got.splits, std::min<int64_t>(got.grid.clusters, k)) << where;
    }
  }
  // A forced size, and the fused kernel off.
  const int64_t d = 9216;
  const Tensor x = gpu_->Allocate(DType::kF32, {1, d});
  const Tensor w = gpu_->Allocate(DType::kF16, {8, d});
  CudaBackendOptions options;
  for (const int cluster : {4, 12, 16}) {
    options.fused_sparse_mlp_cluster = cluster;
    auto forced = CudaBackend::Create(options);
    ASSERT_TRUE(forced.ok()) << forced.status();
    const FusedSparseMlpLaunch got =
        (*forced)->FusedMlpLaunch(x, w, nullptr, w, 1024, Activation::kRelu);
    EXPECT_EQ(got.grid.cluster, cluster);
    EXPECT_GT(got.splits, 0) << "clusters of " << cluster;
  }
  options.fused_sparse_mlp = 0;
  auto off = CudaBackend::Create(options);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(
      (*off)->FusedMlpLaunch(x, w, nullptr, w, 2048, Activation::kRelu).splits,
      0);
}

// hd 16 takes the staged vector path, 12 the scalar one; 42 output rows end
// inside a warp's rows. Automatic rows a warp is 1 at these sizes.
TEST_F(SparseOpsTest, HeadColumnsMatchCpu) {
  for (const auto& [hd, out_dim, rows_per_warp] :
       {std::tuple<int64_t, int64_t, int64_t>{16, 40, 0},
        {12, 40, 0},
        {16, 42, 2},
        {12, 42, 2},
        {16, 42, 4},
        {12, 42, 4}}) {
    UseSparseKernels(rows_per_warp);
    const int64_t heads = 6, k = 3, rows = 2;
    Tensor ids = RandomIds(rows, k, heads);
    Tensor ctx = Random({rows, heads * hd});
    Tensor compact = Tensor::Zeros(DType::kF32, {rows, k * hd});
    cpu_.GatherColumns(ctx, ids, hd, &compact);
    Tensor dcompact = gpu_->Allocate(DType::kF32, {rows, k * hd});
    const Tensor dids = Up(ids);
    gpu_->GatherColumns(Up(ctx), dids, hd, &dcompact);
    EXPECT_EQ(Down(dcompact), compact.ToF32Vector());
    Tensor w = Random({out_dim, heads * hd}, DType::kF16),
           b = Random({out_dim});
    Tensor ref = Tensor::Zeros(DType::kF32, {rows, out_dim});
    cpu_.GatherColumnsLinear(compact, w, b, ids, hd, &ref);
    Tensor out = gpu_->Allocate(DType::kF32, {rows, out_dim});
    gpu_->GatherColumnsLinear(dcompact, Up(w), Up(b), dids, hd, &out);
    EXPECT_LT(RelErr(Down(out), ref.ToF32Vector()), 1e-5)
        << hd << " " << out_dim << " " << rows_per_warp;
  }
}

TEST_F(SparseOpsTest, HeadSubsetAttentionMatchesCpu) {
  const int64_t heads = 8, kv = 4, hd = 32, keys = 150, k = 3;
  Tensor kc = Random({200, kv * hd}), vc = Random({200, kv * hd});
  Tensor q = Random({1, k * hd});
  Tensor ids = RandomIds(1, k, heads);
  const int32_t pos[] = {keys - 1};
  AttentionArgs a;
  a.k_cache = &kc;
  a.v_cache = &vc;
  a.num_keys = keys;
  a.query_positions = pos;
  a.num_heads = heads;
  a.num_kv_heads = kv;
  a.head_dim = hd;
  a.scale = 0.17f;
  Tensor ref = Tensor::Zeros(DType::kF32, {1, k * hd});
  a.q = &q;
  a.out = &ref;
  cpu_.SparseAttention(a, ids);
  Tensor dk = Up(kc), dv = Up(vc), dq = Up(q);
  Tensor out = gpu_->Allocate(DType::kF32, {1, k * hd});
  a.k_cache = &dk;
  a.v_cache = &dv;
  a.q = &dq;
  a.out = &out;
  gpu_->SparseAttention(a, Up(ids));
  EXPECT_LT(RelErr(Down(out), ref.ToF32Vector()), 1e-5);
}

// Runs the same lazy K/V steps on both backends and compares the caches and
// the pending flags after every step. On CUDA cores (hidden 64, or tensor
// cores off) hidden 1280 takes the kernel's unrolled loop (1024 or 512
// elements a step) and its remainder, 64 only the latter; automatic rows a
// warp is 2. On tensor cores (f16, hidden 1280) each warp's quarter of
// hidden is two 64-element blocks and a remainder block, and kv head 1's
// 17 tokens at position 23 take a pass of 16 and one of 1. The GPU runs
// the steps a second time on f16 caches, which must hold its f32 caches'
// values rounded to nearest, bit for bit: K is rotated before its one
// rounding (the f16 kernels pair each K row with its RoPE partner).
TEST_F(SparseOpsTest, LazyKvMatchesCpuOverManySteps) {
  // mma_blocks: the tensor-core kernel's occupancy build (2 or 3 an SM, 0:
  // the kernel picks).
  for (const auto& [rope, hidden, rows_per_warp, mma, mma_blocks] :
       {std::tuple{false, 64, 0, true, 3}, std::tuple{true, 64, 4, true, 3},
        std::tuple{false, 1280, 4, false, 3},
        std::tuple{true, 1280, 0, false, 3}, std::tuple{true, 1280, 0, true, 3},
        std::tuple{false, 1280, 0, true, 0},
        std::tuple{true, 1280, 0, true, 2}}) {
    SCOPED_TRACE(absl::StrCat("rope ", rope, " hidden ", hidden,
                              " rows a warp ", rows_per_warp, " mma ", mma,
                              " blocks ", mma_blocks));
    UseSparseKernels(rows_per_warp, mma, mma_blocks);
    const int64_t heads = hidden / 16, kv = 2, hd = 16, slots = 16;
    ModelConfig c = LlamaConfigFromShape({.vocab_size = 8,
                                          .hidden_size = hidden,
                                          .intermediate_size = 8,
                                          .num_layers = 1,
                                          .num_heads = heads,
                                          .num_kv_heads = kv,
                                          .max_position_embeddings = 64});
    RopeTable table = MakeRopeTable(c);
    Tensor wk = Random({kv * hd, hidden}, DType::kF16),
           wv = Random({kv * hd, hidden}, DType::kF16), bk = Random({kv * hd}),
           bv = Random({kv * hd});
    struct Side {
      Tensor x, pos, pending, kc, vc;
    } cs, gs, hs;  // CPU, GPU, GPU with f16 caches.
    Backend* backends[] = {&cpu_, gpu_.get(), gpu_.get()};
    Side* sides[] = {&cs, &gs, &hs};
    // The ring starts owed in full by every kv head (positions 40..55), which
    // in-order steps never leave: the first step computes 17 tokens a head,
    // two tensor-core passes.
    const Tensor ring_x = Random({slots, hidden});
    std::vector<int32_t> ring_pos(slots);
    for (int64_t s = 0; s < slots; ++s) ring_pos[s] = 40 + s;
    for (int i = 0; i < 3; ++i) {
      const DType cache = i == 2 ? DType::kF16 : DType::kF32;
      sides[i]->x = *backends[i]->Upload(ring_x);
      sides[i]->pos = *backends[i]->Upload(Tensor::FromI32(ring_pos, {slots}));
      sides[i]->pending = *backends[i]->Upload(
          Tensor::FromI32(std::vector<int32_t>(slots * kv, 1), {slots, kv}));
      sides[i]->kc = *backends[i]->Upload(Tensor::Zeros(cache, {64, kv * hd}));
      sides[i]->vc = *backends[i]->Upload(Tensor::Zeros(cache, {64, kv * hd}));
    }
    const Tensor dwk = Up(wk), dwv = Up(wv), dbk = Up(bk), dbv = Up(bv);
    for (int32_t p = 3; p < 40; ++p) {
      const bool final_flush = p == 39;
      Tensor h = Random({1, hidden});
      // Kv head 1 is kept only at position 23, so the ring's wrap completes
      // its older tokens (as SparseBlocks runs it: no periodic flush).
      const int32_t group = heads / kv;
      const int32_t head = p % 23 == 0
                               ? group + static_cast<int32_t>(rng_() % group)
                               : static_cast<int32_t>(rng_() % group);
      Tensor ids = Tensor::FromI32({head}, {1, 1});
      const Tensor dh = Up(h), dids = Up(ids);
      const int32_t step[] = {p, p % static_cast<int32_t>(slots), 0};
      const int32_t flush[] = {0, 0, 1};
      for (int i = 0; i < 3; ++i) {
        LazyKvArgs a;
        a.h = final_flush ? nullptr : (i == 0 ? &h : &dh);
        a.head_ids = i == 0 ? &ids : &dids;
        a.step = final_flush ? absl::Span<const int32_t>(flush)
                             : absl::Span<const int32_t>(step);
        a.ring_x = &sides[i]->x;
        a.ring_pos = &sides[i]->pos;
        a.ring_pending = &sides[i]->pending;
        a.wk = i == 0 ? &wk : &dwk;
        a.wv = i == 0 ? &wv : &dwv;
        a.bk = i == 0 ? &bk : &dbk;
        a.bv = i == 0 ? &bv : &dbv;
        a.rope = rope ? &table : nullptr;
        a.num_heads = heads;
        a.num_kv_heads = kv;
        a.head_dim = hd;
        a.k_cache = &sides[i]->kc;
        a.v_cache = &sides[i]->vc;
        backends[i]->LazyKv(a);
      }
      const std::vector<float> gk = Down(gs.kc), gv = Down(gs.vc);
      ASSERT_LT(RelErr(gk, cs.kc.ToF32Vector()), 1e-5) << p;
      ASSERT_LT(RelErr(gv, cs.vc.ToF32Vector()), 1e-5) << p;
      ASSERT_EQ(Down(hs.kc), RoundedToF16(gk)) << p;
      ASSERT_EQ(Down(hs.vc), RoundedToF16(gv)) << p;
      for (const Side* side : {&gs, &hs}) {
        const std::vector<int32_t> pend = DownI32(side->pending);
        for (int64_t i = 0; i < slots * kv; ++i) {
          ASSERT_EQ(pend[i], cs.pending.data<int32_t>()[i]) << p;
        }
      }
    }
    // After the final flush every row 3..38 and 40..55 is complete: nothing
    // pending.
    for (int64_t i = 0; i < slots * kv; ++i) {
      EXPECT_EQ(cs.pending.data<int32_t>()[i], 0);
    }
  }
}

// Whole sessions: sparse vs masked execution of the same device-computed
// selections (dejavu-timing predictors) on the GPU, with graph replays.
std::vector<std::vector<float>> DecodeWith(const ModelConfig& c,
                                           const ModelWeights& w,
                                           Backend& backend, Method& method,
                                           int steps) {
  Session session(c, w, backend, method, 64);
  std::mt19937 rng(9);
  std::vector<int32_t> prompt(7);
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % c.vocab_size);
  std::vector<std::vector<float>> out;
  auto logits = session.Forward(prompt, 6);
  EXPECT_TRUE(logits.ok()) << logits.status();
  out.push_back(logits->ToF32Vector());
  for (int s = 0; s < steps; ++s) {
    const int32_t t[] = {static_cast<int32_t>(rng() % c.vocab_size)};
    logits = session.Forward(t, 0);
    EXPECT_TRUE(logits.ok()) << logits.status();
    out.push_back(logits->ToF32Vector());
  }
  return out;
}

std::vector<std::vector<float>> Decode(const ModelConfig& c,
                                       const ModelWeights& w, Backend& backend,
                                       const std::vector<std::string>& args,
                                       int steps) {
  auto m = LowRankPredictorMethod::Create(args);
  EXPECT_TRUE(m.ok());
  EXPECT_TRUE((*m)->Attach(c, backend).ok());
  return DecodeWith(c, w, backend, **m, steps);
}

// Hidden 512 and up (a multiple of 512) runs the fused sparse MLP.
ModelConfig SmallConfig(bool llama, int64_t hidden = 128) {
  return llama ? LlamaConfigFromShape({.vocab_size = 97,
                                       .hidden_size = hidden,
                                       .intermediate_size = 2 * hidden,
                                       .num_layers = 3,
                                       .num_heads = 8,
                                       .num_kv_heads = 4,
                                       .max_position_embeddings = 128})
               : OptConfigFromShape({.vocab_size = 97,
                                     .hidden_size = hidden,
                                     .intermediate_size = 4 * hidden,
                                     .num_layers = 3,
                                     .num_heads = 4,
                                     .max_position_embeddings = 128});
}

TEST_F(SparseOpsTest, SparseDecodeEqualsMaskedWithGraphReplays) {
  for (const auto& [llama, hidden] : {std::pair<bool, int64_t>{false, 128},
                                      {true, 128},
                                      {false, 512},
                                      {true, 512}}) {
    const ModelConfig c = SmallConfig(llama, hidden);
    ModelWeights host = RandomWeights(c, 2);
    auto w = gpu_->UploadWeights(host);
    ASSERT_TRUE(w.ok());
    const std::vector<std::string> base = {"mlp_keep=0.25", "head_keep=0.5",
                                           "predictors=random:32",
                                           "dense_first_heads=1"};
    std::vector<std::string> masked = base;
    masked.push_back("execution=masked");
    const int64_t before = gpu_->graph_stats().replays;
    const auto a = Decode(c, *w, *gpu_, base, 40);
    EXPECT_GE(gpu_->graph_stats().replays - before, 30)
        << "sparse decode steps did not replay";
    const auto b = Decode(c, *w, *gpu_, masked, 40);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LT(RelErr(a[i], b[i]), 1e-5)
          << "hidden " << hidden << " step " << i;
    }
    // And the CPU backend's sparse decode on the same weights (the
    // predictor's TopK may pick differently on near-ties: compare the
    // prefill only, which is dense here, and one decode step).
    const auto cpu = Decode(c, host, cpu_, base, 1);
    EXPECT_LT(RelErr(a[0], cpu[0]), 1e-4);
  }
}

// The registry's dejavu method runs its lookahead predictors as side work
// (Backend::BeginSideWork: a second stream, forked and joined inside the
// captured graph); the logits equal those of the same work in line, bit for
// bit, over graph replays, OPT and Llama.
TEST_F(SparseOpsTest, SideWorkPredictorsMatchInLine) {
  CudaBackendOptions options;
  options.side_work = false;
  auto in_line = CudaBackend::Create(options);
  ASSERT_TRUE(in_line.ok()) << in_line.status();
  for (const auto& [llama, hidden] : {std::pair<bool, int64_t>{false, 128},
                                      {true, 128},
                                      {false, 512},
                                      {true, 512}}) {
    const ModelConfig c = SmallConfig(llama, hidden);
    const ModelWeights host = RandomWeights(c, 4);
    auto w_side = gpu_->UploadWeights(host);
    auto w_line = (*in_line)->UploadWeights(host);
    ASSERT_TRUE(w_side.ok() && w_line.ok());
    const auto attached = [&](Backend& backend) {
      auto args =
          MethodArgs::Parse({"mlp_keep=0.25", "head_keep=0.5",
                             "predictors=random:32", "dense_first_heads=1"});
      EXPECT_TRUE(args.ok()) << args.status();
      auto m = CreateMethod("dejavu", *args);
      EXPECT_TRUE(m.ok()) << m.status();
      EXPECT_TRUE((*m)->Attach(c, backend).ok());
      return *std::move(m);
    };
    auto m_side = attached(*gpu_);
    auto m_line = attached(**in_line);
    const int64_t before = gpu_->graph_stats().replays;
    const auto a = DecodeWith(c, *w_side, *gpu_, *m_side, 40);
    EXPECT_GE(gpu_->graph_stats().replays - before, 30)
        << "side-work decode steps did not replay";
    const auto b = DecodeWith(c, *w_line, **in_line, *m_line, 40);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i], b[i])
          << (llama ? "llama" : "opt") << " hidden " << hidden << " step " << i;
    }
  }
}

}  // namespace
}  // namespace dynsparse::cuda
