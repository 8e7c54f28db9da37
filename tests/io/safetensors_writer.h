// Test-only safetensors serialiser, so tests build their own small files
// (valid ones, and deliberately broken ones) instead of shipping binaries.
#ifndef DYNSPARSE_TESTS_IO_SAFETENSORS_WRITER_H_
#define DYNSPARSE_TESTS_IO_SAFETENSORS_WRITER_H_

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace dynsparse::testing {

struct StTensor {
  std::string name;
  std::string dtype;  // As the header spells it: "F32", "BF16", ...
  Shape shape;
  std::string bytes;  // Little-endian element data.
};

template <typename T>
std::string BytesOf(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

inline StTensor F32Tensor(std::string name, Shape shape,
                          const std::vector<float>& values) {
  return {std::move(name), "F32", std::move(shape), BytesOf(values)};
}

// A file laid out as the reference writer does: tensors back to back in the
// given order, header padded with spaces to a multiple of 8 bytes.
std::string SerializeSafetensors(
    const std::vector<StTensor>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// A file with an arbitrary header text: for malformed-input tests. The length
// field is the header's size unless `length_field` overrides it.
std::string RawSafetensors(absl::string_view header, absl::string_view data,
                           int64_t length_field = -1);

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_IO_SAFETENSORS_WRITER_H_
