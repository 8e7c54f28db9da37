// Decode GEMV against cpu::Linear on fresh random inputs.
//
// Tolerance: both sides read the very same f16/bf16 weights and accumulate in
// f32. The CUDA-core and scalar paths also use x as is, so they differ only by
// summation order: ~1e-7..1e-6 relative for K <= 11008, bounded by
// kTolerance = 1e-5. The tensor-core path carries x as hi + lo halves of the
// weight type (16 significant bits for bf16, 22 for f16), adding at most
// 2^-17 relative per product: kTensorCoreTolerance = 3e-5. Both still catch
// any wrong index, dropped chunk or unwritten (NaN) output by orders of
// magnitude. Check() divides the error by the cancellation factor rho (see
// there), which is ~1 except for short rows whose dot products cancel.
#include "kernels/cuda/gemv.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

using testutil::CountNonFinite;
using testutil::CudaTest;
using testutil::RelativeError;

constexpr double kTolerance = 1e-5;
constexpr double kTensorCoreTolerance = 3e-5;

double ToleranceFor(GemvPath path) {
  return path == GemvPath::kTensorCore ? kTensorCoreTolerance : kTolerance;
}

struct Shape2 {
  int64_t out;
  int64_t in;
};

class GemvTest : public CudaTest {
 protected:
  // Runs one GEMV on the GPU and on the CPU; returns the relative error and
  // the plan that ran. Weights are N(0, 1/in) so outputs are O(1).
  double Check(int64_t batch, Shape2 s, DType w_dtype, DType bias_dtype,
               bool with_bias, const GemvOptions& options = {},
               GemvPlan* plan_out = nullptr) {
    const Tensor x_host = RandomHost({batch, s.in});
    const Tensor w_host =
        RandomHost({s.out, s.in}, w_dtype, 1.0f / std::sqrt(float(s.in)));
    const Tensor bias_host =
        with_bias ? RandomHost({s.out}, bias_dtype) : Tensor();
    Tensor y_ref = Tensor::Zeros(DType::kF32, {batch, s.out});
    cpu::Linear(x_host, w_host, bias_host, &y_ref);

    const Tensor x = Upload(x_host);
    const Tensor w = Upload(w_host);
    const Tensor bias = with_bias ? Upload(bias_host) : Tensor();
    Tensor y = PoisonedDevice(DType::kF32, {batch, s.out});
    absl::StatusOr<GemvPlan> plan = PlanGemv(ctx(), x, w, options);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (plan.ok() && plan_out != nullptr) *plan_out = *plan;
    const absl::Status status = Gemv(ctx(), x, w, bias, &y, options);
    EXPECT_TRUE(status.ok()) << status;
    if (!status.ok()) return INFINITY;
    const std::vector<float> got = Download(y);
    EXPECT_EQ(CountNonFinite(got), 0) << "unwritten or non-finite outputs";
    // Rounding errors of the products are independent, so the error of each
    // output scales with sqrt(sum_k (w x)^2), not with |sum_k w x|: when a
    // short dot product cancels, ||ref|| is small and the relative error
    // large. Dividing by rho = ||sqrt(sum (w x)^2)|| / ||ref|| (>= 1 only
    // then; ~1 for long random rows) keeps the tolerance tight and fair.
    return RelativeError(got, y_ref.ToF32Vector()) /
           std::max(1.0, CancellationFactor(x_host, w_host, y_ref));
  }

  // Gemv of uploaded host operands into *y: the downloaded result, checked
  // for unwritten (NaN) outputs; empty when the call fails (reported).
  std::vector<float> RunOnDevice(const Tensor& x_host, const Tensor& w_host,
                                 const Tensor& bias_host,
                                 const GemvOptions& options, Tensor* y) {
    const absl::Status status = Gemv(ctx(), Upload(x_host), Upload(w_host),
                                     Upload(bias_host), y, options);
    EXPECT_TRUE(status.ok()) << status;
    if (!status.ok()) return {};
    std::vector<float> got = Download(*y);
    EXPECT_EQ(CountNonFinite(got), 0);
    return got;
  }

