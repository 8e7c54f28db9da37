#include "datasets/tasks/jsonl.h"

#include "absl/strings/str_cat.h"
#include "datasets/text_file.h"

namespace dynsparse {

absl::StatusOr<std::vector<JsonLine>> ReadJsonl(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  std::vector<JsonLine> lines;
  int64_t number = 0;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    ++number;
    const std::string_view line(text->data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json value =
        nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number, ": not a JSON object"));
    }
    lines.push_back({number, std::move(value)});
  }
  return lines;
}

absl::Status JsonFields::Error(const std::string& field,
                               const std::string& what) const {
  return absl::InvalidArgumentError(absl::StrCat(
      path_, ":", line_.line, ": field '", prefix_, field, "' ", what));
}

absl::StatusOr<const nlohmann::json*> JsonFields::Get(const char* field) const {
  const nlohmann::json& obj = object_ ? *object_ : line_.value;
  auto it = obj.find(field);
  if (it == obj.end()) return Error(field, "is missing");
  return &*it;
}

absl::StatusOr<std::string> JsonFields::String(const char* field) const {
  auto v = Get(field);
  if (!v.ok()) return v.status();
  if (!(*v)->is_string()) return Error(field, "is not a string");
  return (*v)->get<std::string>();
}

absl::StatusOr<int64_t> JsonFields::Int(const char* field) const {
  auto v = Get(field);
  if (!v.ok()) return v.status();
  if (!(*v)->is_number_integer()) return Error(field, "is not an integer");
  return (*v)->get<int64_t>();
}

absl::StatusOr<bool> JsonFields::Bool(const char* field) const {
  auto v = Get(field);
  if (!v.ok()) return v.status();
  if (!(*v)->is_boolean()) return Error(field, "is not a boolean");
  return (*v)->get<bool>();
}

absl::StatusOr<std::vector<std::string>> JsonFields::Strings(
    const char* field) const {
  auto v = Get(field);
  if (!v.ok()) return v.status();
  if (!(*v)->is_array() || (*v)->empty()) {
    return Error(field, "is not a non-empty list of strings");
  }
  std::vector<std::string> out;
  for (const nlohmann::json& s : **v) {
    if (!s.is_string()) return Error(field, "is not a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

absl::StatusOr<JsonFields> JsonFields::Object(const char* field) const {
  auto v = Get(field);
  if (!v.ok()) return v.status();
  if (!(*v)->is_object()) return Error(field, "is not an object");
  return JsonFields(path_, line_, absl::StrCat(prefix_, field, "."), *v);
}

}  // namespace dynsparse
