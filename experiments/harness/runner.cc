#include "experiments/harness/runner.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "experiments/harness/progress.h"
#include "experiments/harness/results_log.h"
#include "experiments/harness/yaml_json.h"

namespace dynsparse {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text) {
  // Shards may write resolved.yaml at the same time: unique temp names.
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.good()) {
      return absl::InternalError(absl::StrCat(tmp, ": cannot write"));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot replace: ", ec.message()));
  }
  return absl::OkStatus();
}

// The fields every line of a job carries.
json JobFields(const LoadedConfig& config, const Job& job,
               const RunOptions& options) {
  return {
      {"config", config.config.name}, {"config_hash", config.hash},
      {"git_sha", options.git_sha},   {"job", job.key},
      {"job_index", job.index},       {"model", job.model.label},
      {"model_path", job.model.path}, {"device", job.model.device},
      {"dtype", job.model.dtype},     {"threads", job.model.threads},
      {"method", job.method.name},    {"params", job.method.params},
      {"seed", config.config.seed},
  };
}

json ResultLine(const json& job_fields, const MetricSpec& spec,
                size_t metric_index, const std::string& pair) {
  json line = job_fields;
  line["kind"] = "result";
  line["pair"] = pair;
  line["metric_entry"] = spec.name;
  line["metric_index"] = metric_index;
  line["metric_params"] = spec.params;
  line["time"] = UtcNow();
  return line;
}

std::vector<json> ErrorGroup(json line, const std::string& message) {
  line["status"] = "error";
  line["error"] = message;
  line["metric"] = line["metric_entry"];
  line["task"] = "";
  line["value"] = nullptr;
  line["stderr"] = nullptr;
  line["n"] = 0;
  line["row"] = 0;
  line["rows"] = 1;
  return {std::move(line)};
}

