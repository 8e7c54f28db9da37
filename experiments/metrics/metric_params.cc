#include "experiments/metrics/metric_params.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dynsparse {
namespace {

// A short rendering of a JSON value for error messages.
std::string Show(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// YAML scalars may reach us as strings ("1024") or as JSON numbers; both are
// accepted so the harness need not guess types.
bool ToInt(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d != static_cast<double>(static_cast<int64_t>(d))) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  return v.is_string() && absl::SimpleAtoi(v.get<std::string>(), out);
}

bool ToDouble(const nlohmann::json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return true;
  }
  return v.is_string() && absl::SimpleAtod(v.get<std::string>(), out);
}

bool ToBool(const nlohmann::json& v, bool* out) {
  if (v.is_boolean()) {
    *out = v.get<bool>();
    return true;
  }
  return v.is_string() && absl::SimpleAtob(v.get<std::string>(), out);
}

bool ToString(const nlohmann::json& v, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return true;
  }
  if (v.is_number() || v.is_boolean()) {
    *out = v.dump();
    return true;
  }
  return false;
}

}  // namespace

MetricParams::MetricParams(nlohmann::json values, std::string path)
    : values_(values.is_null() ? nlohmann::json::object() : std::move(values)),
      path_(std::move(path)) {}

bool MetricParams::Has(absl::string_view key) const {
  return values_.is_object() &&
         values_.contains(std::string(key.data(), key.size()));
}

namespace {

template <typename T, typename Convert>
absl::StatusOr<T> GetScalar(const nlohmann::json& values,
                            const std::string& path, absl::string_view key,
                            T fallback, Convert convert, const char* what) {
  const std::string k(key.data(), key.size());
  if (!values.is_object() || !values.contains(k)) return fallback;
  const nlohmann::json& v = values.at(k);
  T out;
  if (!convert(v, &out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".", k, ": expected ", what, ", got '", Show(v), "'"));
  }
  return out;
}

template <typename T, typename Convert>
absl::StatusOr<std::vector<T>> GetList(const nlohmann::json& values,
                                       const std::string& path,
                                       absl::string_view key,
                                       const std::vector<T>& fallback,
                                       Convert convert, const char* what) {
  const std::string k(key.data(), key.size());
  if (!values.is_object() || !values.contains(k)) return fallback;
  const nlohmann::json& v = values.at(k);
  std::vector<T> out;
  if (!v.is_array()) {
    T one;
    if (!convert(v, &one)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".", k, ": expected ", what,
                       " or a list of them, got '", Show(v), "'"));
    }
    out.push_back(std::move(one));
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    T one;
    if (!convert(v[i], &one)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".", k, "[", i, "]: expected ", what, ", got '",
                       Show(v[i]), "'"));
    }
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace

absl::StatusOr<int64_t> MetricParams::GetInt(absl::string_view key,
                                             int64_t fallback) const {
  used_.emplace(key);
  return GetScalar<int64_t>(values_, path_, key, fallback, ToInt, "an integer");
}

absl::StatusOr<double> MetricParams::GetDouble(absl::string_view key,
                                               double fallback) const {
  used_.emplace(key);
  return GetScalar<double>(values_, path_, key, fallback, ToDouble, "a number");
}

absl::StatusOr<bool> MetricParams::GetBool(absl::string_view key,
                                           bool fallback) const {
  used_.emplace(key);
  return GetScalar<bool>(values_, path_, key, fallback, ToBool, "a boolean");
}

absl::StatusOr<std::string> MetricParams::GetString(
    absl::string_view key, absl::string_view fallback) const {
  used_.emplace(key);
  return GetScalar<std::string>(values_, path_, key, std::string(fallback),
                                ToString, "a string");
}

absl::StatusOr<std::vector<std::string>> MetricParams::GetStringList(
    absl::string_view key, const std::vector<std::string>& fallback) const {
  used_.emplace(key);
  return GetList<std::string>(values_, path_, key, fallback, ToString,
                              "a string");
}

absl::StatusOr<std::vector<int64_t>> MetricParams::GetIntList(
    absl::string_view key, const std::vector<int64_t>& fallback) const {
  used_.emplace(key);
  return GetList<int64_t>(values_, path_, key, fallback, ToInt, "an integer");
}

absl::Status MetricParams::CheckAllUsed(
    const std::vector<std::string>& valid) const {
  if (!values_.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": expected a mapping of parameters"));
  }
  for (const auto& [key, value] : values_.items()) {
    // "name" selects the metric; it is the harness's, not a parameter.
    if (key == "name" || used_.count(key) > 0) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": unknown key '", key, "' (valid: ",
                     valid.empty() ? "none" : absl::StrJoin(valid, ", "), ")"));
  }
  return absl::OkStatus();
}

}  // namespace dynsparse
