// Reading whole text files with errors that name the file.
#ifndef DYNSPARSE_DATASETS_TEXT_FILE_H_
#define DYNSPARSE_DATASETS_TEXT_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace dynsparse {

// Reads `path` as bytes; rejects files over `max_bytes` (default 1 GiB) and
// text that is not valid UTF-8 (reporting the byte offset).
absl::StatusOr<std::string> ReadTextFile(const std::string& path,
                                         int64_t max_bytes = int64_t{1} << 30);

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_TEXT_FILE_H_
