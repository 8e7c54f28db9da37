#include "datasets/text_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

// Returns the offset of the first invalid UTF-8 sequence, or -1.
int64_t FirstInvalidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    int len = c < 0x80           ? 1
              : (c >> 5) == 0x6  ? 2
              : (c >> 4) == 0xe  ? 3
              : (c >> 3) == 0x1e ? 4
                                 : 0;
    if (len == 0 || i + len > s.size()) return static_cast<int64_t>(i);
    for (int k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) {
        return static_cast<int64_t>(i);
      }
    }
    i += len;
  }
  return -1;
}

}  // namespace

absl::StatusOr<std::string> ReadTextFile(const std::string& path,
                                         int64_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(path, ": ", ec.message()));
  if (static_cast<int64_t>(size) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": ", size, " bytes exceeds the ", max_bytes, "-byte limit"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat(path, ": cannot open"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (const int64_t bad = FirstInvalidUtf8(text); bad >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": invalid UTF-8 at byte ", bad));
  }
  return text;
}

}  // namespace dynsparse
