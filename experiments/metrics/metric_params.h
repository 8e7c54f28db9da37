// MetricParams: the parameters of one `metrics:` entry of a config (already
// sweep-expanded, so scalar or list values), with typed getters whose errors
// name the YAML path, e.g. "metrics[1].context: expected an integer, got 'x'".
// A metric reads what it knows; CheckAllUsed then rejects misspelt keys.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_METRIC_PARAMS_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_METRIC_PARAMS_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

class MetricParams {
 public:
  // `values` is a JSON object (key -> scalar or list); `path` is the YAML
  // path of the entry, e.g. "metrics[1]".
  MetricParams(nlohmann::json values, std::string path);

  const std::string& path() const { return path_; }
  bool Has(absl::string_view key) const;

  absl::StatusOr<int64_t> GetInt(absl::string_view key, int64_t fallback) const;
  absl::StatusOr<double> GetDouble(absl::string_view key,
                                   double fallback) const;
  absl::StatusOr<bool> GetBool(absl::string_view key, bool fallback) const;
  absl::StatusOr<std::string> GetString(absl::string_view key,
                                        absl::string_view fallback) const;
  // A scalar is a one-element list.
  absl::StatusOr<std::vector<std::string>> GetStringList(
      absl::string_view key, const std::vector<std::string>& fallback) const;
  absl::StatusOr<std::vector<int64_t>> GetIntList(
      absl::string_view key, const std::vector<int64_t>& fallback) const;

  // Error "PATH: unknown key 'k' (valid: a, b, c)" for the first key no
  // getter asked for.
  absl::Status CheckAllUsed(const std::vector<std::string>& valid) const;
  const nlohmann::json& values() const { return values_; }

 private:
  nlohmann::json values_;
  std::string path_;
  mutable std::set<std::string, std::less<>> used_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_METRIC_PARAMS_H_
