// Readers of the task data formats under $DYNSPARSE_DATA (see the shared
// data MANIFEST.md) into lm-eval-preprocessed TaskDocs. Each loader applies
// the task's lm-eval doc_to_text / doc_to_choice / doc_to_target.
#ifndef DYNSPARSE_DATASETS_TASKS_LOADERS_H_
#define DYNSPARSE_DATASETS_TASKS_LOADERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/tasks/task.h"

namespace dynsparse {

// PIQA's original release: valid.jsonl (goal, sol1, sol2) and, beside it,
// valid-labels.lst. "Question: {goal}\nAnswer:", choices [sol1, sol2].
absl::StatusOr<std::vector<TaskDoc>> LoadPiqa(const std::string& path);

// llama.cpp's HellaSwag text (.txt, or .txt.bz2): 6 lines per item (query,
// gold, 4 endings); query and endings go through lm-eval's preprocess().
absl::StatusOr<std::vector<TaskDoc>> LoadHellaswag(const std::string& path);

// llm-foundry query/choices/gold. `answer_suffix` is appended to the query
// (ARC: "\nAnswer:"); `query_prefix_to_drop` must start the query and is
// removed (BoolQ's "Passage: ").
absl::StatusOr<std::vector<TaskDoc>> LoadFoundryChoices(
    const std::string& path, const std::string& query_prefix_to_drop,
    const std::string& answer_suffix);

// llm-foundry COPA ("premise, because") in lm-eval's form: "premise because",
// choices " " + choice with a lower-case first letter.
absl::StatusOr<std::vector<TaskDoc>> LoadFoundryCopa(const std::string& path);

// llm-foundry context_options/continuation/gold (partial scoring). With
// `wsc273_spacing`, the continuation gets back the space lm-eval's wsc273
// target (text after the pronoun) starts with when it starts with a word.
absl::StatusOr<std::vector<TaskDoc>> LoadFoundryPartial(const std::string& path,
                                                        bool wsc273_spacing);

// llm-foundry LAMBADA context/continuation: target " " + last word.
absl::StatusOr<std::vector<TaskDoc>> LoadFoundryLambada(
    const std::string& path);

// SuperGLUE RTE jsonl (premise, hypothesis, label entailment|not_entailment).
absl::StatusOr<std::vector<TaskDoc>> LoadSuperGlueRte(const std::string& path);

// SuperGLUE WSC jsonl (text, target.span1/2_text, span2_index, label), with
// lm-eval's default_doc_to_text.
absl::StatusOr<std::vector<TaskDoc>> LoadSuperGlueWsc(const std::string& path);

// The whole text of a file that may be bzip2-compressed (by its .bz2 name).
absl::StatusOr<std::string> ReadMaybeBz2(const std::string& path);

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_TASKS_LOADERS_H_
