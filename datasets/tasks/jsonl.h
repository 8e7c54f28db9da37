// Line-by-line JSON reading for task files, with errors as "file:line: ...".
#ifndef DYNSPARSE_DATASETS_TASKS_JSONL_H_
#define DYNSPARSE_DATASETS_TASKS_JSONL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

struct JsonLine {
  int64_t line = 0;  // 1-based line number in the file.
  nlohmann::json value;
};

// One JSON object per non-empty line; a line that does not parse or is not an
// object is an error naming path:line.
absl::StatusOr<std::vector<JsonLine>> ReadJsonl(const std::string& path);

// Typed field access whose errors name path:line and the field.
class JsonFields {
 public:
  JsonFields(const std::string& path, const JsonLine& line)
      : path_(path), line_(line) {}
  absl::StatusOr<std::string> String(const char* field) const;
  absl::StatusOr<int64_t> Int(const char* field) const;
  absl::StatusOr<bool> Bool(const char* field) const;
  absl::StatusOr<std::vector<std::string>> Strings(const char* field) const;
  // A nested object's fields ("target.span1_text").
  absl::StatusOr<JsonFields> Object(const char* field) const;
  absl::Status Error(const std::string& field, const std::string& what) const;

 private:
  JsonFields(const std::string& path, const JsonLine& line, std::string prefix,
             const nlohmann::json* object)
      : path_(path), line_(line), prefix_(std::move(prefix)), object_(object) {}
  absl::StatusOr<const nlohmann::json*> Get(const char* field) const;

  const std::string& path_;
  const JsonLine& line_;
  std::string prefix_;
  const nlohmann::json* object_ = nullptr;  // Null: the line's value.
};

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_TASKS_JSONL_H_
