// Bad task and corpus files: every loader's own checks, mistyped fields,
// encodings, empty files, WikiText's raw/tokens pair out of step and an
// unset DYNSPARSE_DATA each give an error that names the file (and line,
// field or variable), never a crash or a wrong number.
#include <filesystem>
#include <optional>
#include <string>

#include "datasets/corpus_registry.h"
#include "datasets/tasks/loaders.h"
#include "datasets/tasks/task.h"
#include "datasets/wikitext_documents.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/datasets/scoped_data_root.h"
#include "tests/io/temp_dir.h"

namespace dynsparse {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

using testing::ScopedDataRoot;

// Each test's files in a fresh folder (tests/io/temp_dir.h), removed at
// the end; Write makes the folders a relative path names.
class TaskFileErrorsTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& relative, const std::string& text) {
    const std::string path = dir_.File(relative);
    fs::create_directories(fs::path(path).parent_path());
    testing::WriteFileOrDie(path, text);
    return path;
  }

  testing::TempDir dir_;
};

TEST_F(TaskFileErrorsTest, PiqaLabelsMustMatchAndBeZeroOrOne) {
  const std::string line =
      "{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\"}\n";
  const std::string valid = Write("piqa/valid.jsonl", line + line);
  const std::string labels = Write("piqa/valid-labels.lst", "0\n");
  EXPECT_EQ(LoadPiqa(valid).status().message(),
            labels + ": 1 labels for 2 questions in " + valid);
  Write("piqa/valid-labels.lst", "0\n2\n");
  EXPECT_EQ(LoadPiqa(valid).status().message(),
            labels + ":2: label '2' is not 0 or 1");
}

TEST_F(TaskFileErrorsTest, HellaswagNeedsSixLinesAnItemAndAGoldIn0To3) {
  const std::string item = "query\n1\na\nb\nc\nd\n";
  const std::string seven = Write("hs7.txt", item + "extra\n");
  EXPECT_EQ(LoadHellaswag(seven).status().message(),
            seven + ": 7 lines, not a multiple of 6 (query, gold, 4 endings)");
  const std::string gold =
      Write("hs_gold.txt", item + "query\n4\na\nb\nc\nd\n");
  EXPECT_EQ(LoadHellaswag(gold).status().message(),
            gold + ":8: gold label '4' is not in 0..3");
  const std::string word = Write("hs_word.txt", "query\none\na\nb\nc\nd\n");
  EXPECT_EQ(LoadHellaswag(word).status().message(),
            word + ":2: gold label 'one' is not in 0..3");
}

TEST_F(TaskFileErrorsTest, CorruptBzip2NamesTheFile) {
  const std::string path = Write("hs.txt.bz2", "BZh9 this is not bzip2 data");
  auto text = ReadMaybeBz2(path);
  ASSERT_FALSE(text.ok());
  // With libbz2: "not a complete bzip2 stream (bzlib code <rc>)"; without
  // it: "built without libbz2". Either way the file is named.
  EXPECT_THAT(std::string(text.status().message()), StartsWith(path + ": "));
  EXPECT_THAT(std::string(text.status().message()),
              ::testing::AnyOf(HasSubstr("not a complete bzip2 stream"),
                               HasSubstr("built without libbz2")));
}

TEST_F(TaskFileErrorsTest, LoaderChecksNameLineAndField) {
  const std::string copa = Write(
      "copa.jsonl",
      "{\"query\": \"It rained, so\", \"choices\": [\"A\", \"B\"], \"gold\": "
      "0}\n");
  EXPECT_EQ(LoadFoundryCopa(copa).status().message(),
            copa +
                ":1: field 'query' does not end with ', because' or ', "
                "therefore'");
  const std::string rte = Write(
      "rte.jsonl",
      "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": \"maybe\"}\n");
  EXPECT_EQ(LoadSuperGlueRte(rte).status().message(),
            rte +
                ":1: field 'label' is 'maybe', not "
                "entailment|not_entailment");
  const std::string wsc =
      Write("wsc.jsonl",
            "{\"text\": \"a b\", \"target\": {\"span1_text\": \"a\", "
            "\"span2_text\": \"b\", \"span2_index\": 5}, \"label\": true}\n");
  EXPECT_EQ(LoadSuperGlueWsc(wsc).status().message(),
            wsc + ":1: field 'target.span2_index' is outside the text's words");
}

