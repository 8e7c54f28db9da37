// The experiment config of `dynsparse run`: plain structs, validated once at
// load against the method and metric tables. docs/harness.md is the schema
// reference. Errors read "FILE: YAML.PATH: what is wrong (valid: ...)".
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/metrics/metric.h"
#include "methods/registry.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

struct ModelSpec {
  std::string label;      // Row label in tables; default: the path's basename.
  std::string path;       // HF folder, llama2.c .bin, or random:NAME.
  std::string tokenizer;  // "" = the model folder.
  std::string device = "cpu";
  std::string dtype = "f32";
  int64_t threads = 0;  // 0 = all cores.
};

// One point of a method's sweep: scalar parameter values only.
struct MethodVariant {
  std::string name;
  nlohmann::json params = nlohmann::json::object();  // key -> scalar
  std::string path;                                  // "methods[1]"
};

struct MethodSpec {
  std::string name;
  nlohmann::json params = nlohmann::json::object();  // key -> scalar or list
  std::vector<std::vector<std::string>> zip;         // Axes moving together.
  std::string path;
  std::vector<MethodVariant> variants;  // The expansion, filled at load.
};

struct MetricSpec {
  std::string name;
  nlohmann::json params = nlohmann::json::object();  // Without "name".
  std::string path;                                  // "metrics[0]"
};

struct ReportOptions {
  std::vector<std::string> tables = {"md", "csv", "tex"};
  std::vector<std::string> plots = {"metric-vs-sparsity", "pareto"};
  std::string pareto_quality;  // Row metric name; "" = first quality metric.
  std::string pareto_cost;     // Row metric name; "" = first latency metric.
};

struct ExperimentConfig {
  std::string name;
  std::string description;
  std::vector<ModelSpec> models;
  std::vector<MethodSpec> methods;
  std::vector<MetricSpec> metrics;
  ReportOptions report;
  int64_t seed = 0;
  std::string output;  // Results folder; default results/<name>.
};

struct LoadedConfig {
  ExperimentConfig config;
  nlohmann::json
      resolved;      // After includes and --set: written as resolved.yaml.
  std::string hash;  // Of everything that decides the numbers.
};

// The tables a config is checked against (tests pass their own).
struct ConfigTables {
  const std::vector<MethodInfo>& methods;
  const std::vector<MetricInfo>& metrics;
};

// Validates a resolved tree. Error messages start with the YAML path.
absl::StatusOr<ExperimentConfig> ParseExperimentConfig(
    const nlohmann::json& tree, const ConfigTables& tables);

// Validates a `report:` mapping (also used for `dynsparse report` flags).
absl::StatusOr<ReportOptions> ParseReportOptions(const nlohmann::json& node);

// Reads `path` (with includes), applies the --set overrides in order,
// validates; errors are prefixed with `path`.
absl::StatusOr<LoadedConfig> LoadExperimentConfig(
    const std::string& path, const std::vector<std::string>& overrides,
    const ConfigTables& tables);

// 16 hex digits of FNV-1a over the canonical JSON of the keys that decide
// the results (model, methods, metrics, seed): renaming an experiment or
// changing its report keeps the hash, so resuming still works.
std::string ConfigHash(const nlohmann::json& resolved);

// A method parameter value as MethodArgs text: 0.5 -> "0.5", true -> "true".
std::string ParamText(const nlohmann::json& scalar);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_H_
