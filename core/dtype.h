// Element types a Tensor can hold, and the f16/bf16 <-> f32 conversions.
#ifndef DYNSPARSE_CORE_DTYPE_H_
#define DYNSPARSE_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

// Floating types are the three a model may be run in; kI32 carries token ids
// and index sets.
enum class DType { kF32, kF16, kBF16, kI32 };

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);  // "f32", "f16", "bf16", "i32"
// Parses "f32" | "f16" | "bf16" (also "float32", "float16", "bfloat16").
absl::StatusOr<DType> ParseDType(absl::string_view name);

// IEEE binary16 and bfloat16 stored as raw bits; conversions round to nearest
// even, as torch does, so weights converted at load match HF bit for bit.
inline float BF16ToF32(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &word, sizeof(out));
  return out;
}

inline uint16_t F32ToBF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  if ((word & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays NaN.
  const uint32_t rounding = 0x7fffu + ((word >> 16) & 1u);
  return static_cast<uint16_t>((word + rounding) >> 16);
}

float F16ToF32(uint16_t bits);
uint16_t F32ToF16(float value);

// Converts `count` elements between the floating dtypes (and i32 -> i32).
void ConvertElements(DType from, const void* src, DType to, void* dst,
                     size_t count);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_DTYPE_H_
