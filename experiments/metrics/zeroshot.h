// Zero-shot (and few-shot) task evaluation with lm-evaluation-harness's
// conventions: requests built as lm-eval's ConfigurableTask builds them for
// the task's YAML (datasets/tasks), scored by LoglikelihoodScorer, acc /
// acc_norm (log-likelihood over the choice's length in characters) / acc
// stderr (sample standard deviation over sqrt(n)) as lm-eval aggregates them.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_ZEROSHOT_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_ZEROSHOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/tasks/task.h"
#include "experiments/metrics/loglikelihood.h"
#include "experiments/metrics/metric.h"

namespace dynsparse {

struct ZeroshotOptions {
  int64_t limit = 0;  // First N documents (0 = all), as lm-eval --limit.
  int64_t num_fewshot = 0;
  uint32_t fewshot_seed = 1234;  // lm-eval's default fewshot_random_seed.
  bool add_bos_token = false;    // lm-eval HFLM's add_bos_token.
  int64_t max_length = 0;        // 0: the model's (DefaultMaxLength).
};

// The requests of document `index` of `docs` (few-shot examples drawn with
// `rng` from the other documents, as lm-eval samples from the evaluation
// split when the task has no training split here).
class PythonRandom;
std::vector<LoglikelihoodRequest> BuildRequests(
    const TaskDefinition& task, const std::vector<TaskDoc>& docs, size_t index,
    int64_t num_fewshot, PythonRandom* rng);

struct DocScore {
  std::vector<LoglikelihoodResult> results;  // One per request.
  int gold = 0;
  int pred = 0;       // argmax log-likelihood (first on ties).
  int pred_norm = 0;  // argmax log-likelihood / len(choice) in characters.
};

struct TaskScore {
  std::string task;
  std::vector<DocScore> docs;
  double acc = 0, acc_stderr = 0;
  double acc_norm = 0, acc_norm_stderr = 0;  // When the task defines it.
  double perplexity = 0;                     // kLoglikelihood tasks.
  int64_t requests = 0;
};

// Evaluates the first `limit` documents of `docs`. `progress` (optional)
// sees (documents done, documents total).
absl::StatusOr<TaskScore> EvaluateTask(const MetricModel& model,
                                       const TaskDefinition& task,
                                       const std::vector<TaskDoc>& docs,
                                       const ZeroshotOptions& options,
                                       const ProgressFn& progress);

// The `zeroshot` metric of experiment configs.
MetricInfo ZeroshotMetricInfo();

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_ZEROSHOT_H_
