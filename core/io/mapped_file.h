// A whole file mapped into memory, owned by a core Storage so that tensors
// viewing the mapping keep it alive and the last one to go unmaps it.
#ifndef DYNSPARSE_CORE_IO_MAPPED_FILE_H_
#define DYNSPARSE_CORE_IO_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace dynsparse {

class MappedFile {
 public:
  // Maps `path` privately (copy-on-write): code that edits weights in place
  // gets its own pages instead of a fault, and the file is never written.
  static absl::StatusOr<MappedFile> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const uint8_t* data() const {
    return static_cast<const uint8_t*>(storage_->data());
  }
  size_t size() const { return storage_->bytes(); }
  // Unmapped when the last holder (this or a Tensor) releases it.
  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  MappedFile(std::string path, std::shared_ptr<Storage> storage)
      : path_(std::move(path)), storage_(std::move(storage)) {}

  std::string path_;
  std::shared_ptr<Storage> storage_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_MAPPED_FILE_H_