TEST_F(TaskFileErrorsTest, MistypedFieldsNameTheField) {
  const std::string gold =
      Write("gold.jsonl",
            "{\"query\": \"q\", \"choices\": [\"a\"], \"gold\": \"0\"}\n");
  EXPECT_EQ(LoadFoundryChoices(gold, "", "").status().message(),
            gold + ":1: field 'gold' is not an integer");
  const std::string empty =
      Write("empty_choices.jsonl",
            "{\"query\": \"q\", \"choices\": [], \"gold\": 0}\n");
  EXPECT_EQ(LoadFoundryChoices(empty, "", "").status().message(),
            empty + ":1: field 'choices' is not a non-empty list of strings");
  const std::string label = Write(
      "wsc_label.jsonl",
      "{\"text\": \"a b\", \"target\": {\"span1_text\": \"a\", "
      "\"span2_text\": \"b\", \"span2_index\": 1}, \"label\": \"yes\"}\n");
  EXPECT_EQ(LoadSuperGlueWsc(label).status().message(),
            label + ":1: field 'label' is not a boolean");
  const std::string target =
      Write("wsc_target.jsonl",
            "{\"text\": \"a b\", \"target\": \"b\", \"label\": true}\n");
  EXPECT_EQ(LoadSuperGlueWsc(target).status().message(),
            target + ":1: field 'target' is not an object");
}

TEST_F(TaskFileErrorsTest, InvalidUtf8NamesTheByte) {
  const std::string path = Write("latin1.jsonl",
                                 "{\"context\": \"caf\xe9\", \"continuation\": "
                                 "\"x\"}\n");
  EXPECT_EQ(LoadFoundryLambada(path).status().message(),
            path + ": invalid UTF-8 at byte 16");
}

TEST_F(TaskFileErrorsTest, AnEmptyTaskFileHasNoDocuments) {
  auto task = FindTask("copa");
  ASSERT_TRUE(task.ok());
  const std::string path = Write("llm_foundry_icl/copa.jsonl", "\n");
  ScopedDataRoot root(dir_.path());
  EXPECT_EQ(LoadTaskDocs(**task).status().message(),
            "task 'copa': " + path + " has no documents");
}

TEST_F(TaskFileErrorsTest, AnUnsetDataRootNamesTheVariable) {
  ScopedDataRoot unset(std::nullopt);
  auto task = FindTask("piqa");
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(LoadTaskDocs(**task).status().message(),
            "task 'piqa' reads $DYNSPARSE_DATA/piqa/valid.jsonl: set "
            "DYNSPARSE_DATA to the shared data folder");
  EXPECT_EQ(LoadCorpus("wikitext2").status().message(),
            "corpus 'wikitext2' needs DYNSPARSE_DATA set to the shared data "
            "folder");
  EXPECT_EQ(LoadWikitextDocumentsFromData().status().message(),
            "the wikitext protocol reads $DYNSPARSE_DATA/wikitext2/"
            "wiki.test.raw and wiki.test.tokens: set DYNSPARSE_DATA to the "
            "shared data folder");
}

// The raw file's lines stand for the tokenized file's non-blank ones.
TEST_F(TaskFileErrorsTest, WikitextRawAndTokensMustBeInStep) {
  const std::string tokens = Write("wiki.test.tokens", " = A = \n\n x @-@ y\n");
  const std::string more = Write("more.raw", " = A =\n x-y\n extra\n");
  EXPECT_EQ(LoadWikitextDocuments(more, tokens).status().message(),
            more + ": 3 lines, but " + tokens + " has 2 non-blank lines");
  const std::string fewer = Write("fewer.raw", " = A =\n");
  EXPECT_EQ(LoadWikitextDocuments(fewer, tokens).status().message(),
            fewer + ": 1 lines, fewer than the non-blank lines of " + tokens);
  const std::string good = Write("good.raw", " = A =\r\n x-y\r\n");
  auto docs = LoadWikitextDocuments(good, tokens);
  ASSERT_TRUE(docs.ok()) << docs.status();
}

}  // namespace
}  // namespace dynsparse
