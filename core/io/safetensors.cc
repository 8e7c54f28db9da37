#include "core/io/safetensors.h"

#include <bit>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/io/tensor_convert.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace {

// The format is little-endian and tensors are used in place.
static_assert(std::endian::native == std::endian::little,
              "safetensors loading assumes a little-endian host");

constexpr uint64_t kLengthFieldBytes = 8;

}  // namespace

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  const uint64_t size = file.size();
  if (size < kLengthFieldBytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": truncated: ", size,
                     " bytes, too short for the 8-byte header length"));
  }
  uint64_t header_length;
  std::memcpy(&header_length, file.data(), sizeof(header_length));
  if (header_length > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header length ", header_length, " exceeds the ",
                     kMaxSafetensorsHeaderBytes, "-byte limit"));
  }
  if (header_length > size - kLengthFieldBytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": header length ", header_length, " exceeds the ",
                     size - kLengthFieldBytes,
                     " bytes after the length field (truncated file?)"));
  }
  const absl::string_view header_text(
      reinterpret_cast<const char*>(file.data()) + kLengthFieldBytes,
      header_length);
  const uint64_t data_start = kLengthFieldBytes + header_length;
  ASSIGN_OR_RETURN(
      SafetensorsHeader header,
      ParseSafetensorsHeader(header_text, size - data_start, path));
  return SafetensorsFile(std::move(file), data_start, std::move(header));
}

const SafetensorsEntry* SafetensorsFile::Find(absl::string_view name) const {
  auto it = header_.tensors.find(name);
  return it == header_.tensors.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::Names() const {
  std::vector<std::string> names;
  names.reserve(header_.tensors.size());
  for (const auto& [name, entry] : header_.tensors) names.push_back(name);
  return names;
}

absl::StatusOr<Tensor> SafetensorsFile::Load(absl::string_view name) const {
  const SafetensorsEntry* entry = Find(name);
  if (entry == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path(), ": tensor '", name, "': missing"));
  }
  const std::optional<DType> natural = NaturalDType(entry->dtype);
  // An unsupported type still goes through MaterializeTensor for its message.
  return Load(name, natural.value_or(DType::kF32));
}

absl::StatusOr<Tensor> SafetensorsFile::Load(absl::string_view name,
                                             DType dtype) const {
  const SafetensorsEntry* entry = Find(name);
  if (entry == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path(), ": tensor '", name, "': missing"));
  }
  RawTensor raw;
  raw.storage = file_.storage();
  raw.byte_offset = data_start_ + entry->begin;
  raw.dtype = entry->dtype;
  raw.shape = entry->shape;
  return MaterializeTensor(raw, dtype,
                           absl::StrCat(path(), ": tensor '", name, "'"));
}

}  // namespace dynsparse
