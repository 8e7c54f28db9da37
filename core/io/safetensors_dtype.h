// The element types a safetensors header may name. Only some can become a
// Tensor (see tensor_convert.h); the rest are recognised so that errors can say
// "unsupported" rather than "corrupt".
#ifndef DYNSPARSE_CORE_IO_SAFETENSORS_DTYPE_H_
#define DYNSPARSE_CORE_IO_SAFETENSORS_DTYPE_H_

#include <cstddef>
#include <optional>

#include "absl/strings/string_view.h"

namespace dynsparse {

enum class StDType {
  kF64,
  kF32,
  kF16,
  kBF16,
  kI64,
  kI32,
  kI16,
  kI8,
  kU64,
  kU32,
  kU16,
  kU8,
  kBool,
  kF8E4M3,
  kF8E5M2,
};

// "F32" -> kF32 etc.; nullopt for names the format does not define.
std::optional<StDType> ParseStDType(absl::string_view name);
absl::string_view StDTypeName(StDType dtype);
size_t StDTypeSize(StDType dtype);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_SAFETENSORS_DTYPE_H_
