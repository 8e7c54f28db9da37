// MethodArgs: a method's parameters as key=value strings, shared by the CLI
// (--method-arg key=value) and YAML configs, with typed getters that report
// the parameter by name. A method reads what it knows, then calls
// CheckAllUsed() so a misspelt key is an error instead of a silent default.
#ifndef DYNSPARSE_METHODS_METHOD_ARGS_H_
#define DYNSPARSE_METHODS_METHOD_ARGS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

class MethodArgs {
 public:
  MethodArgs() = default;
  // Parses "key=value" items; a repeated key or a missing '=' is an error.
  static absl::StatusOr<MethodArgs> Parse(
      const std::vector<std::string>& items);

  void Set(std::string key, std::string value);
  bool Has(absl::string_view key) const;
  absl::StatusOr<double> GetDouble(absl::string_view key,
                                   double fallback) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view key, int64_t fallback) const;
  absl::StatusOr<bool> GetBool(absl::string_view key, bool fallback) const;
  std::string GetString(absl::string_view key,
                        absl::string_view fallback) const;

  // Error naming the first key no getter asked for, and the valid keys.
  absl::Status CheckAllUsed(absl::string_view method,
                            const std::vector<std::string>& valid) const;
  const std::map<std::string, std::string, std::less<>>& items() const {
    return items_;
  }

 private:
  template <typename T, typename Parser>
  absl::StatusOr<T> GetParsed(absl::string_view key, T fallback, Parser parse,
                              const char* what) const;

  std::map<std::string, std::string, std::less<>> items_;
  mutable std::set<std::string, std::less<>> used_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_METHOD_ARGS_H_
