#include "datasets/text_file.h"

#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse {
namespace {

// Byte offset of the first invalid UTF-8 sequence (by the same decoder the
// tokenizers use), or -1 when the text is valid.
int64_t FirstInvalidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const tok::DecodedChar c = tok::DecodeUtf8(s, i);
    if (!c.valid) return static_cast<int64_t>(i);
    i += c.len;
  }
  return -1;
}

}  // namespace

absl::StatusOr<std::string> ReadTextFile(const std::string& path,
                                         int64_t max_bytes) {
  auto text = ReadSmallFile(path, max_bytes);
  if (!text.ok()) return text.status();
  if (const int64_t bad = FirstInvalidUtf8(*text); bad >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": invalid UTF-8 at byte ", bad));
  }
  return text;
}

}  // namespace dynsparse