  // Each one-row kernel a context switch rebuilds (plain, fused norm, gated
  // pairs, the gated down projection; bf16 and f16) run with
  // set_switch(false), then set_switch(true): expects finite outputs, the
  // same bits both ways, and appends each case's resident warps {off, on}
  // to *warps.
  void ExpectOneRowBitsBothWays(const std::function<void(bool)>& set_switch,
                                std::vector<std::array<int, 2>>* warps) {
    const int64_t in = 4096, out = 1000;
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      SCOPED_TRACE(::testing::Message()
                   << DTypeName(dtype) << " " << SeedMessage());
      const Tensor x = Upload(RandomHost({1, in}));
      const Tensor gate = Upload(RandomHost({1, in}));
      const Tensor w =
          Upload(RandomHost({out, in}, dtype, 1.0f / std::sqrt(float(in))));
      const Tensor gamma = Upload(RandomHost({in}, dtype, 0.5f));
      const Tensor bias = Upload(RandomHost({out}));
      GemvOptions plain, norm, pairs;
      norm.norm = GemvNorm{gamma, Tensor(), 1e-6};
      pairs.norm = norm.norm;
      pairs.gated_pairs = true;
      pairs.activation = Activation::kSilu;
      pairs.activation_from_row = out / 2;
      struct Case {
        const char* name;
        const GemvOptions* options;  // Null: GatedGemv.
        int64_t y_cols;
      };
      for (const Case& c :
           {Case{"plain", &plain, out}, Case{"norm", &norm, out},
            Case{"pairs", &pairs, out / 2}, Case{"gated", nullptr, out}}) {
        SCOPED_TRACE(c.name);
        std::vector<float> got[2];
        std::array<int, 2> resident_warps = {0, 0};
        for (bool on : {false, true}) {
          set_switch(on);
          Tensor y = PoisonedDevice(DType::kF32, {1, c.y_cols});
          const absl::Status status =
              c.options == nullptr
                  ? GatedGemv(ctx(), Activation::kSilu, gate, x, w, bias, &y)
                  : Gemv(ctx(), x, w, bias, &y, *c.options);
          ASSERT_TRUE(status.ok()) << status;
          got[on] = Download(y);
          absl::StatusOr<GemvPlan> plan =
              PlanGemv(ctx(), x, w, c.options == nullptr ? plain : *c.options);
          ASSERT_TRUE(plan.ok()) << plan.status();
          resident_warps[on] = plan->resident_warps;
        }
        EXPECT_EQ(CountNonFinite(got[1]), 0);
        EXPECT_EQ(got[0], got[1]);
        warps->push_back(resident_warps);
      }
    }
  }

  static double CancellationFactor(const Tensor& x, const Tensor& w,
                                   const Tensor& y_ref) {
    const std::vector<float> xv = x.ToF32Vector();
    const std::vector<float> wv = w.ToF32Vector();
    const std::vector<float> yv = y_ref.ToF32Vector();
    const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
    double spread = 0.0, norm = 0.0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t o = 0; o < out; ++o) {
        double sq = 0.0;
        for (int64_t k = 0; k < in; ++k) {
          const double p = double{wv[o * in + k]} * xv[b * in + k];
          sq += p * p;
        }
        spread += sq;
        norm += double{yv[b * out + o]} * yv[b * out + o];
      }
    }
    return norm > 0.0 ? std::sqrt(spread / norm) : 1.0;
  }
};

TEST_F(GemvTest, FastPathsMatchCpuForEveryBatch) {
  const std::vector<Shape2> shapes = {{1, 8},      {3, 64},     {5, 256},
                                      {64, 264},   {100, 1000}, {257, 1032},
                                      {1000, 4096}};
  for (GemvPath path :
       {GemvPath::kCudaCore, GemvPath::kTensorCore, GemvPath::kAuto}) {
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      for (const Shape2& s : shapes) {
        for (int64_t batch = 1; batch <= kGemvMaxBatch; ++batch) {
          SCOPED_TRACE(::testing::Message()
                       << GemvPathName(path) << " " << DTypeName(dtype)
                       << " out=" << s.out << " in=" << s.in
                       << " batch=" << batch << " " << SeedMessage());
          GemvOptions options;
          options.path = path;
          GemvPlan plan;
          const double err =
              Check(batch, s, dtype, DType::kF32,
                    /*with_bias=*/batch % 2 == 1, options, &plan);
          EXPECT_LT(err, ToleranceFor(plan.path)) << plan.DebugString();
          EXPECT_NE(plan.path, GemvPath::kScalar);
          if (path != GemvPath::kAuto) {
            EXPECT_EQ(plan.path, path);
          }
        }
      }
    }
  }
}

