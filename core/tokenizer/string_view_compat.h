// Debian's Abseil is built with its own absl::string_view (not an alias of
// std::string_view); the tokenizer API uses std::string_view, so calls into
// Abseil (StrCat, hash-map lookups) convert with Sv().
#ifndef DYNSPARSE_CORE_TOKENIZER_STRING_VIEW_COMPAT_H_
#define DYNSPARSE_CORE_TOKENIZER_STRING_VIEW_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace dynsparse::tok {

inline absl::string_view Sv(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_STRING_VIEW_COMPAT_H_
