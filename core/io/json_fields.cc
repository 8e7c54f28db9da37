#include "core/io/json_fields.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

using json = nlohmann::json;

std::string Missing() { return "missing"; }

std::string WrongType(absl::string_view expected, const json& value) {
  return absl::StrCat("expected ", expected, ", got ", value.type_name());
}

}  // namespace

JsonFields::JsonFields(const json& object, std::string label,
                       std::string prefix)
    : object_(&object), label_(std::move(label)), prefix_(std::move(prefix)) {}

std::string JsonFields::FieldPath(absl::string_view field) const {
  return prefix_.empty() ? std::string(field)
                         : absl::StrCat(prefix_, ".", field);
}

absl::Status JsonFields::Error(absl::string_view field,
                               absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat(label_, ": field '", FieldPath(field), "': ", message));
}

const json* JsonFields::Get(absl::string_view field) const {
  if (!object_->is_object()) return nullptr;
  auto it = object_->find(field);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::Has(absl::string_view field) const {
  return Get(field) != nullptr;
}

absl::StatusOr<int64_t> JsonFields::AsInt(const json& value,
                                          absl::string_view field) const {
  if (value.is_number_unsigned()) {
    const uint64_t n = value.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(field, absl::StrCat("value ", n, " is too large"));
    }
    return static_cast<int64_t>(n);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    // Some exporters write integral sizes as 4096.0; accept exactly those.
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
    return Error(field, absl::StrCat("expected an integer, got ", d));
  }
  return Error(field, WrongType("an integer", value));
}

absl::StatusOr<int64_t> JsonFields::Int(absl::string_view field) const {
  const json* value = Get(field);
  if (value == nullptr) return Error(field, Missing());
  return AsInt(*value, field);
}

absl::StatusOr<int64_t> JsonFields::IntOr(absl::string_view field,
                                          int64_t fallback) const {
  const json* value = Get(field);
  if (value == nullptr) return fallback;
  return AsInt(*value, field);
}

absl::StatusOr<double> JsonFields::Double(absl::string_view field) const {
  const json* value = Get(field);
  if (value == nullptr) return Error(field, Missing());
  if (!value->is_number()) return Error(field, WrongType("a number", *value));
  return value->get<double>();
}

absl::StatusOr<double> JsonFields::DoubleOr(absl::string_view field,
                                            double fallback) const {
  if (!Has(field)) return fallback;
  return Double(field);
}

absl::StatusOr<bool> JsonFields::BoolOr(absl::string_view field,
                                        bool fallback) const {
  const json* value = Get(field);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return Error(field, WrongType("a boolean", *value));
  return value->get<bool>();
}

absl::StatusOr<std::string> JsonFields::String(absl::string_view field) const {
  const json* value = Get(field);
  if (value == nullptr) return Error(field, Missing());
  if (!value->is_string()) return Error(field, WrongType("a string", *value));
  return value->get<std::string>();
}

absl::StatusOr<std::string> JsonFields::StringOr(absl::string_view field,
                                                 std::string fallback) const {
  if (!Has(field)) return fallback;
  return String(field);
}

absl::StatusOr<JsonFields> JsonFields::Object(absl::string_view field) const {
  const json* value = Get(field);
  if (value == nullptr) return Error(field, Missing());
  if (!value->is_object()) return Error(field, WrongType("an object", *value));
  return JsonFields(*value, label_, FieldPath(field));
}

absl::StatusOr<std::vector<int64_t>> JsonFields::IntOrIntList(
    absl::string_view field) const {
  const json* value = Get(field);
  std::vector<int64_t> out;
  if (value == nullptr) return out;
  if (!value->is_array()) {
    if (!value->is_number()) {
      return Error(field,
                   WrongType("an integer or a list of integers", *value));
    }
    absl::StatusOr<int64_t> id = AsInt(*value, field);
    if (!id.ok()) return id.status();
    out.push_back(*id);
    return out;
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const std::string element = absl::StrCat(field, "[", i, "]");
    absl::StatusOr<int64_t> id = AsInt((*value)[i], element);
    if (!id.ok()) return id.status();
    out.push_back(*id);
  }
  return out;
}

}  // namespace dynsparse
