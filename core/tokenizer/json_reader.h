// Typed, exception-free access to nlohmann::json values that remembers where
// each value sits, so every error names the file and the field, e.g.
// "/m/tokenizer.json: model.merges[12]: token 'xx' not in vocab".
#ifndef DYNSPARSE_CORE_TOKENIZER_JSON_READER_H_
#define DYNSPARSE_CORE_TOKENIZER_JSON_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dynsparse::tok {

// Reads and parses a JSON file; errors name the file.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// A (possibly missing) JSON value plus its file and path.
class JsonRef {
 public:
  JsonRef(const nlohmann::json* value, std::string file, std::string path)
      : value_(value), file_(std::move(file)), path_(std::move(path)) {}
  static JsonRef Root(const nlohmann::json& value, const std::string& file) {
    return JsonRef(&value, file, "");
  }

  // Children: missing when this is not an object/array or has no such entry.
  JsonRef operator[](std::string_view key) const;
  JsonRef operator[](size_t index) const;

  bool missing() const { return value_ == nullptr; }
  bool is_null() const { return value_ == nullptr || value_->is_null(); }
  const nlohmann::json& json() const { return *value_; }  // !missing() only.
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }

  // InvalidArgument "<file>: <path>: <message>".
  absl::Status Error(std::string_view message) const;

  // Required values: an error when missing, null or of another type.
  absl::StatusOr<std::string> String() const;
  absl::StatusOr<bool> Bool() const;
  absl::StatusOr<int64_t> Int() const;
  absl::StatusOr<size_t> ArraySize() const;  // Checks it is an array.
  absl::Status CheckObject() const;

  // Optional values: the default when missing or null, an error when of
  // another type.
  absl::StatusOr<std::optional<std::string>> OptionalString() const;
  absl::StatusOr<bool> BoolOr(bool default_value) const;
  absl::StatusOr<int64_t> IntOr(int64_t default_value) const;

  // A one-char string (Metaspace replacement, Strip content).
  absl::StatusOr<char32_t> Char() const;

 private:
  absl::Status TypeError(std::string_view expected) const;

  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_JSON_READER_H_
