#include "core/io/tensor_source.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "core/io/sharded_index.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace {

constexpr absl::string_view kSingleFileName = "model.safetensors";
// Indexes list tensor names only; tens of MB would already be absurd.
constexpr int64_t kMaxIndexBytes = 64 << 20;

}  // namespace

absl::StatusOr<TensorSource> TensorSource::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open(path));
  TensorSource source;
  source.label_ = path;
  for (const auto& [name, entry] : file.tensors()) source.owner_[name] = 0;
  source.files_.push_back(
      std::make_shared<const SafetensorsFile>(std::move(file)));
  return source;
}

absl::StatusOr<TensorSource> TensorSource::FromIndex(
    const std::string& index_path) {
  ASSIGN_OR_RETURN(const std::string text,
                   ReadSmallFile(index_path, kMaxIndexBytes));
  ASSIGN_OR_RETURN(const ShardedIndex index,
                   ParseShardedIndex(text, index_path));
  const std::string dir = DirName(index_path);

  TensorSource source;
  source.label_ = index_path;
  std::map<std::string, size_t, std::less<>> shard_slot;
  for (const std::string& shard : index.shards) {
    absl::StatusOr<SafetensorsFile> file =
        SafetensorsFile::Open(JoinPath(dir, shard));
    if (!file.ok()) {
      return absl::Status(file.status().code(),
                          absl::StrCat(index_path, ": shard '", shard,
                                       "': ", file.status().message()));
    }
    shard_slot[shard] = source.files_.size();
    source.files_.push_back(
        std::make_shared<const SafetensorsFile>(*std::move(file)));
  }
  for (const auto& [tensor, shard] : index.weight_map) {
    const size_t slot = shard_slot.at(shard);
    if (source.files_[slot]->Find(tensor) == nullptr) {
      return absl::NotFoundError(absl::StrCat(index_path, ": tensor '", tensor,
                                              "': mapped to shard '", shard,
                                              "', which has no such tensor"));
    }
    source.owner_[tensor] = slot;
  }
  return source;
}

absl::StatusOr<TensorSource> TensorSource::FromHfFolder(
    const std::string& dir) {
  const std::string single = JoinPath(dir, kSingleFileName);
  if (IsRegularFile(single)) return FromFile(single);
  const std::string index = JoinPath(dir, kShardedIndexName);
  if (IsRegularFile(index)) return FromIndex(index);
  std::string hint;
  if (IsRegularFile(JoinPath(dir, "pytorch_model.bin")) ||
      IsRegularFile(JoinPath(dir, "pytorch_model.bin.index.json"))) {
    hint =
        " (found pytorch_model.bin: PyTorch pickle checkpoints are not "
        "supported; convert the model to safetensors)";
  }
  return absl::NotFoundError(absl::StrCat(dir, ": no ", kSingleFileName, " or ",
                                          kShardedIndexName, hint));
}

const SafetensorsFile* TensorSource::FileOf(absl::string_view name) const {
  auto it = owner_.find(name);
  return it == owner_.end() ? nullptr : files_[it->second].get();
}

const std::string& TensorSource::PathOf(absl::string_view name) const {
  const SafetensorsFile* file = FileOf(name);
  return file == nullptr ? label_ : file->path();
}

const SafetensorsEntry* TensorSource::Find(absl::string_view name) const {
  const SafetensorsFile* file = FileOf(name);
  return file == nullptr ? nullptr : file->Find(name);
}

std::vector<std::string> TensorSource::Names() const {
  std::vector<std::string> names;
  names.reserve(owner_.size());
  for (const auto& [name, slot] : owner_) names.push_back(name);
  return names;
}

uint64_t TensorSource::tensor_bytes() const {
  uint64_t total = 0;
  for (const auto& file : files_) total += file->tensor_bytes();
  return total;
}

absl::StatusOr<Tensor> TensorSource::Load(absl::string_view name) const {
  const SafetensorsFile* file = FileOf(name);
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(label_, ": tensor '", name, "': missing"));
  }
  return file->Load(name);
}

absl::Span<const uint8_t> TensorSource::RawBytes(absl::string_view name) const {
  const SafetensorsFile* file = FileOf(name);
  const SafetensorsEntry* entry = file == nullptr ? nullptr : file->Find(name);
  if (entry == nullptr) return {};
  return file->RawBytes(*entry);
}

absl::StatusOr<Tensor> TensorSource::Load(absl::string_view name,
                                          DType dtype) const {
  const SafetensorsFile* file = FileOf(name);
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(label_, ": tensor '", name, "': missing"));
  }
  return file->Load(name, dtype);
}

}  // namespace dynsparse
