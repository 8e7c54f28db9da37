// RMSNorm / LayerNorm (optionally fused with the residual add) against
// kernels/cpu. The CPU reduces in double, the GPU in f32 (as documented):
// relative error ~1e-7..1e-6, bounded by kTolerance = 1e-5.
#include "kernels/cuda/norms.h"

#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/graph_ops.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

using testutil::CudaTest;
using testutil::RelativeError;

constexpr double kTolerance = 1e-5;

struct RowsWidth {
  int64_t rows;
  int64_t width;
};

const std::vector<RowsWidth>& Shapes() {
  // Multiples of 4 up to 18432 take NormVecKernel (4 or 12 quads a thread:
  // 9216 and 12288 are OPT-66B's and OPT-175B's decode rows); 7, 8191 and
  // 20001 take NormKernel, with the row in registers or re-read.
  static const std::vector<RowsWidth> shapes = {
      {1, 7},     {3, 64},   {8, 4096},  {5, 5120}, {1, 9216},
      {1, 12288}, {2, 8191}, {4, 16384}, {1, 20001}};
  return shapes;
}

class NormsTest : public CudaTest {
 protected:
  // Inputs with a non-zero mean so LayerNorm's centring matters.
  Tensor Activations(int64_t rows, int64_t width, float offset) {
    std::vector<float> v = RandomValues(rows * width, 2.0f);
    for (float& x : v) x += offset;
    return Tensor::FromF32(v, {rows, width});
  }

  void CheckRms(RowsWidth s, DType w_dtype, bool fused) {
    const Tensor x_host = Activations(s.rows, s.width, 0.5f);
    const Tensor w_host = RandomHost({s.width}, w_dtype);
    const Tensor res_host = Activations(s.rows, s.width, -0.25f);
    const double eps = 1e-6;
    // Reference: h = residual + x; y = RmsNorm(h).
    Tensor h_ref = Tensor::FromF32(res_host.ToF32Vector(), {s.rows, s.width});
    if (fused) cpu::AddInPlace(x_host, &h_ref);
    Tensor y_ref = Tensor::Zeros(DType::kF32, {s.rows, s.width});
    cpu::RmsNorm(fused ? h_ref : x_host, w_host, eps, &y_ref);

    const Tensor x = Upload(x_host);
    const Tensor w = Upload(w_host);
    Tensor res = Upload(res_host);
    Tensor y = PoisonedDevice(DType::kF32, {s.rows, s.width});
    const absl::Status st =
        RmsNorm(ctx(), x, w, eps, &y, fused ? &res : nullptr);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_LT(RelativeError(Download(y), y_ref.ToF32Vector()), kTolerance);
    if (fused) {
      EXPECT_EQ(Download(res), h_ref.ToF32Vector())
          << "residual = residual + x";
    }
  }

  void CheckLayerNorm(RowsWidth s, DType dtype, bool with_weight,
                      bool with_bias, bool fused) {
    const Tensor x_host = Activations(s.rows, s.width, 3.0f);
    const Tensor w_host = with_weight ? RandomHost({s.width}, dtype) : Tensor();
    const Tensor b_host = with_bias ? RandomHost({s.width}, dtype) : Tensor();
    const Tensor res_host = Activations(s.rows, s.width, 1.0f);
    const double eps = 1e-5;
    Tensor h_ref = Tensor::FromF32(res_host.ToF32Vector(), {s.rows, s.width});
    if (fused) cpu::AddInPlace(x_host, &h_ref);
    Tensor y_ref = Tensor::Zeros(DType::kF32, {s.rows, s.width});
    cpu::LayerNorm(fused ? h_ref : x_host, w_host, b_host, eps, &y_ref);

    const Tensor x = Upload(x_host);
    const Tensor w = with_weight ? Upload(w_host) : Tensor();
    const Tensor b = with_bias ? Upload(b_host) : Tensor();
    Tensor res = Upload(res_host);
    Tensor y = PoisonedDevice(DType::kF32, {s.rows, s.width});
    const absl::Status st =
        LayerNorm(ctx(), x, w, b, eps, &y, fused ? &res : nullptr);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_LT(RelativeError(Download(y), y_ref.ToF32Vector()), kTolerance);
    if (fused) {
      EXPECT_EQ(Download(res), h_ref.ToF32Vector());
    }
  }
};

