#include "experiments/harness/config.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "experiments/harness/config_reader.h"
#include "experiments/harness/config_source.h"
#include "experiments/harness/sweep.h"
#include "experiments/harness/yaml_json.h"

namespace dynsparse {
namespace {

using config_internal::Bad;
using config_internal::MapReader;
using config_internal::ValidList;
using nlohmann::json;

absl::StatusOr<ModelSpec> ParseModel(const json& node,
                                     const std::string& path) {
  ASSIGN_OR_RETURN(const MapReader r, MapReader::Make(node, path));
  RETURN_IF_ERROR(r.CheckKeys(
      {"path", "label", "tokenizer", "device", "dtype", "threads"}));
  RETURN_IF_ERROR(r.Required("path"));
  ModelSpec m;
  ASSIGN_OR_RETURN(m.path, r.String("path", ""));
  if (m.path.empty()) return Bad(r.Path("path"), "must not be empty");
  ASSIGN_OR_RETURN(m.tokenizer, r.String("tokenizer", ""));
  ASSIGN_OR_RETURN(m.device, r.Choice("device", "cpu", {"cpu", "cuda"}));
  ASSIGN_OR_RETURN(m.dtype, r.Choice("dtype", "f32", {"f32", "f16", "bf16"}));
  ASSIGN_OR_RETURN(m.threads, r.Int("threads", 0, 0));
  std::string fallback_label =
      std::filesystem::path(m.path).filename().string();
  if (fallback_label.empty()) fallback_label = m.path;
  ASSIGN_OR_RETURN(m.label, r.String("label", fallback_label));
  // random:NAME models exist without files; everything else must be there
  // now rather than failing one job at a time later.
  std::error_code ec;
  if (!m.path.starts_with("random:") && !std::filesystem::exists(m.path, ec)) {
    return Bad(r.Path("path"),
               absl::StrCat("no such file or folder '", m.path, "'"));
  }
  if (!m.tokenizer.empty() && !std::filesystem::exists(m.tokenizer, ec)) {
    return Bad(r.Path("tokenizer"),
               absl::StrCat("no such file or folder '", m.tokenizer, "'"));
  }
  return m;
}

absl::StatusOr<std::vector<ModelSpec>> ParseModels(const json& node) {
  std::vector<ModelSpec> models;
  if (node.is_array()) {
    if (node.empty()) return Bad("model", "the list of models is empty");
    for (size_t i = 0; i < node.size(); ++i) {
      ASSIGN_OR_RETURN(ModelSpec m,
                       ParseModel(node[i], IndexYamlPath("model", i)));
      models.push_back(std::move(m));
    }
  } else {
    ASSIGN_OR_RETURN(ModelSpec m, ParseModel(node, "model"));
    models.push_back(std::move(m));
  }
  for (size_t i = 0; i < models.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (models[i].label == models[j].label) {
        return Bad(
            IndexYamlPath("model", i),
            absl::StrCat("label '", models[i].label, "' is used by model[", j,
                         "] too; give one of them its own `label:`"));
      }
    }
  }
  return models;
}

absl::Status CheckScalar(const json& v, const std::string& path) {
  if (v.is_string() || v.is_number() || v.is_boolean()) {
    return absl::OkStatus();
  }
  return Bad(path, absl::StrCat("expected a number, string or boolean, got ",
                                JsonTypeName(v)));
}

absl::StatusOr<std::vector<std::vector<std::string>>> ParseZip(
    const json& node, const std::string& path, const json& params) {
  // `zip: [a, b]` is one group; `zip: [[a, b], [c, d]]` several.
  json groups = node;
  if (!groups.is_array() || groups.empty()) {
    return Bad(path, absl::StrCat("expected a list of parameter names, got ",
                                  JsonTypeName(node)));
  }
  if (groups[0].is_string()) groups = json::array({groups});
  std::vector<std::vector<std::string>> out;
  std::set<std::string> seen;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string gpath = IndexYamlPath(path, g);
    if (!groups[g].is_array() || groups[g].size() < 2) {
      return Bad(gpath, "a zip group lists at least two parameter names");
    }
    std::vector<std::string> names;
    size_t length = 0;
    for (size_t i = 0; i < groups[g].size(); ++i) {
      const json& name = groups[g][i];
      const std::string ipath = IndexYamlPath(gpath, i);
      if (!name.is_string()) {
        return Bad(ipath, absl::StrCat("expected a parameter name, got ",
                                       JsonTypeName(name)));
      }
      const std::string n = name.get<std::string>();
      if (!params.contains(n)) {
        return Bad(ipath,
                   absl::StrCat("'", n, "' is not a parameter of this method"));
      }
      if (!params[n].is_array()) {
        return Bad(ipath,
                   absl::StrCat("'", n, "' is not a list (zip moves lists)"));
      }
      if (!seen.insert(n).second) {
        return Bad(ipath, absl::StrCat("'", n, "' is zipped twice"));
      }
      if (i > 0 && params[n].size() != length) {
        return Bad(ipath,
                   absl::StrCat("'", n, "' has ", params[n].size(),
                                " values but '", names[0], "' has ", length,
                                "; zipped lists must have equal lengths"));
      }
      length = params[n].size();
      names.push_back(n);
    }
    out.push_back(std::move(names));
  }
  return out;
}

