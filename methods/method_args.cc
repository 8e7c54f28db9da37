#include "methods/method_args.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dynsparse {

absl::StatusOr<MethodArgs> MethodArgs::Parse(
    const std::vector<std::string>& items) {
  MethodArgs args;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--method-arg '", item, "': expected key=value"));
    }
    std::string key = item.substr(0, eq);
    if (args.Has(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--method-arg '", key, "' given twice"));
    }
    args.Set(std::move(key), item.substr(eq + 1));
  }
  return args;
}

void MethodArgs::Set(std::string key, std::string value) {
  items_[std::move(key)] = std::move(value);
}

bool MethodArgs::Has(absl::string_view key) const {
  return items_.find(key) != items_.end();
}

template <typename T, typename Parser>
absl::StatusOr<T> MethodArgs::GetParsed(absl::string_view key, T fallback,
                                        Parser parse, const char* what) const {
  used_.emplace(key);
  auto it = items_.find(key);
  if (it == items_.end()) return fallback;
  T value;
  if (!parse(it->second, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "method parameter '", key, "': '", it->second, "' is not ", what));
  }
  return value;
}

absl::StatusOr<double> MethodArgs::GetDouble(absl::string_view key,
                                             double fallback) const {
  return GetParsed<double>(
      key, fallback,
      [](absl::string_view s, double* v) { return absl::SimpleAtod(s, v); },
      "a number");
}

absl::StatusOr<int64_t> MethodArgs::GetInt(absl::string_view key,
                                           int64_t fallback) const {
  return GetParsed<int64_t>(
      key, fallback,
      [](absl::string_view s, int64_t* v) { return absl::SimpleAtoi(s, v); },
      "an integer");
}

absl::StatusOr<bool> MethodArgs::GetBool(absl::string_view key,
                                         bool fallback) const {
  return GetParsed<bool>(
      key, fallback,
      [](absl::string_view s, bool* v) { return absl::SimpleAtob(s, v); },
      "a boolean");
}

std::string MethodArgs::GetString(absl::string_view key,
                                  absl::string_view fallback) const {
  used_.emplace(key);
  auto it = items_.find(key);
  return it == items_.end() ? std::string(fallback) : it->second;
}

absl::Status MethodArgs::CheckAllUsed(
    absl::string_view method, const std::vector<std::string>& valid) const {
  for (const auto& [key, value] : items_) {
    if (used_.count(key) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "method '", method, "' has no parameter '", key, "' (valid: ",
          valid.empty() ? "none" : absl::StrJoin(valid, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace dynsparse