TEST_F(GemvTest, ModelSizedShapes) {
  const std::vector<Shape2> shapes = {
      {4096, 4096}, {11008, 4096}, {4096, 11008}};
  for (const Shape2& s : shapes) {
    for (int64_t batch : {1, 2, 4, 8}) {
      for (DType dtype : {DType::kBF16, DType::kF16}) {
        for (GemvPath path : {GemvPath::kCudaCore, GemvPath::kTensorCore}) {
          SCOPED_TRACE(::testing::Message()
                       << DTypeName(dtype) << " out=" << s.out << " in=" << s.in
                       << " batch=" << batch << " " << SeedMessage());
          GemvOptions options;
          options.path = path;
          GemvPlan plan;
          const double err = Check(batch, s, dtype, DType::kF32,
                                   /*with_bias=*/false, options, &plan);
          EXPECT_LT(err, ToleranceFor(path));
          std::cout << DTypeName(dtype) << " " << s.out << "x" << s.in
                    << " b=" << batch << " err=" << err << " plan "
                    << plan.DebugString() << "\n";
        }
      }
    }
  }
}

TEST_F(GemvTest, ScalarPathForUnalignedK) {
  // in % 8 != 0 cannot use 16-byte loads; f32 weights always run scalar.
  const std::vector<Shape2> shapes = {{33, 4100}, {5, 13}, {300, 7}, {2, 1}};
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (const Shape2& s : shapes) {
      for (int64_t batch : {1, 3, 8}) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << " out=" << s.out << " in=" << s.in
                     << " batch=" << batch << " " << SeedMessage());
        GemvPlan plan;
        EXPECT_LT(Check(batch, s, dtype, DType::kBF16, true, {}, &plan),
                  kTolerance);
        EXPECT_EQ(plan.path, GemvPath::kScalar);
      }
    }
  }
  // f32 weights with an aligned K also take the scalar path.
  GemvPlan plan;
  EXPECT_LT(Check(2, {40, 512}, DType::kF32, DType::kF32, true, {}, &plan),
            kTolerance);
  EXPECT_EQ(plan.path, GemvPath::kScalar);
  // A forced scalar path also works on shapes the fast paths take.
  GemvOptions scalar;
  scalar.path = GemvPath::kScalar;
  EXPECT_LT(
      Check(5, {64, 1024}, DType::kBF16, DType::kF32, true, scalar, &plan),
      kTolerance);
  EXPECT_EQ(plan.path, GemvPath::kScalar);
}

TEST_F(GemvTest, ForcedSplitsAllAgree) {
  const std::vector<Shape2> shapes = {{37, 4096}, {515, 2056}, {8, 776}};
  for (const Shape2& s : shapes) {
    for (int64_t batch : {1, 3, 5, 8}) {
      for (int splits : {1, 2, 3, 7}) {
        for (int wpr : {1, 2, 4}) {
          SCOPED_TRACE(::testing::Message()
                       << "cuda_core out=" << s.out << " in=" << s.in
                       << " batch=" << batch << " warps_per_row=" << wpr
                       << " k_splits=" << splits << " " << SeedMessage());
          GemvOptions options;
          options.path = GemvPath::kCudaCore;
          options.warps_per_row = wpr;
          options.k_splits = splits;
          GemvPlan plan;
          EXPECT_LT(
              Check(batch, s, DType::kBF16, DType::kF16, true, options, &plan),
              kTolerance);
          EXPECT_EQ(plan.warps_per_row, wpr);
        }
        SCOPED_TRACE(::testing::Message()
                     << "tensor_core out=" << s.out << " in=" << s.in
                     << " batch=" << batch << " k_splits=" << splits << " "
                     << SeedMessage());
        GemvOptions options;
        options.path = GemvPath::kTensorCore;
        options.k_splits = splits;
        GemvPlan plan;
        EXPECT_LT(Check(batch, s, splits % 2 ? DType::kF16 : DType::kBF16,
                        DType::kBF16, true, options, &plan),
                  kTensorCoreTolerance);
      }
    }
  }
}

TEST_F(GemvTest, SmallOutSplitsKAcrossBlocks) {
  for (int64_t batch : {1, 2, 8}) {
    SCOPED_TRACE(::testing::Message()
                 << "batch=" << batch << " " << SeedMessage());
    GemvPlan plan;
    EXPECT_LT(
        Check(batch, {16, 16384}, DType::kBF16, DType::kF32, true, {}, &plan),
        ToleranceFor(plan.path));
    std::cout << "out=16 in=16384 b=" << batch << " plan " << plan.DebugString()
              << "\n";
    EXPECT_GT(plan.k_splits, 1);
  }
}