// A method's parameter list may name a family of keys as "prefix.*" (the
// combined method passes "token.keep" etc. on to its sides).
bool TakesParameter(const std::vector<std::string>& parameters,
                    const std::string& key) {
  for (const std::string& p : parameters) {
    if (p == key) return true;
    if (absl::EndsWith(p, ".*") &&
        absl::StartsWith(key, p.substr(0, p.size() - 1))) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<MethodSpec> ParseMethod(const json& node,
                                       const std::string& path,
                                       const std::vector<MethodInfo>& table) {
  ASSIGN_OR_RETURN(const MapReader r, MapReader::Make(node, path));
  RETURN_IF_ERROR(r.Required("name"));
  MethodSpec spec;
  spec.path = path;
  ASSIGN_OR_RETURN(spec.name, r.String("name", ""));
  const MethodInfo* info = nullptr;
  std::vector<std::string> names;
  for (const MethodInfo& m : table) {
    names.push_back(m.name);
    if (m.name == spec.name) info = &m;
  }
  if (info == nullptr) {
    return Bad(r.Path("name"), absl::StrCat("unknown method '", spec.name, "' ",
                                            ValidList(names)));
  }
  for (const auto& [key, value] : node.items()) {
    if (key == "name" || key == "zip") continue;
    const std::string kpath = r.Path(key);
    if (!TakesParameter(info->parameters, key)) {
      return Bad(kpath, absl::StrCat("unknown parameter '", key,
                                     "' of method '", spec.name, "' ",
                                     info->parameters.empty()
                                         ? std::string("(it takes none)")
                                         : ValidList(info->parameters)));
    }
    if (value.is_array()) {
      if (value.empty()) return Bad(kpath, "an empty list sweeps nothing");
      for (size_t i = 0; i < value.size(); ++i) {
        RETURN_IF_ERROR(CheckScalar(value[i], IndexYamlPath(kpath, i)));
      }
    } else {
      RETURN_IF_ERROR(CheckScalar(value, kpath));
    }
    spec.params[key] = value;
  }
  if (r.Has("zip")) {
    ASSIGN_OR_RETURN(spec.zip,
                     ParseZip(r.At("zip"), r.Path("zip"), spec.params));
  }
  spec.variants = ExpandMethod(spec);
  // Build each point once so bad values fail now, naming the point.
  for (const MethodVariant& v : spec.variants) {
    const MethodArgs args = VariantArgs(v);
    auto method = info->create(args);
    absl::Status s = method.ok()
                         ? args.CheckAllUsed(spec.name, info->parameters)
                         : method.status();
    if (!s.ok()) {
      return Bad(path, absl::StrCat(DescribeVariant(v), ": ", s.message()));
    }
  }
  return spec;
}

absl::StatusOr<MetricSpec> ParseMetric(const json& node,
                                       const std::string& path,
                                       const std::vector<MetricInfo>& table) {
  ASSIGN_OR_RETURN(const MapReader r, MapReader::Make(node, path));
  RETURN_IF_ERROR(r.Required("name"));
  MetricSpec spec;
  spec.path = path;
  ASSIGN_OR_RETURN(spec.name, r.String("name", ""));
  const MetricInfo* info = nullptr;
  std::vector<std::string> names;
  for (const MetricInfo& m : table) {
    names.push_back(m.name);
    if (m.name == spec.name) info = &m;
  }
  if (info == nullptr) {
    return Bad(r.Path("name"), absl::StrCat("unknown metric '", spec.name, "' ",
                                            ValidList(names)));
  }
  for (const auto& [key, value] : node.items()) {
    if (key == "name") continue;
    if (std::find(info->parameters.begin(), info->parameters.end(), key) ==
        info->parameters.end()) {
      return Bad(r.Path(key),
                 absl::StrCat("unknown parameter '", key, "' of metric '",
                              spec.name, "' ", ValidList(info->parameters)));
    }
    spec.params[key] = value;
  }
  // The metric validates its values (task and corpus names included).
  auto metric = info->create(MetricParams(spec.params, path));
  if (!metric.ok()) return metric.status();
  return spec;
}

}  // namespace

absl::StatusOr<ReportOptions> ParseReportOptions(const nlohmann::json& node) {
  ASSIGN_OR_RETURN(const MapReader r, MapReader::Make(node, "report"));
  RETURN_IF_ERROR(r.CheckKeys({"tables", "plots", "pareto"}));
  ReportOptions out;
  ASSIGN_OR_RETURN(out.tables, r.StringList("tables", out.tables));
  for (size_t i = 0; i < out.tables.size(); ++i) {
    const std::vector<std::string> valid = {"md", "csv", "tex"};
    if (std::find(valid.begin(), valid.end(), out.tables[i]) == valid.end()) {
      return Bad(IndexYamlPath("report.tables", i),
                 absl::StrCat("unknown table format '", out.tables[i], "' ",
                              ValidList(valid)));
    }
  }
  ASSIGN_OR_RETURN(out.plots, r.StringList("plots", out.plots));
  for (size_t i = 0; i < out.plots.size(); ++i) {
    const std::string& p = out.plots[i];
    if (p != "pareto" && !(p.ends_with("-vs-sparsity") &&
                           p.size() > std::string("-vs-sparsity").size())) {
      return Bad(IndexYamlPath("report.plots", i),
                 absl::StrCat("unknown plot '", p,
                              "' (valid: pareto, metric-vs-sparsity, "
                              "METRIC-vs-sparsity)"));
    }
  }
  if (r.Has("pareto")) {
    ASSIGN_OR_RETURN(const MapReader p,
                     MapReader::Make(r.At("pareto"), "report.pareto"));
    RETURN_IF_ERROR(p.CheckKeys({"quality", "cost"}));
    ASSIGN_OR_RETURN(out.pareto_quality, p.String("quality", ""));
    ASSIGN_OR_RETURN(out.pareto_cost, p.String("cost", ""));
  }
  return out;
}

namespace {

uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string ParamText(const nlohmann::json& scalar) {
  if (scalar.is_string()) return scalar.get<std::string>();
  return scalar.dump();
}

std::string ConfigHash(const nlohmann::json& resolved) {
  json decisive = json::object();
  for (const char* key : {"model", "methods", "metrics", "seed"}) {
    if (resolved.contains(key)) decisive[key] = resolved[key];
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(Fnv1a(decisive.dump())));
  return text;
}

absl::StatusOr<ExperimentConfig> ParseExperimentConfig(
    const nlohmann::json& tree, const ConfigTables& tables) {
  ASSIGN_OR_RETURN(const MapReader r, MapReader::Make(tree, ""));
  RETURN_IF_ERROR(
      r.CheckKeys({"name", "description", "include", "model", "methods",
                   "metrics", "report", "seed", "output"}));
  ExperimentConfig c;
  RETURN_IF_ERROR(r.Required("name"));
  ASSIGN_OR_RETURN(c.name, r.String("name", ""));
  if (c.name.empty() || c.name.find_first_of("/\\ \t\n") != std::string::npos) {
    return Bad("name",
               absl::StrCat("'", c.name,
                            "' must be non-empty, without spaces "
                            "or slashes (it names the results folder)"));
  }
  ASSIGN_OR_RETURN(c.description, r.String("description", ""));
  ASSIGN_OR_RETURN(c.output, r.String("output", ""));
  ASSIGN_OR_RETURN(c.seed, r.Int("seed", 0, 0));

  RETURN_IF_ERROR(r.Required("model"));
  ASSIGN_OR_RETURN(c.models, ParseModels(r.At("model")));

  if (!r.Has("methods")) {
    MethodSpec dense;
    dense.name = "dense";
    dense.path = "methods[0]";
    dense.variants = ExpandMethod(dense);
    c.methods.push_back(std::move(dense));
  } else {
    const json& methods = r.At("methods");
    if (methods.is_array() && methods.empty()) {
      return Bad("methods", "must list at least one entry");
    }
    if (!methods.is_array()) {
      return Bad("methods", absl::StrCat("expected a non-empty list, got ",
                                         JsonTypeName(methods)));
    }
    for (size_t i = 0; i < methods.size(); ++i) {
      ASSIGN_OR_RETURN(
          MethodSpec m,
          ParseMethod(methods[i], IndexYamlPath("methods", i), tables.methods));
      c.methods.push_back(std::move(m));
    }
  }

  RETURN_IF_ERROR(r.Required("metrics"));
  const json& metrics = r.At("metrics");
  if (metrics.is_array() && metrics.empty()) {
    return Bad("metrics", "must list at least one entry");
  }
  if (!metrics.is_array()) {
    return Bad("metrics", absl::StrCat("expected a non-empty list, got ",
                                       JsonTypeName(metrics)));
  }
  for (size_t i = 0; i < metrics.size(); ++i) {
    ASSIGN_OR_RETURN(
        MetricSpec m,
        ParseMetric(metrics[i], IndexYamlPath("metrics", i), tables.metrics));
    c.metrics.push_back(std::move(m));
  }
  if (r.Has("report")) {
    ASSIGN_OR_RETURN(c.report, ParseReportOptions(r.At("report")));
  }
  RETURN_IF_ERROR(CheckDistinctJobs(c));
  return c;
}

absl::StatusOr<LoadedConfig> LoadExperimentConfig(
    const std::string& path, const std::vector<std::string>& overrides,
    const ConfigTables& tables) {
  auto prefixed = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  };
  auto tree = ReadConfigTree(path);
  if (!tree.ok()) return tree.status();  // Already names the file.
  for (const std::string& o : overrides) {
    if (absl::Status s = ApplySetOverride(o, *tree); !s.ok()) return s;
  }
  LoadedConfig loaded;
  auto config = ParseExperimentConfig(*tree, tables);
  if (!config.ok()) return prefixed(config.status());
  loaded.config = *std::move(config);
  loaded.resolved = *std::move(tree);
  loaded.hash = ConfigHash(loaded.resolved);
  return loaded;
}

}  // namespace dynsparse
