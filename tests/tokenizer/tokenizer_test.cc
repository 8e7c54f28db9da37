// Tokenizer API behaviour on the fixture tokenizers and on the shared GPT-2
// files (vocab.json + merges.txt path).
#include "core/tokenizer/tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"
#include "tests/tokenizer/test_util.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::DataPath;
using ::dynsparse::testing::FixturePath;
using ::testing::ElementsAre;

std::unique_ptr<Tokenizer> LoadFixture(const std::string& name) {
  auto tokenizer = LoadHfTokenizer(FixturePath("tokenizers/" + name));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

TEST(HfTokenizerTest, Gpt2FixtureKnownIdsAndSpecials) {
  auto t = LoadFixture("gpt2");
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->Encode("Hello world", true), ElementsAre(15496, 995));
  EXPECT_EQ(t->vocab_size(), 50257);
  EXPECT_EQ(t->bos_id(), 50256);
  EXPECT_EQ(t->eos_id(), 50256);
  EXPECT_FALSE(t->adds_bos());
  // The special token is matched in the text, and skipped on request.
  const std::vector<int32_t> ids = t->Encode("a<|endoftext|>b", false);
  EXPECT_THAT(ids, ElementsAre(64, 50256, 65));
  EXPECT_EQ(t->Decode(ids, false), "a<|endoftext|>b");
  EXPECT_EQ(t->Decode(ids, true), "ab");
  EXPECT_EQ(t->TokenToId("<|endoftext|>"), 50256);
  EXPECT_EQ(t->IdToToken(995), "\xC4\xA0world");  // "Ġworld"
}

TEST(HfTokenizerTest, Llama2FixtureAddsBos) {
  auto t = LoadFixture("llama2");
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->Encode("Hello world, this is a test.", true),
              ElementsAre(1, 15043, 3186, 29892, 445, 338, 263, 1243, 29889));
  EXPECT_THAT(t->Encode("Hello world, this is a test.", false),
              ElementsAre(15043, 3186, 29892, 445, 338, 263, 1243, 29889));
  EXPECT_EQ(t->vocab_size(), 32000);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  EXPECT_TRUE(t->adds_bos());
  // Byte fallback: U+10FFFF is not in the vocabulary.
  EXPECT_THAT(t->Encode("\xF4\x8F\xBF\xBF", false),
              ElementsAre(29871, 3 + 0xF4, 3 + 0x8F, 3 + 0xBF, 3 + 0xBF));
}

TEST(HfTokenizerTest, Llama3StyleFixtureSpecials) {
  auto t = LoadFixture("llama3_style");
  ASSERT_NE(t, nullptr);
  const std::optional<int32_t> bos = t->TokenToId("<|begin_of_text|>");
  ASSERT_TRUE(bos.has_value());
  EXPECT_GE(*bos, 1000);  // After the trained vocabulary, as in Llama-3.
  EXPECT_EQ(t->bos_id(), bos);
  EXPECT_EQ(t->eos_id(), t->TokenToId("<|end_of_text|>"));
  EXPECT_TRUE(t->adds_bos());
  EXPECT_EQ(t->Encode("hello", true).front(), *bos);
  EXPECT_EQ(t->vocab_size(), *t->TokenToId("dynsparse") + 1);
}

TEST(HfTokenizerTest, LoadsTokenizerJsonPathDirectly) {
  auto t = LoadHfTokenizer(FixturePath("tokenizers/gpt2/tokenizer.json"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)->Encode("Hello world", false), ElementsAre(15496, 995));
}