TEST_F(GemvTest, MisalignedViewsFallBackToScalar) {
  // A weight view starting 2 bytes into its allocation cannot use uint4 loads.
  const int64_t out = 24, in = 64, batch = 3;
  const Tensor w_host = RandomHost({out * in + 1}, DType::kBF16, 0.125f);
  const Tensor w_all = Upload(w_host);
  std::vector<uint16_t> shifted(out * in);
  std::memcpy(shifted.data(), w_host.data<uint16_t>() + 1, out * in * 2);
  Tensor w_ref = Tensor::Zeros(DType::kBF16, {out, in});
  std::memcpy(w_ref.raw_data(), shifted.data(), out * in * 2);
  const Tensor w_view =
      w_all.Reshape({out * in + 1}).Rows(1, out * in + 1).Reshape({out, in});
  const Tensor x_host = RandomHost({batch, in});
  Tensor y_ref = Tensor::Zeros(DType::kF32, {batch, out});
  cpu::Linear(x_host, w_ref, Tensor(), &y_ref);
  const Tensor x = Upload(x_host);
  Tensor y = PoisonedDevice(DType::kF32, {batch, out});
  absl::StatusOr<GemvPlan> plan = PlanGemv(ctx(), x, w_view);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->path, GemvPath::kScalar);
  // Forcing a fast path on it is an error, not a silent fallback.
  GemvOptions tc;
  tc.path = GemvPath::kTensorCore;
  EXPECT_EQ(PlanGemv(ctx(), x, w_view, tc).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(Gemv(ctx(), x, w_view, Tensor(), &y).ok());
  EXPECT_LT(RelativeError(Download(y), y_ref.ToF32Vector()), kTolerance)
      << SeedMessage();
}

TEST_F(GemvTest, DeterministicAcrossRuns) {
  const Tensor x = Upload(RandomHost({4, 8192}));
  const Tensor w = Upload(RandomHost({64, 8192}, DType::kBF16, 0.01f));
  for (GemvPath path : {GemvPath::kCudaCore, GemvPath::kTensorCore}) {
    GemvOptions options;
    options.path = path;
    Tensor y1 = PoisonedDevice(DType::kF32, {4, 64});
    Tensor y2 = PoisonedDevice(DType::kF32, {4, 64});
    ASSERT_TRUE(Gemv(ctx(), x, w, Tensor(), &y1, options).ok());
    ASSERT_TRUE(Gemv(ctx(), x, w, Tensor(), &y2, options).ok());
    EXPECT_EQ(Download(y1), Download(y2)) << GemvPathName(path);
  }
}

TEST_F(GemvTest, RejectsBadOperands) {
  const Tensor x = Upload(RandomHost({2, 64}));
  const Tensor w = Upload(RandomHost({16, 64}, DType::kBF16));
  Tensor y = PoisonedDevice(DType::kF32, {2, 16});
  auto code = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb,
                  Tensor* yy, GemvOptions o = {}) {
    return Gemv(ctx(), xx, ww, bb, yy, o).code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  // Batch 9 is a GEMM.
  const Tensor x9 = Upload(RandomHost({9, 64}));
  Tensor y9 = PoisonedDevice(DType::kF32, {9, 16});
  EXPECT_EQ(code(x9, w, Tensor(), &y9), kInvalid);
  // Host operands.
  EXPECT_EQ(code(RandomHost({2, 64}), w, Tensor(), &y), kInvalid);
  // x must be f32.
  EXPECT_EQ(code(Upload(RandomHost({2, 64}, DType::kF16)), w, Tensor(), &y),
            kInvalid);
  // Inner dimensions differ.
  EXPECT_EQ(code(Upload(RandomHost({2, 72})), w, Tensor(), &y), kInvalid);
  // y has the wrong shape.
  Tensor y_bad = PoisonedDevice(DType::kF32, {2, 15});
  EXPECT_EQ(code(x, w, Tensor(), &y_bad), kInvalid);
  // bias has the wrong size.
  EXPECT_EQ(code(x, w, Upload(RandomHost({15})), &y), kInvalid);
  // Unsupported forced splits.
  GemvOptions o;
  o.warps_per_row = 3;
  EXPECT_EQ(code(x, w, Tensor(), &y, o), kInvalid);
  GemvOptions ks;
  ks.k_splits = -1;
  EXPECT_EQ(code(x, w, Tensor(), &y, ks), kInvalid);
  GemvOptions early;
  early.early_loads_every = -1;
  EXPECT_EQ(code(x, w, Tensor(), &y, early), kInvalid);
  // Integer weights.
  EXPECT_EQ(
      code(x,
           Upload(Tensor::FromI32(std::vector<int32_t>(16 * 64, 1), {16, 64})),
           Tensor(), &y),
      kInvalid);
  // Segment ends outside (0, out), not increasing, or more than two.
  for (const std::vector<int64_t>& ends : std::vector<std::vector<int64_t>>{
           {0}, {16}, {9, 4}, {4, 4}, {2, 4, 8}}) {
    GemvOptions seg;
    seg.segment_ends = ends;
    EXPECT_EQ(code(x, w, Tensor(), &y, seg), kInvalid) << ends.size();
  }
}