const MetricInfo* FindInfo(const std::vector<MetricInfo>& table,
                           const std::string& name) {
  for (const MetricInfo& info : table) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

// Runs one metric of one job; never fails as a whole: a failure becomes the
// group's error line.
std::vector<json> RunMetric(const MetricSpec& spec,
                            const std::vector<MetricInfo>& table,
                            const MetricModel& model, json line,
                            SweepProgress* progress) {
  const MetricInfo* info = FindInfo(table, spec.name);
  if (info == nullptr) {
    return ErrorGroup(std::move(line),
                      absl::StrCat("unknown metric '", spec.name, "'"));
  }
  auto metric = info->create(MetricParams(spec.params, spec.path));
  if (!metric.ok()) {
    return ErrorGroup(std::move(line), std::string(metric.status().message()));
  }
  line["protocol"] = (*metric)->Protocol();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<MetricRow>> rows;
  // Metrics report errors as Status; an exception that slips out anyway
  // must fail this job, not kill the sweep (a rerun would hit it again).
  try {
    rows = (*metric)->Run(model, [&](int64_t done, int64_t total) {
      if (progress != nullptr) progress->Metric(spec.name, done, total);
    });
  } catch (const std::exception& e) {
    rows = absl::InternalError(absl::StrCat("uncaught exception: ", e.what()));
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  line["wall_s"] = wall;
  if (!rows.ok()) {
    return ErrorGroup(std::move(line), std::string(rows.status().message()));
  }
  if (rows->empty()) {
    return ErrorGroup(std::move(line), "the metric returned no rows");
  }
  std::vector<json> group;
  for (size_t i = 0; i < rows->size(); ++i) {
    const MetricRow& row = (*rows)[i];
    json out = line;
    out["status"] = "ok";
    out["metric"] = row.metric;
    out["task"] = row.task;
    out["value"] = row.value;
    out["stderr"] =
        row.stderr_value.has_value() ? json(*row.stderr_value) : json(nullptr);
    out["n"] = row.n;
    out["details"] = row.details;
    out["row"] = i;
    out["rows"] = rows->size();
    group.push_back(std::move(out));
  }
  return group;
}

}  // namespace

std::string ResultsFileName(const Shard& shard) {
  if (shard.count == 1) return "results.jsonl";
  return absl::StrCat("results-shard", shard.index, "-of-", shard.count,
                      ".jsonl");
}

absl::StatusOr<RunSummary> RunExperiment(const LoadedConfig& config,
                                         const std::vector<MetricInfo>& metrics,
                                         const JobOpener& opener,
                                         const RunOptions& options) {
  RunSummary summary;
  const std::vector<Job> jobs =
      SelectShard(ExpandJobs(config.config), options.shard);
  summary.jobs = jobs.size();
  ASSIGN_OR_RETURN(
      ResultsLog log,
      ResultsLog::Open(options.out_dir, ResultsFileName(options.shard),
                       config.hash));
  summary.results_file = log.path();
  RETURN_IF_ERROR(WriteFileAtomically(
      (fs::path(options.out_dir) / "resolved.yaml").string(),
      absl::StrCat("# ", config.config.name,
                   ": the config as run (includes "
                   "and --set applied)\n# config_hash: ",
                   config.hash, "\n", ToYaml(config.resolved))));

  std::ostringstream sink;
  std::ostream& out = options.log != nullptr ? *options.log : sink;
  SweepProgress progress(out, options.terminal && options.log != nullptr,
                         jobs.size());
  const std::vector<MetricSpec>& specs = config.config.metrics;
  size_t position = 0;
  for (const Job& job : jobs) {
    std::vector<size_t> pending;
    for (size_t m = 0; m < specs.size(); ++m) {
      if (!log.Finished(PairKey(job.key, m), !options.retry_errors)) {
        pending.push_back(m);
      }
    }
    if (pending.empty()) {
      ++summary.jobs_skipped;
      ++position;
      continue;
    }
    if (options.stop != nullptr && options.stop->load()) {
      summary.stopped = true;
      break;
    }
    const json fields = JobFields(config, job, options);
    if (log.WasInFlight(job.key)) {
      json line = fields;
      line["kind"] = "interrupted";
      line["time"] = UtcNow();
      line["message"] =
          "a previous run died while this job was in flight; running it again";
      RETURN_IF_ERROR(log.Append({line}));
      ++summary.interrupted;
    }
    json start = fields;
    start["kind"] = "start";
    start["time"] = UtcNow();
    RETURN_IF_ERROR(log.Append({start}));

    const std::string description =
        absl::StrCat(job.model.label, " ", DescribeVariant(job.method));
    progress.BeginJob(position, description);
    size_t failed = 0;
    const absl::Status prepared =
        options.prepare ? options.prepare(job) : absl::OkStatus();
    auto opened = prepared.ok()
                      ? opener(job)
                      : absl::StatusOr<OpenedJob>(absl::Status(
                            prepared.code(),
                            absl::StrCat("preparing the job: ",
                                         prepared.message())));
    for (size_t m : pending) {
      const json line = ResultLine(fields, specs[m], m, PairKey(job.key, m));
      std::vector<json> group =
          opened.ok()
              ? RunMetric(specs[m], metrics, opened->model, line, &progress)
              : ErrorGroup(line, absl::StrCat("opening the model: ",
                                              opened.status().message()));
      if (group[0]["status"] == "error") ++failed;
      RETURN_IF_ERROR(log.Append(group));
    }
    json end = fields;
    end["kind"] = "end";
    end["time"] = UtcNow();
    RETURN_IF_ERROR(log.Append({end}));
    summary.pairs_ok += pending.size() - failed;
    summary.pairs_failed += failed;
    progress.EndJob(failed == 0 ? "ok"
                                : absl::StrCat(failed, " of ", pending.size(),
                                               " metric(s) failed"));
    ++position;
  }
  progress.Finish();
  return summary;
}

}  // namespace dynsparse
