// The one explicit table of zero-shot tasks. Prompts follow lm-eval's task
// YAMLs (lm_eval/tasks/<name>/); docs/tasks.md explains each conversion from
// the data file's format.
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "datasets/tasks/loaders.h"
#include "datasets/tasks/task.h"

#ifndef DYNSPARSE_REPO_DIR
#define DYNSPARSE_REPO_DIR "."
#endif

namespace dynsparse {
namespace {

std::vector<TaskDefinition> BuildTasks() {
  using K = TaskKind;
  auto choices = [](std::string drop, std::string suffix) {
    return [drop, suffix](const std::string& p) {
      return LoadFoundryChoices(p, drop, suffix);
    };
  };
  std::vector<TaskDefinition> t;
  t.push_back({.name = "piqa",
               .acc_norm = true,
               .data_path = "piqa/valid.jsonl",
               .prompt = "Question: {goal}\\nAnswer:| {sol}",
               .source = "lm_eval/tasks/piqa/piqa.yaml",
               .load = LoadPiqa});
  t.push_back({.name = "hellaswag",
               .acc_norm = true,
               .data_path = "hellaswag/hellaswag_val_full.txt.bz2",
               .prompt = "preprocess({activity_label}: {ctx})| "
                         "preprocess({ending})",
               .source = "lm_eval/tasks/hellaswag/hellaswag.yaml + utils.py",
               .load = LoadHellaswag});
  t.push_back({.name = "arc_easy",
               .acc_norm = true,
               .data_path = "llm_foundry_icl/arc_easy.jsonl",
               .prompt = "Question: {question}\\nAnswer:| {choice}",
               .source = "lm_eval/tasks/arc/arc_easy.yaml",
               .load = choices("", "\nAnswer:")});
  t.push_back({.name = "arc_challenge",
               .acc_norm = true,
               .data_path = "llm_foundry_icl/arc_challenge.jsonl",
               .prompt = "Question: {question}\\nAnswer:| {choice}",
               .source = "lm_eval/tasks/arc/arc_challenge.yaml",
               .load = choices("", "\nAnswer:")});
  t.push_back({.name = "openbookqa",
               .acc_norm = true,
               .data_path = "llm_foundry_icl/openbook_qa.jsonl",
               .prompt = "{question_stem}| {choice}",
               .source = "lm_eval/tasks/openbookqa/openbookqa.yaml",
               .load = choices("", "")});
  t.push_back({.name = "winogrande",
               .kind = K::kPartial,
               .data_path = "llm_foundry_icl/winogrande.jsonl",
               .prompt = "{sentence up to _}{option}| {rest of sentence}",
               .source = "lm_eval/tasks/winogrande/default.yaml + "
                         "preprocess_winogrande.py",
               .load = [](const std::string& p) {
                 return LoadFoundryPartial(p, false);
               }});
  t.push_back(
      {.name = "copa",
       .data_path = "llm_foundry_icl/copa.jsonl",
       .prompt = "{premise without final char} because|therefore|  "
                 "{choice, first letter lower-cased}",
       .source = "lm_eval/tasks/super_glue/copa/default.yaml + utils.py",
       .load = LoadFoundryCopa});
  t.push_back({.name = "boolq",
               .data_path = "llm_foundry_icl/boolq.jsonl",
               .prompt = "{passage}\\nQuestion: {question}?\\nAnswer:| no|yes",
               .source = "lm_eval/tasks/super_glue/boolq/default.yaml",
               .load = choices("Passage: ", "\nAnswer:")});
  t.push_back({.name = "rte",
               .data_path = "superglue/RTE/val.jsonl",
               .prompt = "{premise}\\nQuestion: {hypothesis} True or "
                         "False?\\nAnswer:| True|False",
               .source = "lm_eval/tasks/super_glue/rte/default.yaml",
               .load = LoadSuperGlueRte});
  t.push_back({.name = "wsc",
               .data_path = "superglue/WSC/val.jsonl",
               .prompt = "Passage: {passage with *pronoun*}\\nQuestion: In the "
                         "passage above, does the pronoun \"*{pronoun}*\" "
                         "refer to \"*{noun}*\"?\\nAnswer:| no|yes",
               .source = "lm_eval/tasks/super_glue/wsc/default.yaml + "
                         "preprocess_wsc.py",
               .load = LoadSuperGlueWsc});
  t.push_back({.name = "wsc273",
               .kind = K::kPartial,
               .data_path = "llm_foundry_icl/winograd_wsc.jsonl",
               .prompt = "{text up to pronoun}{option}|  {text after pronoun}",
               .source = "lm_eval/tasks/wsc273/default.yaml + utils.py",
               .load = [](const std::string& p) {
                 return LoadFoundryPartial(p, true);
               }});
  t.push_back({.name = "lambada_openai",
               .kind = K::kLoglikelihood,
               .target_delimiter = "",
               .data_path = "llm_foundry_icl/lambada_openai.jsonl",
               .prompt = "{text without last word}| {last word}",
               .source = "lm_eval/tasks/lambada/lambada_openai.yaml",
               .load = LoadFoundryLambada});
  // The choices start with their own space (datasets/refcloze/README.md).
  t.push_back({.name = "refcloze",
               .target_delimiter = "",
               .acc_norm = true,
               .data_path = "datasets/refcloze/refcloze.jsonl",
               .data_in_repo = true,
               .prompt = "{query}|{choice, which starts with a space}",
               .source = "llm-foundry multiple-choice format (project data)",
               .load = choices("", "")});
  return t;
}

}  // namespace

const std::vector<TaskDefinition>& TaskRegistry() {
  static const auto* const kTasks =
      new std::vector<TaskDefinition>(BuildTasks());
  return *kTasks;
}

absl::StatusOr<const TaskDefinition*> FindTask(absl::string_view name) {
  std::vector<std::string> names;
  for (const TaskDefinition& task : TaskRegistry()) {
    if (task.name == name) return &task;
    names.push_back(task.name);
  }
  return absl::NotFoundError(absl::StrCat(
      "unknown task '", name, "' (valid: ", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<std::string> TaskDataPath(const TaskDefinition& task) {
  if (task.data_in_repo) {
    // Run from the repository root (the CLI's convention) or anywhere else
    // in a build of this checkout.
    std::error_code ec;
    if (std::filesystem::exists(task.data_path, ec)) return task.data_path;
    return absl::StrCat(DYNSPARSE_REPO_DIR, "/", task.data_path);
  }
  const char* root = std::getenv("DYNSPARSE_DATA");
  if (root == nullptr || *root == '\0') {
    return absl::FailedPreconditionError(absl::StrCat(
        "task '", task.name, "' reads $DYNSPARSE_DATA/", task.data_path,
        ": set DYNSPARSE_DATA to the shared data folder"));
  }
  return absl::StrCat(root, "/", task.data_path);
}

absl::StatusOr<std::vector<TaskDoc>> LoadTaskDocs(const TaskDefinition& task) {
  auto path = TaskDataPath(task);
  if (!path.ok()) return path.status();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*path, ec)) {
    return absl::NotFoundError(
        absl::StrCat("task '", task.name, "': data file ", *path, " not found",
                     task.data_in_repo ? " (it is produced in the repository)"
                                       : " (check DYNSPARSE_DATA)"));
  }
  auto docs = task.load(*path);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task '", task.name, "': ", *path, " has no documents"));
  }
  return docs;
}

}  // namespace dynsparse