// A group of weights stacked in w (q/k/v, up/gate) at batch > 1: each
// weight's output is its own [batch, rows] matrix in y, back to back
// (GemvOptions::segment_ends), on every path, with K splits, bias and the
// residual add. Reference: cpu::Linear of each weight alone.
TEST_F(GemvTest, SegmentedOutputsMatchEachWeightAlone) {
  const int64_t in = 1032;
  for (const std::vector<int64_t>& rows :
       std::vector<std::vector<int64_t>>{{64, 24, 40}, {100, 37}, {48}}) {
    for (GemvPath path :
         {GemvPath::kAuto, GemvPath::kCudaCore, GemvPath::kTensorCore}) {
      for (int64_t batch : {1, 2, 3, 5, 8}) {
        for (int splits : {0, 3}) {
          const bool accumulate = splits == 3;
          SCOPED_TRACE(::testing::Message()
                       << GemvPathName(path) << " segments=" << rows.size()
                       << " batch=" << batch << " k_splits=" << splits << " "
                       << SeedMessage());
          int64_t out = 0;
          std::vector<int64_t> ends;
          for (int64_t r : rows) {
            if (out > 0) ends.push_back(out);
            out += r;
          }
          const Tensor x_host = RandomHost({batch, in});
          const Tensor w_host =
              RandomHost({out, in}, DType::kF16, 1.0f / std::sqrt(float(in)));
          const Tensor bias_host = RandomHost({out});
          const Tensor old_host = RandomHost({batch * out});
          // Expected y: each weight's [batch, rows] result, one after another.
          std::vector<float> want;
          const std::vector<float> old = old_host.ToF32Vector();
          int64_t first = 0;
          for (int64_t r : rows) {
            Tensor y_ref = Tensor::Zeros(DType::kF32, {batch, r});
            cpu::Linear(x_host, w_host.Rows(first, first + r),
                        bias_host.Rows(first, first + r), &y_ref);
            const std::vector<float> part = y_ref.ToF32Vector();
            for (size_t i = 0; i < part.size(); ++i) {
              want.push_back(part[i] + (accumulate ? old[want.size()] : 0.0f));
            }
            first += r;
          }
          GemvOptions options;
          options.path = path;
          options.k_splits = splits;
          options.accumulate = accumulate;
          options.segment_ends = ends;
          Tensor y = accumulate ? Upload(old_host.Reshape({batch, out}))
                                : PoisonedDevice(DType::kF32, {batch, out});
          const std::vector<float> got =
              RunOnDevice(x_host, w_host, bias_host, options, &y);
          ASSERT_FALSE(got.empty());
          EXPECT_LT(RelativeError(got, want), kTensorCoreTolerance);
        }
      }
    }
  }
}

