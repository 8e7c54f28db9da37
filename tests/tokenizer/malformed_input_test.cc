// Malformed inputs give an absl::Status naming the file and the field.
#include <string>

#include "core/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tokenizer/test_util.h"

namespace dynsparse {
namespace {

using ::testing::HasSubstr;

// A minimal valid BPE tokenizer.json with `model`, `pre_tokenizer` and
// `normalizer` spliced in.
std::string TokenizerJson(const std::string& model,
                          const std::string& pre_tokenizer = "null",
                          const std::string& normalizer = "null") {
  return R"({"version": "1.0", "added_tokens": [], "normalizer": )" +
         normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer +
         R"(, "post_processor": null, "decoder": null, "model": )" + model +
         "}";
}

constexpr char kValidModel[] =
    R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";

class MalformedTokenizerJsonTest : public ::testing::Test {
 protected:
  // Writes tokenizer.json and returns the load error.
  absl::Status LoadError(const std::string& contents) {
    dir_ = testing::MakeTempDir(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    path_ = dir_ + "/tokenizer.json";
    testing::WriteFile(path_, contents);
    auto loaded = LoadHfTokenizer(dir_);
    EXPECT_FALSE(loaded.ok()) << "loaded a malformed tokenizer.json";
    return loaded.ok() ? absl::OkStatus() : loaded.status();
  }
  void ExpectMentions(const absl::Status& status,
                      std::initializer_list<const char*> parts) {
    EXPECT_THAT(std::string(status.message()), HasSubstr(path_));
    for (const char* part : parts) {
      EXPECT_THAT(std::string(status.message()), HasSubstr(part));
    }
  }
  std::string dir_;
  std::string path_;
};

TEST_F(MalformedTokenizerJsonTest, ValidMinimalFileLoads) {
  // Guards the fixtures below: only the spliced field is broken.
  const std::string dir = testing::MakeTempDir("valid_minimal");
  testing::WriteFile(dir + "/tokenizer.json", TokenizerJson(kValidModel));
  auto loaded = LoadHfTokenizer(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->Encode("abba", false), (std::vector<int32_t>{2, 1, 0}));
}

TEST_F(MalformedTokenizerJsonTest, NotJson) {
  ExpectMentions(LoadError("{\"model\": {"), {"not valid JSON"});
}

TEST_F(MalformedTokenizerJsonTest, MissingModel) {
  ExpectMentions(LoadError(R"({"version": "1.0", "added_tokens": []})"),
                 {"model", "missing"});
}

TEST_F(MalformedTokenizerJsonTest, VocabOfWrongType) {
  ExpectMentions(
      LoadError(TokenizerJson(R"({"type": "BPE", "vocab": [], "merges": []})")),
      {"model.vocab", "expected an object, got array"});
}

TEST_F(MalformedTokenizerJsonTest, FlagOfWrongType) {
  ExpectMentions(
      LoadError(TokenizerJson(
          kValidModel, R"({"type": "ByteLevel", "add_prefix_space": "yes"})")),
      {"pre_tokenizer.add_prefix_space", "expected a boolean, got string"});
}

TEST_F(MalformedTokenizerJsonTest, MergeNamesUnknownToken) {
  ExpectMentions(LoadError(TokenizerJson(
                     R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
              "merges": ["a b", ["a", "xx"]]})")),
                 {"model.merges[1]", "token 'xx' not in vocab"});
}

TEST_F(MalformedTokenizerJsonTest, MergedTokenNotInVocab) {
  ExpectMentions(
      LoadError(TokenizerJson(
          R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]})")),
      {"model.merges[0]", "merged token 'ab' not in vocab"});
}

TEST_F(MalformedTokenizerJsonTest, BadMergeString) {
  ExpectMentions(LoadError(TokenizerJson(
                     R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]})")),
                 {"model.merges[0]", "left right"});
}

TEST_F(MalformedTokenizerJsonTest, UnsupportedModelType) {
  ExpectMentions(
      LoadError(TokenizerJson(R"({"type": "Unigram", "vocab": [["a", 0.0]]})")),
      {"model.type", "unsupported model type 'Unigram'"});
}

TEST_F(MalformedTokenizerJsonTest, UnknownPreTokenizerType) {
  ExpectMentions(
      LoadError(TokenizerJson(kValidModel, R"({"type": "Fancy"})")),
      {"pre_tokenizer.type", "unsupported pre-tokenizer type 'Fancy'"});
}

TEST_F(MalformedTokenizerJsonTest, UnknownTypeInsideSequence) {
  ExpectMentions(LoadError(TokenizerJson(kValidModel, R"({"type": "Sequence",
          "pretokenizers": [{"type": "Digits"}, {"type": "Fancy"}]})")),
                 {"pre_tokenizer.pretokenizers[1].type", "'Fancy'"});
}

TEST_F(MalformedTokenizerJsonTest, UnknownNormalizerType) {
  ExpectMentions(
      LoadError(TokenizerJson(kValidModel, "null",
                              R"({"type": "Precompiled",
                                  "precompiled_charsmap": "AAAA"})")),
      {"normalizer.type", "unsupported normalizer type 'Precompiled'"});
}

TEST_F(MalformedTokenizerJsonTest, UnsupportedRegex) {
  ExpectMentions(LoadError(TokenizerJson(kValidModel, R"({"type": "Split",
          "pattern": {"Regex": "\\w+|[^\\w\\s]+"}, "behavior": "Isolated",
          "invert": false})")),
                 {"pre_tokenizer.pattern.Regex", "unsupported regex", "\\w+"});
}

TEST_F(MalformedTokenizerJsonTest, TemplateNamesUnknownSpecialToken) {
  ExpectMentions(LoadError(R"({"model": )" + std::string(kValidModel) +
                           R"(, "post_processor": {"type": "TemplateProcessing",
                   "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                              {"Sequence": {"id": "A", "type_id": 0}}],
                   "special_tokens": {}}})"),
                 {"post_processor.single[0].SpecialToken.id", "'<s>'"});
}

