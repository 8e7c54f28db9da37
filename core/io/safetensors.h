// A memory-mapped .safetensors file: an 8-byte little-endian header length,
// a JSON header, then the tensor bytes. Tensors load as views of the mapping
// when no conversion is needed.
#ifndef DYNSPARSE_CORE_IO_SAFETENSORS_H_
#define DYNSPARSE_CORE_IO_SAFETENSORS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/io/mapped_file.h"
#include "core/io/safetensors_header.h"
#include "core/tensor.h"

namespace dynsparse {

class SafetensorsFile {
 public:
  // Maps and validates the whole header; tensor bytes are not touched.
  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, SafetensorsEntry, std::less<>>& tensors() const {
    return header_.tensors;
  }
  const std::map<std::string, std::string>& metadata() const {
    return header_.metadata;
  }
  // nullptr when the file has no tensor of that name.
  const SafetensorsEntry* Find(absl::string_view name) const;
  std::vector<std::string> Names() const;
  uint64_t tensor_bytes() const { return header_.tensor_bytes; }

  // In the stored type's natural dtype (see NaturalDType).
  absl::StatusOr<Tensor> Load(absl::string_view name) const;
  // Converted to `dtype` (a view when it already is that dtype).
  absl::StatusOr<Tensor> Load(absl::string_view name, DType dtype) const;
  // The stored bytes of one of this file's entries (bounds checked at Open).
  absl::Span<const uint8_t> RawBytes(const SafetensorsEntry& entry) const {
    return absl::MakeConstSpan(file_.data() + data_start_ + entry.begin,
                               entry.end - entry.begin);
  }

 private:
  SafetensorsFile(MappedFile file, uint64_t data_start,
                  SafetensorsHeader header)
      : file_(std::move(file)),
        data_start_(data_start),
        header_(std::move(header)) {}

  MappedFile file_;
  uint64_t data_start_;  // 8 + header length.
  SafetensorsHeader header_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_SAFETENSORS_H_