TEST_F(NormsTest, RmsNormMatchesCpu) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const RowsWidth& s : Shapes()) {
      for (bool fused : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << " rows=" << s.rows << " width="
                     << s.width << " fused=" << fused << " " << SeedMessage());
        CheckRms(s, dtype, fused);
      }
    }
  }
}

TEST_F(NormsTest, LayerNormMatchesCpu) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const RowsWidth& s : Shapes()) {
      for (int mask = 0; mask < 8; ++mask) {
        const bool with_weight = mask & 1, with_bias = mask & 2,
                   fused = mask & 4;
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << " rows=" << s.rows
                     << " width=" << s.width << " weight=" << with_weight
                     << " bias=" << with_bias << " fused=" << fused << " "
                     << SeedMessage());
        CheckLayerNorm(s, dtype, with_weight, with_bias, fused);
      }
    }
  }
}

TEST_F(NormsTest, OutputMayAliasInput) {
  const Tensor x_host = RandomHost({3, 1000});
  const Tensor w_host = RandomHost({1000}, DType::kBF16);
  Tensor y_ref = Tensor::Zeros(DType::kF32, {3, 1000});
  cpu::RmsNorm(x_host, w_host, 1e-5, &y_ref);
  Tensor x = Upload(x_host);
  ASSERT_TRUE(RmsNorm(ctx(), x, Upload(w_host), 1e-5, &x).ok());
  EXPECT_LT(RelativeError(Download(x), y_ref.ToF32Vector()), kTolerance)
      << SeedMessage();
}

// An f16/bf16 y holds exactly ConvertF32 of the f32 y (the input a cuBLAS
// prefill GEMM reads), fused or not, for both norms.
TEST_F(NormsTest, RoundedOutputEqualsConvertedF32Output) {
  const Tensor x_host = RandomHost({9, 4096});
  const Tensor res_host = RandomHost({9, 4096});
  for (DType out : {DType::kF16, DType::kBF16}) {
    for (bool layer_norm : {false, true}) {
      for (bool fused : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(out) << " layer_norm=" << layer_norm
                     << " fused=" << fused << " " << SeedMessage());
        const Tensor w = Upload(RandomHost({4096}, out));
        const Tensor x = Upload(x_host);
        const auto run = [&](Tensor* y) {
          Tensor res = Upload(res_host);
          Tensor* r = fused ? &res : nullptr;
          return layer_norm ? LayerNorm(ctx(), x, w, w, 1e-5, y, r)
                            : RmsNorm(ctx(), x, w, 1e-5, y, r);
        };
        Tensor y32 = PoisonedDevice(DType::kF32, {9, 4096});
        ASSERT_TRUE(run(&y32).ok());
        Tensor converted = PoisonedDevice(out, {9, 4096});
        ASSERT_TRUE(ConvertF32(ctx(), y32, &converted).ok());
        Tensor rounded = PoisonedDevice(out, {9, 4096});
        const absl::Status st = run(&rounded);
        ASSERT_TRUE(st.ok()) << st;
        EXPECT_EQ(Download(rounded), Download(converted));
      }
    }
  }
}

TEST_F(NormsTest, RejectsBadOperands) {
  const Tensor x = Upload(RandomHost({2, 16}));
  Tensor y = PoisonedDevice(DType::kF32, {2, 16});
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(RmsNorm(ctx(), x, Tensor(), 1e-5, &y).code(), kInvalid);
  EXPECT_EQ(RmsNorm(ctx(), x, Upload(RandomHost({15})), 1e-5, &y).code(),
            kInvalid);
  Tensor y_bad = PoisonedDevice(DType::kF32, {2, 17});
  EXPECT_EQ(RmsNorm(ctx(), x, Upload(RandomHost({16})), 1e-5, &y_bad).code(),
            kInvalid);
  Tensor res_bad = PoisonedDevice(DType::kF32, {1, 16});
  EXPECT_EQ(LayerNorm(ctx(), x, Tensor(), Tensor(), 1e-5, &y, &res_bad).code(),
            kInvalid);
  EXPECT_EQ(LayerNorm(ctx(), RandomHost({2, 16}), Tensor(), Tensor(), 1e-5, &y)
                .code(),
            kInvalid);
  Tensor y_int = PoisonedDevice(DType::kI32, {2, 16});
  EXPECT_EQ(RmsNorm(ctx(), x, Upload(RandomHost({16})), 1e-5, &y_int).code(),
            kInvalid);
}

}  // namespace
}  // namespace dynsparse::cuda