TEST_F(MalformedTokenizerJsonTest, AddedTokenWithoutContent) {
  ExpectMentions(LoadError(R"({"model": )" + std::string(kValidModel) +
                           R"(, "added_tokens": [{"id": 3}]})"),
                 {"added_tokens[0].content", "missing"});
}

TEST(MalformedFilesTest, MissingDirectory) {
  auto loaded = LoadHfTokenizer("/nonexistent/dynsparse/tokenizer");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()),
              HasSubstr("/nonexistent/dynsparse/tokenizer"));
}

TEST(MalformedFilesTest, BadMergesTxtLine) {
  const std::string dir = testing::MakeTempDir("bad_merges_txt");
  testing::WriteFile(dir + "/vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  testing::WriteFile(dir + "/merges.txt", "#version: 0.2\na b\nab\n");
  auto loaded = LoadHfTokenizer(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()),
              HasSubstr(dir + "/merges.txt: line 3"));
}

TEST(MalformedFilesTest, TruncatedLlama2cTokenizerBin) {
  const std::string dir = testing::MakeTempDir("truncated_bin");
  const std::string path = dir + "/tokenizer.bin";
  // max_token_length, then token 0 with score and len 5 but only 2 bytes.
  std::string data(4, '\0');
  const float score = 0;
  const int32_t len = 5;
  data.append(reinterpret_cast<const char*>(&score), sizeof(score));
  data.append(reinterpret_cast<const char*>(&len), sizeof(len));
  data += "<u";
  testing::WriteFile(path, data);
  auto loaded = LoadLlama2cTokenizer(path, 3);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(loaded.status().message()),
              HasSubstr("token[0].bytes: truncated"));
  // Too few tokens for the requested vocab_size.
  testing::WriteFile(path, std::string(4, '\0'));
  loaded = LoadLlama2cTokenizer(path, 3);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()),
              HasSubstr("token[0].score: truncated"));
}

}  // namespace
}  // namespace dynsparse
