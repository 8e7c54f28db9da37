// Parsing and validation of a safetensors JSON header against the size of the
// data region that follows it. Pure: no file access, so every rule can be
// tested on strings.
#ifndef DYNSPARSE_CORE_IO_SAFETENSORS_HEADER_H_
#define DYNSPARSE_CORE_IO_SAFETENSORS_HEADER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/safetensors_dtype.h"
#include "core/tensor.h"

namespace dynsparse {

// The reference implementation's cap; real headers are far smaller.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsEntry {
  StDType dtype = StDType::kF32;
  Shape shape;
  // data_offsets: [begin, end) relative to the start of the data region.
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::map<std::string, SafetensorsEntry, std::less<>> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"
  uint64_t tensor_bytes = 0;                    // Sum of end - begin.
};

// Checks every entry: known dtype, non-negative shape whose byte size (with
// overflow checks) equals end - begin, offsets inside `data_bytes`, and no two
// tensors overlapping. `label` (the file path) prefixes every error.
absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(
    absl::string_view json_text, uint64_t data_bytes, absl::string_view label);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_SAFETENSORS_HEADER_H_
