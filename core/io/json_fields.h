// Typed, non-throwing access to the fields of a JSON object, with errors that
// name the file and the field: "config.json: field 'rope_scaling.factor':
// missing". A JSON null counts as absent, as transformers writes nulls for
// unset optional fields.
#ifndef DYNSPARSE_CORE_IO_JSON_FIELDS_H_
#define DYNSPARSE_CORE_IO_JSON_FIELDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

class JsonFields {
 public:
  // `object` must outlive this reader and its nested readers. `prefix` is the
  // dotted path of the object within the file ("" for the root).
  JsonFields(const nlohmann::json& object, std::string label,
             std::string prefix = "");

  bool Has(absl::string_view field) const;  // Present and not null.

  // Required fields: "missing" when absent or null.
  absl::StatusOr<int64_t> Int(absl::string_view field) const;
  absl::StatusOr<double> Double(absl::string_view field) const;
  absl::StatusOr<std::string> String(absl::string_view field) const;
  absl::StatusOr<JsonFields> Object(absl::string_view field) const;

  // Optional fields: `fallback` when absent or null, an error when present
  // with the wrong type.
  absl::StatusOr<int64_t> IntOr(absl::string_view field,
                                int64_t fallback) const;
  absl::StatusOr<double> DoubleOr(absl::string_view field,
                                  double fallback) const;
  absl::StatusOr<bool> BoolOr(absl::string_view field, bool fallback) const;
  absl::StatusOr<std::string> StringOr(absl::string_view field,
                                       std::string fallback) const;
  // An integer or a list of integers (eos_token_id); empty when absent.
  absl::StatusOr<std::vector<int64_t>> IntOrIntList(
      absl::string_view field) const;

  // The object's own members (for nested-structure checks).
  const nlohmann::json& object() const { return *object_; }

  // "<label>: field '<prefix.field>': <message>", as InvalidArgument.
  absl::Status Error(absl::string_view field, absl::string_view message) const;
  std::string FieldPath(absl::string_view field) const;
  const std::string& label() const { return label_; }

 private:
  const nlohmann::json* Get(absl::string_view field) const;  // null if absent
  absl::StatusOr<int64_t> AsInt(const nlohmann::json& value,
                                absl::string_view field) const;

  const nlohmann::json* object_;
  std::string label_;
  std::string prefix_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_JSON_FIELDS_H_
