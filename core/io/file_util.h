// Small filesystem helpers shared by the loaders: whole-file reads with a size
// cap and path joining. Errors are absl::Status values naming the path.
#ifndef DYNSPARSE_CORE_IO_FILE_UTIL_H_
#define DYNSPARSE_CORE_IO_FILE_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

// Reads a whole file; fails if it is not a regular file or exceeds max_bytes
// (configs and indexes are small, so a huge one is a mistake, not data).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          int64_t max_bytes);

// An open read-only descriptor of a regular file and its size in bytes; the
// caller closes `fd`. Errors name the path.
struct OpenedFile {
  int fd = -1;
  int64_t size = 0;
};
absl::StatusOr<OpenedFile> OpenRegularFile(const std::string& path);

// "dir" + "/" + "name" without doubling the separator.
std::string JoinPath(absl::string_view dir, absl::string_view name);

// The folder part of `path`: "." for a bare file name, "/" at the root.
std::string DirName(const std::string& path);

bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_FILE_UTIL_H_
