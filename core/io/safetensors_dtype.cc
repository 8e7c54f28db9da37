#include "core/io/safetensors_dtype.h"

#include <array>
#include <utility>

namespace dynsparse {
namespace {

struct StDTypeInfo {
  StDType dtype;
  absl::string_view name;
  size_t size;
};

constexpr std::array<StDTypeInfo, 15> kStDTypes = {{
    {StDType::kF64, "F64", 8},
    {StDType::kF32, "F32", 4},
    {StDType::kF16, "F16", 2},
    {StDType::kBF16, "BF16", 2},
    {StDType::kI64, "I64", 8},
    {StDType::kI32, "I32", 4},
    {StDType::kI16, "I16", 2},
    {StDType::kI8, "I8", 1},
    {StDType::kU64, "U64", 8},
    {StDType::kU32, "U32", 4},
    {StDType::kU16, "U16", 2},
    {StDType::kU8, "U8", 1},
    {StDType::kBool, "BOOL", 1},
    {StDType::kF8E4M3, "F8_E4M3", 1},
    {StDType::kF8E5M2, "F8_E5M2", 1},
}};

const StDTypeInfo& Info(StDType dtype) {
  for (const StDTypeInfo& info : kStDTypes) {
    if (info.dtype == dtype) return info;
  }
  return kStDTypes[0];  // Unreachable: every enumerator is in the table.
}

}  // namespace

std::optional<StDType> ParseStDType(absl::string_view name) {
  for (const StDTypeInfo& info : kStDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

absl::string_view StDTypeName(StDType dtype) { return Info(dtype).name; }

size_t StDTypeSize(StDType dtype) { return Info(dtype).size; }

}  // namespace dynsparse
