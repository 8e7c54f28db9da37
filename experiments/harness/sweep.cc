#include "experiments/harness/sweep.h"

#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace dynsparse {

using nlohmann::json;

std::vector<MethodVariant> ExpandMethod(const MethodSpec& spec) {
  // Axes: each zip group is one axis; every other list parameter is its own.
  std::vector<std::vector<std::string>> axes;
  std::set<std::string> zipped;
  for (const auto& group : spec.zip) {
    axes.push_back(group);
    zipped.insert(group.begin(), group.end());
  }
  json fixed = json::object();
  for (const auto& [key, value] : spec.params.items()) {
    if (!value.is_array()) {
      fixed[key] = value;
    } else if (!zipped.count(key)) {
      axes.push_back({key});
    }
  }
  // Odometer over the axes; the first axis varies slowest.
  std::vector<MethodVariant> out;
  std::vector<size_t> at(axes.size(), 0);
  while (true) {
    MethodVariant v;
    v.name = spec.name;
    v.path = spec.path;
    v.params = fixed;
    for (size_t a = 0; a < axes.size(); ++a) {
      for (const std::string& key : axes[a]) {
        v.params[key] = spec.params[key][at[a]];
      }
    }
    out.push_back(std::move(v));
    size_t a = axes.size();
    while (a > 0) {
      --a;
      if (++at[a] < spec.params[axes[a][0]].size()) break;
      at[a] = 0;
      if (a == 0) return out;
    }
    if (axes.empty()) return out;
  }
}

MethodArgs VariantArgs(const MethodVariant& variant) {
  MethodArgs args;
  for (const auto& [key, value] : variant.params.items()) {
    args.Set(key, ParamText(value));
  }
  return args;
}

std::string DescribeVariant(const MethodVariant& variant) {
  std::string out = variant.name;
  for (const auto& [key, value] : variant.params.items()) {
    absl::StrAppend(&out, " ", key, "=", ParamText(value));
  }
  return out;
}

namespace {

std::string JobKey(const ModelSpec& model, const MethodVariant& method) {
  return absl::StrCat(model.label, "|", model.device, "|", model.dtype, "|",
                      DescribeVariant(method));
}

}  // namespace

std::vector<Job> ExpandJobs(const ExperimentConfig& config) {
  std::vector<Job> jobs;
  for (const ModelSpec& model : config.models) {
    for (const MethodSpec& method : config.methods) {
      for (const MethodVariant& variant : method.variants) {
        Job job;
        job.index = jobs.size();
        job.model = model;
        job.method = variant;
        job.key = JobKey(model, variant);
        jobs.push_back(std::move(job));
      }
    }
  }
  return jobs;
}

absl::Status CheckDistinctJobs(const ExperimentConfig& config) {
  // Model labels are already distinct, so method points decide.
  std::map<std::string, std::string> seen;  // Variant -> first path.
  for (const MethodSpec& method : config.methods) {
    for (const MethodVariant& v : method.variants) {
      const std::string d = DescribeVariant(v);
      auto [it, fresh] = seen.emplace(d, v.path);
      if (!fresh) {
        return absl::InvalidArgumentError(
            absl::StrCat(v.path, ": job '", d, "' appears twice (also from ",
                         it->second, ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Shard> ParseShard(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, '/');
  Shard shard;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &shard.index) ||
      !absl::SimpleAtoi(parts[1], &shard.count) || shard.count < 1 ||
      shard.index < 0 || shard.index >= shard.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard '", text,
                     "': expected I/N with 0 <= I < N (e.g. --shard 0/4 for "
                     "$SLURM_ARRAY_TASK_ID/4)"));
  }
  return shard;
}

std::vector<Job> SelectShard(const std::vector<Job>& jobs, const Shard& shard) {
  std::vector<Job> out;
  for (const Job& job : jobs) {
    if (static_cast<int>(job.index % shard.count) == shard.index) {
      out.push_back(job);
    }
  }
  return out;
}

}  // namespace dynsparse
