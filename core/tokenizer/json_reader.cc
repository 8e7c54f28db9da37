#include "core/tokenizer/json_reader.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/tokenizer/string_view_compat.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  nlohmann::json parsed = nlohmann::json::parse(buffer.str(), /*cb=*/nullptr,
                                                /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  }
  return parsed;
}

JsonRef JsonRef::operator[](std::string_view key) const {
  std::string child_path =
      path_.empty() ? std::string(key) : absl::StrCat(path_, ".", Sv(key));
  if (value_ == nullptr || !value_->is_object()) {
    return JsonRef(nullptr, file_, std::move(child_path));
  }
  const auto it = value_->find(std::string(key));
  return JsonRef(it == value_->end() ? nullptr : &*it, file_,
                 std::move(child_path));
}

JsonRef JsonRef::operator[](size_t index) const {
  std::string child_path = absl::StrCat(path_, "[", index, "]");
  if (value_ == nullptr || !value_->is_array() || index >= value_->size()) {
    return JsonRef(nullptr, file_, std::move(child_path));
  }
  return JsonRef(&(*value_)[index], file_, std::move(child_path));
}

absl::Status JsonRef::Error(std::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(
      file_, ": ", path_.empty() ? "(root)" : path_, ": ", Sv(message)));
}

absl::Status JsonRef::TypeError(std::string_view expected) const {
  if (value_ == nullptr) return Error(absl::StrCat("missing ", Sv(expected)));
  return Error(
      absl::StrCat("expected ", Sv(expected), ", got ", value_->type_name()));
}

absl::StatusOr<std::string> JsonRef::String() const {
  if (value_ == nullptr || !value_->is_string()) return TypeError("a string");
  return value_->get_ref<const std::string&>();
}

absl::StatusOr<bool> JsonRef::Bool() const {
  if (value_ == nullptr || !value_->is_boolean()) {
    return TypeError("a boolean");
  }
  return value_->get<bool>();
}

absl::StatusOr<int64_t> JsonRef::Int() const {
  if (value_ == nullptr || !value_->is_number_integer()) {
    return TypeError("an integer");
  }
  if (value_->is_number_unsigned() &&
      value_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Error("integer out of range");
  }
  return value_->get<int64_t>();
}

absl::StatusOr<size_t> JsonRef::ArraySize() const {
  if (value_ == nullptr || !value_->is_array()) return TypeError("an array");
  return value_->size();
}

absl::Status JsonRef::CheckObject() const {
  if (value_ == nullptr || !value_->is_object()) return TypeError("an object");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> JsonRef::OptionalString() const {
  if (is_null()) return std::optional<std::string>();
  if (!value_->is_string()) return TypeError("a string");
  return std::optional<std::string>(value_->get_ref<const std::string&>());
}

absl::StatusOr<bool> JsonRef::BoolOr(bool default_value) const {
  if (is_null()) return default_value;
  return Bool();
}

absl::StatusOr<int64_t> JsonRef::IntOr(int64_t default_value) const {
  if (is_null()) return default_value;
  return Int();
}

absl::StatusOr<char32_t> JsonRef::Char() const {
  absl::StatusOr<std::string> s = String();
  if (!s.ok()) return s.status();
  if (s->empty()) return Error("expected one character, got \"\"");
  const DecodedChar c = DecodeUtf8(*s, 0);
  if (!c.valid || c.len != s->size()) {
    return Error(absl::StrCat("expected one character, got \"", *s, "\""));
  }
  return c.cp;
}

}  // namespace dynsparse::tok
