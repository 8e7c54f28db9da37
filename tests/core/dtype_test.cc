#include "core/dtype.h"

#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace dynsparse {
namespace {

TEST(DTypeTest, F16KnownBitPatterns) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(-2.0f), 0xc000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);       // Largest finite f16.
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);       // Rounds up to infinity.
  EXPECT_EQ(F32ToF16(5.9604645e-8f), 0x0001);  // Smallest subnormal.
  EXPECT_EQ(F32ToF16(0.0f), 0x0000);
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(std::nanf("")))));
  EXPECT_FLOAT_EQ(F16ToF32(0x3555), 0.33325195f);
  EXPECT_FLOAT_EQ(F16ToF32(0x0001), 5.9604645e-8f);
}

TEST(DTypeTest, F16RoundsHalfToEven) {
  // 1 + 2^-11 is exactly between 1 and the next f16 (1 + 2^-10): even wins.
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 lies between 0x3c01 and 0x3c02: even (0x3c02) wins.
  EXPECT_EQ(F32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(DTypeTest, F16RoundTripIsExactForEveryFiniteValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    if ((h & 0x7c00) == 0x7c00) continue;  // inf / NaN
    ASSERT_EQ(F32ToF16(F16ToF32(h)), h) << std::hex << bits;
  }
}

TEST(DTypeTest, BF16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBF16(1.0f), 0x3f80);
  EXPECT_EQ(F32ToBF16(-3.0f), 0xc040);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: even (1.0) wins.
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(F32ToBF16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_FLOAT_EQ(BF16ToF32(0x3f80), 1.0f);
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::nanf("")))));
}

TEST(DTypeTest, ConversionErrorIsWithinHalfAnUlp) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 10.0f);
  for (int i = 0; i < 10000; ++i) {
    const float v = dist(rng);
    EXPECT_NEAR(F16ToF32(F32ToF16(v)), v, std::fabs(v) * 0x1p-11f + 1e-7f);
    EXPECT_NEAR(BF16ToF32(F32ToBF16(v)), v, std::fabs(v) * 0x1p-8f);
  }
}

TEST(DTypeTest, ParseDTypeNamesValidChoices) {
  EXPECT_EQ(*ParseDType("bf16"), DType::kBF16);
  EXPECT_EQ(*ParseDType("float16"), DType::kF16);
  const auto bad = ParseDType("f8");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown dtype 'f8' (valid: f32, f16, bf16)");
}

}  // namespace
}  // namespace dynsparse
