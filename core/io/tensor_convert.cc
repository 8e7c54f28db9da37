#include "core/io/tensor_convert.h"

#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

bool IsFloating(DType dtype) { return dtype != DType::kI32; }

const uint8_t* RawBytes(const RawTensor& raw) {
  return static_cast<const uint8_t*>(raw.storage->data()) + raw.byte_offset;
}

// Kernels may use aligned vector loads, so only element-aligned data is
// handed out as a view; anything else is copied into aligned memory.
bool IsAligned(const RawTensor& raw) {
  const auto address = reinterpret_cast<uintptr_t>(RawBytes(raw));
  return address % StDTypeSize(raw.dtype) == 0;
}

// A view of `raw` as `dtype` (which has the same element size), or an aligned
// copy of the same bytes when the data is misaligned.
Tensor ViewOrAlignedCopy(const RawTensor& raw, DType dtype) {
  if (IsAligned(raw))
    return Tensor(raw.storage, raw.byte_offset, dtype, raw.shape);
  Tensor copy = Tensor::Zeros(dtype, raw.shape);
  std::memcpy(copy.raw_data(), RawBytes(raw), copy.bytes());
  return copy;
}

Tensor F64ToF32(const RawTensor& raw) {
  Tensor out = Tensor::Zeros(DType::kF32, raw.shape);
  const uint8_t* src = RawBytes(raw);
  float* dst = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    double value;  // memcpy: the source may be misaligned.
    std::memcpy(&value, src + i * sizeof(double), sizeof(double));
    dst[i] = static_cast<float>(value);
  }
  return out;
}

absl::StatusOr<Tensor> I64ToI32(const RawTensor& raw, absl::string_view what) {
  Tensor out = Tensor::Zeros(DType::kI32, raw.shape);
  const uint8_t* src = RawBytes(raw);
  int32_t* dst = out.data<int32_t>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t value;
    std::memcpy(&value, src + i * sizeof(int64_t), sizeof(int64_t));
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max()) {
      return absl::OutOfRangeError(absl::StrCat(what, ": I64 value ", value,
                                                " at index ", i,
                                                " does not fit in i32"));
    }
    dst[i] = static_cast<int32_t>(value);
  }
  return out;
}

absl::Status Unsupported(const RawTensor& raw, absl::string_view what) {
  return absl::UnimplementedError(absl::StrCat(
      what, ": unsupported dtype ", StDTypeName(raw.dtype),
      " (loadable: F32, F16, BF16, F64 as weights; I64, I32 as ids)"));
}

}  // namespace

std::optional<DType> NaturalDType(StDType dtype) {
  switch (dtype) {
    case StDType::kF32:
    case StDType::kF64:
      return DType::kF32;
    case StDType::kF16:
      return DType::kF16;
    case StDType::kBF16:
      return DType::kBF16;
    case StDType::kI64:
    case StDType::kI32:
      return DType::kI32;
    default:
      return std::nullopt;
  }
}

absl::StatusOr<Tensor> MaterializeTensor(const RawTensor& raw, DType want,
                                         absl::string_view what) {
  const std::optional<DType> natural = NaturalDType(raw.dtype);
  if (!natural.has_value()) return Unsupported(raw, what);
  if (IsFloating(*natural) != IsFloating(want)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": dtype ", StDTypeName(raw.dtype),
                     " cannot be loaded as ", DTypeName(want)));
  }
  if (raw.dtype == StDType::kF64) {
    Tensor f32 = F64ToF32(raw);
    return want == DType::kF32 ? f32 : f32.ConvertTo(want);
  }
  if (raw.dtype == StDType::kI64) return I64ToI32(raw, what);
  // Same-size storage types from here on: F32, F16, BF16, I32.
  Tensor stored = ViewOrAlignedCopy(raw, *natural);
  return *natural == want ? stored : stored.ConvertTo(want);
}

}  // namespace dynsparse