TEST(HfTokenizerTest, LongSingleWordInputIsFast) {
  // Without a pre-tokenizer the whole text is one BPE word; a quadratic
  // merge loop would take minutes here.
  auto t = LoadFixture("llama2");
  ASSERT_NE(t, nullptr);
  std::string text;
  while (text.size() < 500'000) text += "The quick brown fox jumps. ";
  const std::vector<int32_t> ids = t->Encode(text, false);
  EXPECT_GT(ids.size(), 75'000u);
  EXPECT_EQ(t->Decode(ids, false), text);
}

TEST(HfTokenizerTest, InvalidUtf8InputIsHandled) {
  // HF only takes valid strings; here invalid bytes must not crash, and
  // byte-level tokenizers decode them as U+FFFD.
  const std::string invalid = "ok \xFF\xC3 \xE2\x82 \xED\xA0\x80 end";
  for (const char* name :
       {"gpt2", "llama2", "llama2_metaspace", "llama3_style"}) {
    auto t = LoadFixture(name);
    ASSERT_NE(t, nullptr);
    const std::vector<int32_t> ids = t->Encode(invalid, false);
    EXPECT_FALSE(ids.empty()) << name;
    EXPECT_THAT(t->Decode(ids, false), ::testing::HasSubstr("\xEF\xBF\xBD"))
        << name;
  }
}

// A tokenizer.json with `post_processor`, and a tokenizer_config.json that
// asks for BOS and EOS.
std::unique_ptr<Tokenizer> LoadWithConfig(const std::string& name,
                                          const std::string& post_processor) {
  const std::string dir = testing::MakeTempDir(name);
  testing::WriteFile(dir + "/tokenizer.json", R"({
    "added_tokens": [
      {"id": 0, "content": "<s>", "special": true, "normalized": false},
      {"id": 1, "content": "</s>", "special": true, "normalized": false}],
    "post_processor": )" + post_processor + R"(,
    "model": {"type": "BPE", "vocab": {"<s>": 0, "</s>": 1, "a": 2, "b": 3,
              "ab": 4}, "merges": ["a b"]}})");
  testing::WriteFile(dir + "/tokenizer_config.json", R"({
    "add_bos_token": true, "add_eos_token": true, "bos_token": "<s>",
    "eos_token": {"content": "</s>", "lstrip": false}})");
  auto tokenizer = LoadHfTokenizer(dir);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

TEST(HfTokenizerTest, ConfigAddsBosEosWhenNoPostProcessorDecides) {
  for (const char* post_processor : {"null", R"({"type": "ByteLevel"})"}) {
    auto t = LoadWithConfig("config_fallback", post_processor);
    ASSERT_NE(t, nullptr);
    EXPECT_THAT(t->Encode("ab", true), ElementsAre(0, 4, 1)) << post_processor;
    EXPECT_THAT(t->Encode("ab", false), ElementsAre(4)) << post_processor;
    EXPECT_TRUE(t->adds_bos());
    EXPECT_EQ(t->bos_id(), 0);
    EXPECT_EQ(t->eos_id(), 1);
  }
}

TEST(HfTokenizerTest, TemplateOverridesConfig) {
  // Like `tokenizers`, a template decides, even one without special tokens.
  auto t = LoadWithConfig("config_template", R"({"type": "TemplateProcessing",
      "single": [{"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {}})");
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->Encode("ab", true), ElementsAre(4));
  EXPECT_FALSE(t->adds_bos());
}

TEST(Gpt2FilesTest, ManifestChecks) {
  DS_REQUIRE_DATA();
  auto t =
      LoadBpeVocabMergesTokenizer(DataPath("tokenizers/gpt2_bpe/encoder.json"),
                                  DataPath("tokenizers/gpt2_bpe/vocab.bpe"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)->Encode("Hello world", true), ElementsAre(15496, 995));
  EXPECT_THAT(
      (*t)->Encode(" The quick brown fox jumps over the lazy dog.", true),
      ElementsAre(383, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13));
  EXPECT_EQ((*t)->vocab_size(), 50257);
  EXPECT_EQ((*t)->eos_id(), 50256);
  EXPECT_THAT((*t)->Encode("<|endoftext|>", false), ElementsAre(50256));
}

TEST(Gpt2FilesTest, FolderWithVocabJsonAndMergesTxtMatchesTokenizerJson) {
  DS_REQUIRE_DATA();
  const std::string dir = testing::MakeTempDir("gpt2_files");
  std::filesystem::copy_file(DataPath("tokenizers/gpt2_bpe/encoder.json"),
                             dir + "/vocab.json");
  std::filesystem::copy_file(DataPath("tokenizers/gpt2_bpe/vocab.bpe"),
                             dir + "/merges.txt");
  auto from_files = LoadHfTokenizer(dir);
  ASSERT_TRUE(from_files.ok()) << from_files.status();
  auto from_json = LoadFixture("gpt2");
  ASSERT_NE(from_json, nullptr);
  for (const char* text :
       {"Hello world", "  leading\tand trailing  ", "I'll say it's 12345!\n",
        "\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80", "a<|endoftext|>b", ""}) {
    EXPECT_EQ((*from_files)->Encode(text, true), from_json->Encode(text, true))
        << text;
  }
}

}  // namespace
}  // namespace dynsparse
