#include "core/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"

namespace dynsparse {

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  auto opened = OpenRegularFile(path);
  if (!opened.ok()) return opened.status();
  const int fd = opened->fd;
  const size_t size = static_cast<size_t>(opened->size);
  if (size == 0) {  // mmap rejects length 0; callers report the short file.
    ::close(fd);
    return MappedFile(path, std::make_shared<Storage>(nullptr, 0, Device::kCpu,
                                                      [](void*) {}));
  }
  void* data =
      ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // The mapping keeps its own reference to the file.
  if (data == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": mmap of ", size, " bytes failed: ", std::strerror(err)));
  }
  auto storage = std::make_shared<Storage>(
      data, size, Device::kCpu, [size](void* p) { ::munmap(p, size); });
  return MappedFile(path, std::move(storage));
}

}  // namespace dynsparse
