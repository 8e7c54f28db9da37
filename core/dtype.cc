#include "core/dtype.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/logging.h"

namespace dynsparse {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
      return 2;
    case DType::kBF16:
      return 2;
    case DType::kI32:
      return 4;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
  }
  return "?";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  if (name == "f32" || name == "float32") return DType::kF32;
  if (name == "f16" || name == "float16") return DType::kF16;
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "' (valid: f32, f16, bf16)"));
}

float F16ToF32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t word;
  if (exponent == 0) {
    if (mantissa == 0) {
      word = sign;
    } else {  // Subnormal: normalise into an f32 exponent.
      int shift = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ffu;
      word = sign | (static_cast<uint32_t>(127 - 15 - shift + 1) << 23) |
             (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else {
    word = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &word, sizeof(out));
  return out;
}

uint16_t F32ToF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  const uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000u);
  const uint32_t abs = word & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // Overflow rounds to inf.
  if (abs < 0x38800000u) {  // Result is subnormal or zero in f16.
    const float magnitude = std::fabs(value);
    // 2^-24 is the f16 subnormal step; nearbyint rounds half to even.
    const float steps = std::nearbyint(magnitude * 16777216.0f);
    return sign | static_cast<uint16_t>(steps);
  }
  const uint32_t rounding = 0xfffu + ((abs >> 13) & 1u);
  const uint32_t rounded = abs + rounding;
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

void ConvertElements(DType from, const void* src, DType to, void* dst,
                     size_t count) {
  if (from == to) {
    std::memcpy(dst, src, count * DTypeSize(from));
    return;
  }
  DS_CHECK(from != DType::kI32 && to != DType::kI32)
      << "cannot convert between i32 and floating types";
  // Go through f32; the float paths are all that model loading needs.
  auto load = [&](size_t i) -> float {
    switch (from) {
      case DType::kF32:
        return static_cast<const float*>(src)[i];
      case DType::kF16:
        return F16ToF32(static_cast<const uint16_t*>(src)[i]);
      case DType::kBF16:
        return BF16ToF32(static_cast<const uint16_t*>(src)[i]);
      case DType::kI32:
        break;
    }
    return 0.0f;
  };
  for (size_t i = 0; i < count; ++i) {
    const float v = load(i);
    switch (to) {
      case DType::kF32:
        static_cast<float*>(dst)[i] = v;
        break;
      case DType::kF16:
        static_cast<uint16_t*>(dst)[i] = F32ToF16(v);
        break;
      case DType::kBF16:
        static_cast<uint16_t*>(dst)[i] = F32ToBF16(v);
        break;
      case DType::kI32:
        break;
    }
  }
}

}  // namespace dynsparse