// The pre-norm fused into the GEMV (GemvNorm) against the CPU's norm
// followed by Linear (and the activation). The fused form scales the dot
// product after summing (RMSNorm) and subtracts mean * c (LayerNorm), so it
// differs from the reference by a few roundings: bounds of 2e-5 (RMSNorm) and
// 5e-5 (LayerNorm, whose inputs get an offset of 2 so the mean term matters)
// still catch a wrong statistic or gamma by orders of magnitude.
TEST_F(GemvTest, FusedNormMatchesCpuNormThenLinear) {
  const std::vector<Shape2> shapes = {
      {1, 8}, {5, 256}, {257, 1032}, {1000, 4096}, {300, 11008}};
  for (bool rms : {true, false}) {
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      for (const Shape2& s : shapes) {
        for (int wpr : {0, 1, 4}) {
          SCOPED_TRACE(::testing::Message()
                       << (rms ? "rms" : "layer") << " " << DTypeName(dtype)
                       << " out=" << s.out << " in=" << s.in << " wpr=" << wpr
                       << " " << SeedMessage());
          const bool with_bias = s.out % 2 == 1;
          const std::optional<Activation> act =
              s.in == 1032 ? std::optional<Activation>(Activation::kSilu)
                           : std::nullopt;
          std::vector<float> xv = RandomValues(s.in);
          if (!rms) {
            for (float& v : xv) v += 2.0f;
          }
          const Tensor x_host = Tensor::FromF32(xv, {1, s.in});
          const Tensor w_host =
              RandomHost({s.out, s.in}, dtype, 1.0f / std::sqrt(float(s.in)));
          const Tensor gamma_host = RandomHost({s.in}, dtype, 0.5f);
          const Tensor beta_host = rms ? Tensor() : RandomHost({s.in}, dtype);
          const Tensor bias_host =
              with_bias ? RandomHost({s.out}, dtype) : Tensor();
          const double eps = 1e-5;
          Tensor normed = Tensor::Zeros(DType::kF32, {1, s.in});
          if (rms) {
            cpu::RmsNorm(x_host, gamma_host, eps, &normed);
          } else {
            cpu::LayerNorm(x_host, gamma_host, beta_host, eps, &normed);
          }
          Tensor y_ref = Tensor::Zeros(DType::kF32, {1, s.out});
          cpu::Linear(normed, w_host, bias_host, &y_ref);
          if (act.has_value()) cpu::Activate(*act, &y_ref);

          const Tensor x = Upload(x_host);
          const Tensor w = Upload(w_host);
          const Tensor gamma = Upload(gamma_host);
          const Tensor beta = rms ? Tensor() : Upload(beta_host);
          Tensor bias = with_bias ? Upload(bias_host) : Tensor();
          GemvOptions options;
          options.warps_per_row = wpr;
          options.activation = act;
          options.norm = GemvNorm{gamma, Tensor(), eps};
          if (!rms) {
            absl::StatusOr<LayerNormFold> fold =
                FoldLayerNorm(ctx(), w, gamma, beta, bias);
            ASSERT_TRUE(fold.ok()) << fold.status();
            options.norm->row_sums = fold->row_sums;
            bias = fold->bias;
          }
          Tensor y = PoisonedDevice(DType::kF32, {1, s.out});
          const absl::Status status = Gemv(ctx(), x, w, bias, &y, options);
          ASSERT_TRUE(status.ok()) << status;
          const std::vector<float> got = Download(y);
          EXPECT_EQ(CountNonFinite(got), 0);
          const double err =
              RelativeError(got, y_ref.ToF32Vector()) /
              std::max(1.0, CancellationFactor(normed, w_host, y_ref));
          EXPECT_LT(err, rms ? 2e-5 : 5e-5);
        }
      }
    }
  }
}

// accumulate: y += x w^T + bias (the residual add), on every path.
TEST_F(GemvTest, AccumulateAddsIntoY) {
  for (GemvPath path :
       {GemvPath::kCudaCore, GemvPath::kTensorCore, GemvPath::kScalar}) {
    for (int64_t batch : {1, 4}) {
      SCOPED_TRACE(::testing::Message() << GemvPathName(path) << " batch="
                                        << batch << " " << SeedMessage());
      const Shape2 s{1000, 4096};
      const Tensor x_host = RandomHost({batch, s.in});
      const Tensor w_host =
          RandomHost({s.out, s.in}, DType::kF16, 1.0f / std::sqrt(4096.0f));
      const Tensor bias_host = RandomHost({s.out});
      const Tensor r_host = RandomHost({batch, s.out});
      Tensor y_ref = Tensor::Zeros(DType::kF32, {batch, s.out});
      cpu::Linear(x_host, w_host, bias_host, &y_ref);
      cpu::AddInPlace(r_host, &y_ref);

      Tensor y = Upload(r_host);
      GemvOptions options;
      options.path = path;
      options.accumulate = true;
      const absl::Status status = Gemv(ctx(), Upload(x_host), Upload(w_host),
                                       Upload(bias_host), &y, options);
      ASSERT_TRUE(status.ok()) << status;
      const std::vector<float> got = Download(y);
      EXPECT_EQ(CountNonFinite(got), 0);
      EXPECT_LT(RelativeError(got, y_ref.ToF32Vector()), ToleranceFor(path));
    }
  }
}

