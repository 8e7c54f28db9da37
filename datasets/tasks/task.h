// Zero-shot tasks in lm-evaluation-harness's terms: each document yields
// (context, continuation) log-likelihood requests, built exactly as lm-eval's
// ConfigurableTask does for the task's YAML (docs/tasks.md lists the sources).
#ifndef DYNSPARSE_DATASETS_TASKS_TASK_H_
#define DYNSPARSE_DATASETS_TASKS_TASK_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

enum class TaskKind {
  // lm-eval output_type multiple_choice: one context (`text`), one request per
  // choice with continuation target_delimiter + choice.
  kMultipleChoice,
  // multiple_choice with lm-eval's "multiple input" (doc_to_text is the gold
  // index; WinoGrande's partial scoring): the choices are contexts and every
  // request continues with target_delimiter + `target`.
  kPartial,
  // output_type loglikelihood (LAMBADA): one request (text, delimiter +
  // target); acc = the whole continuation is the greedy choice, plus ppl.
  kLoglikelihood,
};

// One document after the task's lm-eval preprocessing (doc_to_text,
// doc_to_choice, doc_to_target already applied).
struct TaskDoc {
  std::string text;                  // kMultipleChoice, kLoglikelihood.
  std::vector<std::string> choices;  // Continuations, or contexts (kPartial).
  std::string target;                // kPartial, kLoglikelihood.
  int gold = 0;                      // Index into choices.
};

struct TaskDefinition {
  std::string name;
  TaskKind kind = TaskKind::kMultipleChoice;
  std::string target_delimiter = " ";
  std::string fewshot_delimiter = "\n\n";
  bool acc_norm = false;      // lm-eval's metric_list has acc_norm.
  std::string data_path;      // Under $DYNSPARSE_DATA, or repo-relative.
  bool data_in_repo = false;  // data_path is relative to the repository.
  std::string prompt;         // Human-readable prompt format (docs, --help).
  std::string source;         // The lm-eval task it follows.
  // Reads the file at the resolved path into documents.
  std::function<absl::StatusOr<std::vector<TaskDoc>>(const std::string& path)>
      load;
};

const std::vector<TaskDefinition>& TaskRegistry();

// The task named `name`, or "unknown task 'x' (valid: ...)".
absl::StatusOr<const TaskDefinition*> FindTask(absl::string_view name);

// The file a task reads: $DYNSPARSE_DATA/data_path (an error naming the
// variable when unset), or, for data kept in the repository, data_path
// relative to the working directory or else to this checkout.
absl::StatusOr<std::string> TaskDataPath(const TaskDefinition& task);

// Resolves the path, checks the file exists (the error names the path and
// DYNSPARSE_DATA) and loads the documents.
absl::StatusOr<std::vector<TaskDoc>> LoadTaskDocs(const TaskDefinition& task);

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_TASKS_TASK_H_
