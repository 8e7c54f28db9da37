// TensorSource: tensors by name from one .safetensors file or from the shards
// listed in a model.safetensors.index.json, so weight mapping need not care
// how the checkpoint was split.
#ifndef DYNSPARSE_CORE_IO_TENSOR_SOURCE_H_
#define DYNSPARSE_CORE_IO_TENSOR_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/io/safetensors.h"
#include "core/tensor.h"

namespace dynsparse {

class TensorSource {
 public:
  static absl::StatusOr<TensorSource> FromFile(const std::string& path);
  // Opens every shard and checks each mapped tensor is in its shard.
  static absl::StatusOr<TensorSource> FromIndex(const std::string& index_path);
  // <dir>/model.safetensors, else <dir>/model.safetensors.index.json.
  static absl::StatusOr<TensorSource> FromHfFolder(const std::string& dir);

  // The path errors cite: the single file, or the index of a sharded one.
  const std::string& label() const { return label_; }
  // The file holding `name` (its shard when sharded), else label().
  const std::string& PathOf(absl::string_view name) const;
  bool Contains(absl::string_view name) const { return Find(name) != nullptr; }
  // nullptr when absent.
  const SafetensorsEntry* Find(absl::string_view name) const;
  std::vector<std::string> Names() const;
  // Bytes of tensor data across all files opened.
  uint64_t tensor_bytes() const;

  absl::StatusOr<Tensor> Load(absl::string_view name) const;
  absl::StatusOr<Tensor> Load(absl::string_view name, DType dtype) const;
  // The stored bytes of `name` (empty when absent).
  absl::Span<const uint8_t> RawBytes(absl::string_view name) const;

 private:
  TensorSource() = default;
  const SafetensorsFile* FileOf(absl::string_view name) const;

  std::string label_;
  // shared_ptr: a source is movable and its files are never copied.
  std::vector<std::shared_ptr<const SafetensorsFile>> files_;
  std::map<std::string, size_t, std::less<>> owner_;  // tensor -> files_ index
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_TENSOR_SOURCE_H_
