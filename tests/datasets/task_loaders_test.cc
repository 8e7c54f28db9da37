// Task data loading: errors that name file:line and field, lm-eval's string
// transforms, and every registered task's file loading when the data exists.
#include <filesystem>
#include <fstream>

#include "datasets/tasks/jsonl.h"
#include "datasets/tasks/loaders.h"
#include "datasets/tasks/task.h"
#include "datasets/tasks/text_transforms.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/datasets/scoped_data_root.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(JsonlTest, MalformedLinesNameFileAndLine) {
  const std::string p = Write("ds_bad.jsonl", "{\"query\": \"a\"}\n\n{oops\n");
  auto lines = ReadJsonl(p);
  ASSERT_FALSE(lines.ok());
  EXPECT_EQ(lines.status().message(), p + ":3: not a JSON object");
}

TEST(JsonlTest, MissingAndMistypedFieldsNameTheField) {
  const std::string p =
      Write("ds_fields.jsonl",
            "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n"
            "{\"query\": \"q\", \"choices\": [\"a\", \"b\"]}\n");
  auto docs = LoadFoundryChoices(p, "", "");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), p + ":2: field 'gold' is missing");
  const std::string q =
      Write("ds_gold.jsonl",
            "{\"query\": \"q\", \"choices\": [\"a\"], \"gold\": 3}\n");
  EXPECT_EQ(LoadFoundryChoices(q, "", "").status().message(),
            q + ":1: field 'gold' is 3, outside [0, 1)");
  const std::string w = Write(
      "ds_wsc.jsonl",
      "{\"text\": \"a b\", \"target\": {\"span1_text\": \"a\", \"span2_text\": "
      "1, \"span2_index\": 1}, \"label\": true}\n");
  EXPECT_EQ(LoadSuperGlueWsc(w).status().message(),
            w + ":1: field 'target.span2_text' is not a string");
}

TEST(TextTransformsTest, HellaswagPreprocess) {
  // " [title]" becomes ". ", other bracketed tags go, double spaces collapse.
  EXPECT_EQ(HellaswagPreprocess("  Cars [title] Wash [step] it  well [x "),
            "Cars. Wash it well [x");
}

TEST(TextTransformsTest, GeneralDetokenize) {
  // Expected strings checked with the Python originals (str.replace/re.sub).
  EXPECT_EQ(GeneralDetokenize("He did n't say \" hi \" ( ok ) , it 's ."),
            "He didn't say\"hi\"(ok), it's.");
}

TEST(TaskRegistryTest, UnknownTaskListsValidNames) {
  auto t = FindTask("piqua");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()),
              ::testing::StartsWith("unknown task 'piqua' (valid: piqa, "));
}

TEST(TaskRegistryTest, MissingDataNamesThePathAndVariable) {
  auto task = FindTask("copa");
  ASSERT_TRUE(task.ok());
  absl::StatusOr<std::vector<TaskDoc>> docs;
  {
    testing::ScopedDataRoot root("/nonexistent-ds");
    docs = LoadTaskDocs(**task);
  }
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(),
            "task 'copa': data file /nonexistent-ds/llm_foundry_icl/copa.jsonl "
            "not found (check DYNSPARSE_DATA)");
}

TEST(TaskRegistryTest, EveryTaskLoads) {
  DS_REQUIRE_DATA();
  for (const TaskDefinition& task : TaskRegistry()) {
    SCOPED_TRACE(task.name);
    if (task.data_in_repo) {
      auto path = TaskDataPath(task);
      ASSERT_TRUE(path.ok());
      if (!std::filesystem::exists(*path)) {
        std::cerr << "skipping " << task.name << ": " << *path
                  << " is not in the repository yet\n";
        continue;
      }
    }
    auto docs = LoadTaskDocs(task);
    ASSERT_TRUE(docs.ok()) << docs.status();
    ASSERT_FALSE(docs->empty());
    for (const TaskDoc& d : *docs) {
      if (task.kind != TaskKind::kLoglikelihood) {
        ASSERT_GE(d.choices.size(), 2u);
        ASSERT_LT(d.gold, static_cast<int>(d.choices.size()));
      } else {
        ASSERT_FALSE(d.target.empty());
      }
    }
  }
}

}  // namespace
}  // namespace dynsparse