// GemvOptions::early_loads_every only moves which blocks load before the PDL
// wait: the sums, and so the bits, are those of the default.
TEST_F(GemvTest, EarlyLoadsEveryKeepsTheBits) {
  const Shape2 s{4096, 4096};  // The o-projection: more than one wave.
  const Tensor x = Upload(RandomHost({1, s.in}));
  const Tensor w =
      Upload(RandomHost({s.out, s.in}, DType::kF16, 1.0f / std::sqrt(4096.0f)));
  const Tensor bias = Upload(RandomHost({s.out}));
  const Tensor r_host = RandomHost({1, s.out});
  std::vector<float> want;
  for (int every : {1, 0, 2, 3}) {
    SCOPED_TRACE(::testing::Message()
                 << "early_loads_every=" << every << " " << SeedMessage());
    Tensor y = Upload(r_host);
    GemvOptions options;
    options.path = GemvPath::kCudaCore;
    options.accumulate = true;
    options.early_loads_every = every;
    const absl::Status status = Gemv(ctx(), x, w, bias, &y, options);
    ASSERT_TRUE(status.ok()) << status;
    const std::vector<float> got = Download(y);
    if (every == 1) {
      EXPECT_EQ(CountNonFinite(got), 0);
      want = got;
    } else {
      EXPECT_EQ(got, want);
    }
  }
}

// Gated pairs (the up/gate GEMV writing act(gate) * up) against the CPU's
// two Linears and GatedActivate, with and without the fused RMSNorm.
TEST_F(GemvTest, GatedPairsMatchCpuLinearsThenGatedActivate) {
  for (bool norm : {false, true}) {
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      for (int64_t n : {64, 300, 2752}) {
        for (int wpr : {0, 1}) {
          const int64_t in = n == 2752 ? 4096 : 1032;
          SCOPED_TRACE(::testing::Message()
                       << (norm ? "norm " : "") << DTypeName(dtype)
                       << " n=" << n << " in=" << in << " wpr=" << wpr << " "
                       << SeedMessage());
          const Tensor x_host = RandomHost({1, in});
          const Tensor w_host =
              RandomHost({2 * n, in}, dtype, 1.0f / std::sqrt(float(in)));
          const Tensor bias_host = RandomHost({2 * n});
          const Tensor gamma_host = RandomHost({in}, dtype, 0.5f);
          Tensor h = x_host;
          if (norm) {
            h = Tensor::Zeros(DType::kF32, {1, in});
            cpu::RmsNorm(x_host, gamma_host, 1e-6, &h);
          }
          Tensor both = Tensor::Zeros(DType::kF32, {1, 2 * n});
          cpu::Linear(h, w_host, bias_host, &both);
          const std::vector<float> bv = both.ToF32Vector();
          const Tensor up_ref = Tensor::FromF32(
              std::vector<float>(bv.begin(), bv.begin() + n), {1, n});
          const Tensor gate_ref = Tensor::FromF32(
              std::vector<float>(bv.begin() + n, bv.end()), {1, n});
          Tensor y_ref = up_ref;
          cpu::GatedActivate(Activation::kSilu, gate_ref, &y_ref);

          GemvOptions options;
          options.warps_per_row = wpr;
          options.activation = Activation::kSilu;
          options.activation_from_row = n;
          options.gated_pairs = true;
          if (norm) options.norm = GemvNorm{Upload(gamma_host), Tensor(), 1e-6};
          Tensor y = PoisonedDevice(DType::kF32, {1, n});
          const std::vector<float> got =
              RunOnDevice(x_host, w_host, bias_host, options, &y);
          ASSERT_FALSE(got.empty());
          EXPECT_LT(RelativeError(got, y_ref.ToF32Vector()), 2e-5);
        }
      }
    }
  }
}

// DeviceContext::gemv_occupancy_bounds only changes how many blocks an SM
// the one-row kernels fit: the same bits with and without it, and never
// fewer resident warps with it.
TEST_F(GemvTest, OccupancyBoundsKeepTheBits) {
  std::vector<std::array<int, 2>> warps;  // The context is this test's own.
  ASSERT_NO_FATAL_FAILURE(ExpectOneRowBitsBothWays(
      [this](bool on) { ctx().set_gemv_occupancy_bounds(on); }, &warps));
  for (const std::array<int, 2>& w : warps) EXPECT_GE(w[1], w[0]);
}

// DeviceContext::gemv_weights_evict_first only hints L2 which lines to drop
// first: the same bits with and without it, and the same resident warps
// (the policy sits in a uniform register).
TEST_F(GemvTest, WeightsEvictFirstKeepsTheBits) {
  std::vector<std::array<int, 2>> warps;  // The context is this test's own.
  ASSERT_NO_FATAL_FAILURE(ExpectOneRowBitsBothWays(
      [this](bool on) { ctx().set_gemv_weights_evict_first(on); }, &warps));
  for (const std::array<int, 2>& w : warps) EXPECT_EQ(w[1], w[0]);
}

