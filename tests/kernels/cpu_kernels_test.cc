// CPU kernels against double-precision loops on fresh random data, with
// lengths that exercise the vector loops' tails.
#include "kernels/cpu/cpu_kernels.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_dot.h"

namespace dynsparse {
namespace {

std::vector<float> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

class GemvTest : public ::testing::TestWithParam<std::tuple<DType, int64_t>> {};

TEST_P(GemvTest, MatchesDoubleReferenceOnStoredWeights) {
  const auto [dtype, in] = GetParam();
  const int64_t out = 7;
  const Tensor w = Tensor::FromF32(RandomValues(out * in, 1), {out, in}, dtype);
  const std::vector<float> stored = w.ToF32Vector();  // After rounding.
  const std::vector<float> x = RandomValues(in, 2);
  std::vector<float> y(out, NAN);
  cpu::Gemv(w, x.data(), y.data());
  for (int64_t o = 0; o < out; ++o) {
    double ref = 0.0;
    for (int64_t i = 0; i < in; ++i) ref += double{stored[o * in + i]} * x[i];
    EXPECT_NEAR(y[o], ref, 1e-5 * std::sqrt(static_cast<double>(in)) + 1e-5)
        << DTypeName(dtype) << " row " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(
    DTypesAndLengths, GemvTest,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF16,
                                         DType::kBF16),
                       ::testing::Values(1, 15, 16, 37, 256, 1001)));

TEST(LinearTest, PrefillGemmEqualsRowByRowGemv) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int64_t n = 5, in = 70, out = 130;  // > one 64-row weight panel.
    const Tensor w =
        Tensor::FromF32(RandomValues(out * in, 3), {out, in}, dtype);
    const Tensor bias = Tensor::FromF32(RandomValues(out, 4), {out});
    const Tensor x = Tensor::FromF32(RandomValues(n * in, 5), {n, in});
    Tensor y = Tensor::Zeros(DType::kF32, {n, out});
    cpu::Linear(x, w, bias, &y);
    for (int64_t r = 0; r < n; ++r) {
      Tensor row_out = Tensor::Zeros(DType::kF32, {1, out});
      cpu::Linear(x.Rows(r, r + 1), w, bias, &row_out);
      for (int64_t o = 0; o < out; ++o) {
        EXPECT_NEAR(y.data<float>()[r * out + o], row_out.data<float>()[o],
                    1e-4);
      }
    }
  }
}

// The GEMM's panel widening (vectorised where the CPU has F16C) gives the
// values of the scalar conversions for every 16-bit pattern, NaN included.
TEST(WidenToF32Test, EveryBitPatternMatchesTheScalarConversion) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> out(all.size());
  for (bool bf16 : {false, true}) {
    if (bf16) {
      cpu::WidenToF32(all.data(), out.data(), 65536, std::true_type{});
    } else {
      cpu::WidenToF32(all.data(), out.data(), 65536, std::false_type{});
    }
    for (uint32_t i = 0; i < all.size(); ++i) {
      const float want = bf16 ? BF16ToF32(all[i]) : F16ToF32(all[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << (bf16 ? "bf16 " : "f16 ") << i;
      } else {
        EXPECT_EQ(out[i], want) << (bf16 ? "bf16 " : "f16 ") << i;
      }
    }
  }
}

}  // namespace
}  // namespace dynsparse
