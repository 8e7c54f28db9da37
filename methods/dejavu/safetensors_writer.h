// Writing .safetensors files (the predictors DejaVu trains). Reading goes
// through core/io/safetensors.h, which validates everything it maps.
#ifndef DYNSPARSE_METHODS_DEJAVU_SAFETENSORS_WRITER_H_
#define DYNSPARSE_METHODS_DEJAVU_SAFETENSORS_WRITER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/tensor.h"

namespace dynsparse {

// Writes host tensors (f32, f16, bf16, i32) in the given order, with string
// metadata under "__metadata__". Written to PATH.tmp and renamed, so a reader
// never sees a half-written file.
absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// Writes `text` to PATH.tmp, then renames it to PATH.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_SAFETENSORS_WRITER_H_