// DeviceContext::gemv_deep_mma: a tensor-core grid that fits the GPU in one
// wave runs the build with twice the loads in flight a warp (and, with early
// loads, its first ones before the PDL wait). It feeds the same units to the
// same mma in the same order, so the bits must be the register kernel's:
// with partial last units, rows past a 16-row group, K splits, bias and the
// residual add.
TEST_F(GemvTest, DeepMmaKeepsTheBits) {
  const std::vector<Shape2> shapes = {
      {37, 4096}, {515, 2056}, {8, 776}, {1000, 4096}};
  for (const Shape2& s : shapes) {
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      for (int64_t batch : {3, 4, 8}) {
        const Tensor x = Upload(RandomHost({batch, s.in}));
        const Tensor w = Upload(
            RandomHost({s.out, s.in}, dtype, 1.0f / std::sqrt(float(s.in))));
        const Tensor bias = Upload(RandomHost({s.out}));
        const Tensor old_y = RandomHost({batch, s.out});
        for (int splits : {0, 3}) {
          GemvOptions options;
          options.path = GemvPath::kTensorCore;
          options.k_splits = splits;
          options.accumulate = splits == 3;
          auto run = [&](bool deep, bool early) {
            ctx().set_gemv_deep_mma(deep);
            ctx().set_gemv_early_loads(early);
            absl::StatusOr<GemvPlan> plan = PlanGemv(ctx(), x, w, options);
            EXPECT_TRUE(plan.ok()) << plan.status();
            if (plan.ok())
              EXPECT_EQ(plan->deep_mma, deep) << plan->DebugString();
            Tensor y = options.accumulate
                           ? Upload(old_y)
                           : PoisonedDevice(DType::kF32, {batch, s.out});
            const absl::Status status = Gemv(ctx(), x, w, bias, &y, options);
            EXPECT_TRUE(status.ok()) << status;
            return Download(y);
          };
          SCOPED_TRACE(::testing::Message()
                       << DTypeName(dtype) << " out=" << s.out << " in=" << s.in
                       << " batch=" << batch << " k_splits=" << splits << " "
                       << SeedMessage());
          const std::vector<float> want = run(false, true);
          EXPECT_EQ(CountNonFinite(want), 0);
          EXPECT_EQ(run(true, true), want) << "deep, early loads";
          EXPECT_EQ(run(true, false), want) << "deep, loads after the wait";
          ctx().set_gemv_deep_mma(true);  // The defaults.
          ctx().set_gemv_early_loads(true);
        }
      }
    }
  }
}

// The down projection of a few-row step (4096 x 11008, 90 MB): the register
// build splits K in two (512 blocks) to double the warps in flight; where the
// one-wave build holds the 256 unsplit blocks it takes them instead (its
// deeper loads in place of the split, no reduce launch).
TEST_F(GemvTest, OneWaveBuildTakesTheDownProjectionUnsplit) {
  if (ctx().sm_count() < 128) GTEST_SKIP() << "256 blocks need 128 SMs";
  const Tensor x = Upload(RandomHost({4, 11008}));
  const Tensor w = Upload(RandomHost({4096, 11008}, DType::kF16));
  GemvOptions options;
  options.path = GemvPath::kTensorCore;
  ctx().set_gemv_deep_mma(false);
  absl::StatusOr<GemvPlan> split = PlanGemv(ctx(), x, w, options);
  ctx().set_gemv_deep_mma(true);
  absl::StatusOr<GemvPlan> whole = PlanGemv(ctx(), x, w, options);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(split->k_splits, 2) << split->DebugString();
  EXPECT_FALSE(split->deep_mma);
  EXPECT_EQ(whole->k_splits, 1) << whole->DebugString();
  EXPECT_TRUE(whole->deep_mma) << whole->DebugString();
}

TEST_F(GemvTest, FusedNormRejectsWhatItCannotRun) {
  const Tensor w = Upload(RandomHost({16, 64}, DType::kF16));
  const Tensor gamma = Upload(RandomHost({64}, DType::kF16));
  GemvOptions options;
  options.norm = GemvNorm{gamma, Tensor(), 1e-5};
  // More than one row.
  Tensor y2 = PoisonedDevice(DType::kF32, {2, 16});
  EXPECT_EQ(Gemv(ctx(), Upload(RandomHost({2, 64})), w, Tensor(), &y2, options)
                .code(),
            absl::StatusCode::kInvalidArgument);
  // gamma of another dtype.
  options.norm->weight = Upload(RandomHost({64}));
  Tensor y = PoisonedDevice(DType::kF32, {1, 16});
  EXPECT_EQ(
      Gemv(ctx(), Upload(RandomHost({1, 64})), w, Tensor(), &y, options).code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dynsparse::cuda
