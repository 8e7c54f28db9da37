// Turns the bytes of one stored tensor into a Tensor of the requested dtype:
// a view of the file mapping when the bytes can be used as they are, otherwise
// a converted host copy.
#ifndef DYNSPARSE_CORE_IO_TENSOR_CONVERT_H_
#define DYNSPARSE_CORE_IO_TENSOR_CONVERT_H_

#include <cstddef>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/safetensors_dtype.h"
#include "core/tensor.h"

namespace dynsparse {

// Where a stored tensor's bytes are. The caller has checked that
// [byte_offset, byte_offset + numel * size) lies inside `storage`.
struct RawTensor {
  std::shared_ptr<Storage> storage;
  size_t byte_offset = 0;
  StDType dtype = StDType::kF32;
  Shape shape;
};

// The dtype a stored type loads to when none is requested: F32/F16/BF16 stay,
// F64 narrows to f32, I64/I32 become i32 ids; nullopt for the rest.
std::optional<DType> NaturalDType(StDType dtype);

// Floating stored types load as any floating `want`; I64/I32 load as i32.
// `what` prefixes error messages, e.g. "model.safetensors: tensor 'x'".
absl::StatusOr<Tensor> MaterializeTensor(const RawTensor& raw, DType want,
                                         absl::string_view what);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_TENSOR_CONVERT_H_
