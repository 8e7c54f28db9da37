// JSON parsing for untrusted files: never throws, caps nesting depth (a
// pathological header must not exhaust the stack), and reports where the text
// went wrong.
#ifndef DYNSPARSE_CORE_IO_JSON_UTIL_H_
#define DYNSPARSE_CORE_IO_JSON_UTIL_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

// Deeper than any real config or safetensors header (those are 1-4 levels).
inline constexpr int kMaxJsonDepth = 64;

// Errors read "<label>: invalid JSON: <parser message>".
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text,
                                         absl::string_view label);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_JSON_UTIL_H_
