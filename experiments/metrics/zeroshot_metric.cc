// The `zeroshot` metric: lm-eval-style accuracy on registered tasks.
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/metrics/zeroshot.h"

namespace dynsparse {
namespace {

class ZeroshotMetric : public Metric {
 public:
  ZeroshotMetric(std::vector<const TaskDefinition*> tasks,
                 std::vector<int64_t> fewshot, ZeroshotOptions options)
      : tasks_(std::move(tasks)),
        fewshot_(std::move(fewshot)),
        options_(options) {}

  std::string Protocol() const override {
    std::vector<std::string> shots;
    for (int64_t k : fewshot_) shots.push_back(absl::StrCat(k));
    // One number when every task has the same shot count.
    if (std::all_of(fewshot_.begin(), fewshot_.end(),
                    [&](int64_t k) { return k == fewshot_[0]; })) {
      shots.resize(1);
    }
    return absl::StrCat(
        "lm-eval loglikelihood, ", absl::StrJoin(shots, "/"), "-shot",
        options_.limit > 0 ? absl::StrCat(", first ", options_.limit, " docs")
                           : "",
        options_.add_bos_token ? ", BOS added" : ", no BOS");
  }

  absl::StatusOr<std::vector<MetricRow>> Run(
      const MetricModel& model, const ProgressFn& progress) override {
    // Load everything first so a missing file fails before hours of work.
    std::vector<std::vector<TaskDoc>> all_docs;
    int64_t total = 0;
    for (const TaskDefinition* task : tasks_) {
      auto docs = LoadTaskDocs(*task);
      if (!docs.ok()) return docs.status();
      total += options_.limit > 0
                   ? std::min<int64_t>(options_.limit, docs->size())
                   : static_cast<int64_t>(docs->size());
      all_docs.push_back(*std::move(docs));
    }
    std::vector<MetricRow> rows;
    int64_t done_before = 0;
    for (size_t t = 0; t < tasks_.size(); ++t) {
      const TaskDefinition& task = *tasks_[t];
      ZeroshotOptions o = options_;
      o.num_fewshot = fewshot_[t];
      auto score =
          EvaluateTask(model, task, all_docs[t], o, [&](int64_t done, int64_t) {
            if (progress) progress(done_before + done, total);
          });
      if (!score.ok()) return score.status();
      done_before += static_cast<int64_t>(score->docs.size());
      const nlohmann::json details = {
          {"num_fewshot", o.num_fewshot}, {"fewshot_seed", o.fewshot_seed},
          {"requests", score->requests},  {"source", task.source},
          {"data", task.data_path},       {"add_bos_token", o.add_bos_token},
      };
      auto add = [&](const char* metric, double value,
                     std::optional<double> err) {
        MetricRow& row = rows.emplace_back();
        row.metric = metric;
        row.task = task.name;
        row.value = value;
        row.stderr_value = err;
        row.n = static_cast<int64_t>(score->docs.size());
        row.details = details;
      };
      add("acc", score->acc, score->acc_stderr);
      if (task.acc_norm)
        add("acc_norm", score->acc_norm, score->acc_norm_stderr);
      if (task.kind == TaskKind::kLoglikelihood) {
        add("perplexity", score->perplexity, std::nullopt);
      }
    }
    return rows;
  }

 private:
  std::vector<const TaskDefinition*> tasks_;
  std::vector<int64_t> fewshot_;  // Per task.
  ZeroshotOptions options_;
};

absl::StatusOr<std::unique_ptr<Metric>> CreateZeroshot(
    const MetricParams& params) {
  const std::string& path = params.path();
  auto names = params.GetStringList("tasks", {});
  if (!names.ok()) return names.status();
  if (names->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".tasks: required (a list of task names)"));
  }
  std::vector<const TaskDefinition*> tasks;
  for (size_t i = 0; i < names->size(); ++i) {
    auto task = FindTask((*names)[i]);
    if (!task.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".tasks[", i, "]: ", task.status().message()));
    }
    tasks.push_back(*task);
  }
  auto fewshot = params.GetIntList("num_fewshot", {0});
  if (!fewshot.ok()) return fewshot.status();
  if (fewshot->size() == 1) fewshot->resize(tasks.size(), (*fewshot)[0]);
  if (fewshot->size() != tasks.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".num_fewshot: give one number or one per task (",
                     tasks.size(), "), got ", fewshot->size()));
  }
  for (int64_t k : *fewshot) {
    if (k < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".num_fewshot: must be >= 0, got ", k));
    }
  }
  ZeroshotOptions o;
  auto limit = params.GetInt("limit", 0);
  auto bos = params.GetBool("add_bos_token", false);
  auto max_length = params.GetInt("max_length", 0);
  auto seed = params.GetInt("fewshot_seed", o.fewshot_seed);
  if (!limit.ok()) return limit.status();
  if (!bos.ok()) return bos.status();
  if (!max_length.ok()) return max_length.status();
  if (!seed.ok()) return seed.status();
  if (*limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".limit: must be >= 0, got ", *limit));
  }
  if (*max_length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".max_length: must be >= 0, got ", *max_length));
  }
  if (*seed < 0 || *seed > 0xffffffffLL) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".fewshot_seed: must be in [0, 2^32), got ", *seed));
  }
  o.limit = *limit;
  o.add_bos_token = *bos;
  o.max_length = *max_length;
  o.fewshot_seed = static_cast<uint32_t>(*seed);
  return std::make_unique<ZeroshotMetric>(std::move(tasks), *std::move(fewshot),
                                          o);
}

}  // namespace

MetricInfo ZeroshotMetricInfo() {
  return {
      "zeroshot",
      "lm-eval-harness multiple-choice / cloze accuracy on registered tasks",
      {"tasks", "limit", "num_fewshot", "add_bos_token", "max_length",
       "fewshot_seed"},
      &CreateZeroshot};
}

}  // namespace dynsparse
