// llama2.c tokenizer.bin: a synthetic vocabulary (always runs) and the real
// stories260K / Llama 32k files from $DYNSPARSE_DATA.
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"
#include "tests/tokenizer/test_util.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::DataPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Serializes pieces in llama2.c's format.
std::string MakeTokenizerBin(
    const std::vector<std::pair<std::string, float>>& pieces) {
  std::string out;
  const auto put = [&out](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
  };
  int32_t max_len = 0;
  for (const auto& [piece, score] : pieces) {
    max_len = std::max<int32_t>(max_len, static_cast<int32_t>(piece.size()));
  }
  put(&max_len, sizeof(max_len));
  for (const auto& [piece, score] : pieces) {
    const auto len = static_cast<int32_t>(piece.size());
    put(&score, sizeof(score));
    put(&len, sizeof(len));
    put(piece.data(), piece.size());
  }
  return out;
}

// <unk>, <s>, </s>, 256 byte pieces, then a few merges (ids 259+).
std::vector<std::pair<std::string, float>> SyntheticPieces() {
  std::vector<std::pair<std::string, float>> pieces = {
      {"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int b = 0; b < 256; ++b)
    pieces.push_back({absl::StrFormat("<0x%02X>", b), 0});
  pieces.push_back({" ", -1});     // 259
  pieces.push_back({"a", -2});     // 260
  pieces.push_back({"b", -3});     // 261
  pieces.push_back({"ab", -10});   // 262
  pieces.push_back({" a", -5});    // 263: beats "ab", so " a" forms first.
  pieces.push_back({" ab", -20});  // 264: unreachable once " a"+"b" is gone.
  pieces.push_back({" ab", -1});   // 265: duplicate piece; lowest id wins.
  pieces.push_back({"bb", -4});    // 266
  return pieces;
}

class SyntheticLlama2cTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = testing::MakeTempDir("llama2c_synthetic");
    path_ = dir + "/tokenizer.bin";
    testing::WriteFile(path_, MakeTokenizerBin(SyntheticPieces()));
    auto loaded = LoadLlama2cTokenizer(path_, 267);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    tokenizer_ = *std::move(loaded);
  }
  std::string path_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(SyntheticLlama2cTest, MergesHighestScoreFirstLeftmostOnTies) {
  // " " a b b: "bb" (-4) beats " a" (-5) and "ab" (-10), then " a" forms.
  EXPECT_THAT(tokenizer_->Encode("abb", false), ElementsAre(263, 266));
  // " " a b -> " a" (-5) beats "ab" (-10); " a"+"b" = " ab" -> id 264.
  EXPECT_THAT(tokenizer_->Encode("ab", false), ElementsAre(264));
  // "bb" twice with equal scores: the leftmost pair merges first.
  EXPECT_THAT(tokenizer_->Encode("bbb", false), ElementsAre(259, 266, 261));
}

TEST_F(SyntheticLlama2cTest, ByteFallbackAndSpecialTokens) {
  // "é" is not a piece: its two UTF-8 bytes become <0xC3> <0xA9>.
  EXPECT_THAT(tokenizer_->Encode("\xC3\xA9", true),
              ElementsAre(1, 259, 3 + 0xC3, 3 + 0xA9));
  EXPECT_THAT(tokenizer_->Encode("", true), ElementsAre(1));
  EXPECT_TRUE(tokenizer_->Encode("", false).empty());
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_EQ(tokenizer_->vocab_size(), 267);
}

TEST_F(SyntheticLlama2cTest, DecodeLikeRunC) {
  const std::vector<int32_t> ids = tokenizer_->Encode("\xC3\xA9 ab", true);
  // After BOS the leading space of the first piece is dropped.
  EXPECT_EQ(tokenizer_->Decode(ids, true), "\xC3\xA9 ab");
  EXPECT_EQ(tokenizer_->Decode(ids, false), "\n<s>\n\xC3\xA9 ab");
  // Without BOS the dummy-prefix space stays.
  EXPECT_EQ(tokenizer_->Decode(tokenizer_->Encode("ab", false), false), " ab");
}

TEST(Llama2cDataTest, Stories260KGoldenIds) {
  DS_REQUIRE_DATA();
  auto t = LoadLlama2cTokenizer(
      DataPath("models/llama2c_stories260K/tok512.bin"), 512);
  ASSERT_TRUE(t.ok()) << t.status();
  const std::vector<int32_t> golden = {
      403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317,
      426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282,
      295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352};
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She loved to "
      "play outside in the park. One day, she saw a big, r";
  // The ids follow BOS in generation but are decoded on their own here, so
  // the first piece keeps its space, as in the MANIFEST.
  EXPECT_EQ((*t)->Decode(golden, false), " " + story);
  std::vector<int32_t> with_bos = golden;
  with_bos.insert(with_bos.begin(), 1);
  EXPECT_EQ((*t)->Decode(with_bos, true), story);
  EXPECT_EQ((*t)->Encode(story, false), golden);
  EXPECT_EQ((*t)->Encode(story, true), with_bos);
  EXPECT_EQ((*t)->IdToToken(259), " t");
  EXPECT_EQ((*t)->IdToToken(317), " Lily");
}

TEST(Llama2cDataTest, Llama32kMatchesSentencePiece) {
  DS_REQUIRE_DATA();
  auto t = LoadLlama2cTokenizer(
      DataPath("tokenizers/llama_sentencepiece/llama2c_tokenizer.bin"), 32000);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)->Encode("Hello world, this is a test.", false),
              ElementsAre(15043, 3186, 29892, 445, 338, 263, 1243, 29889));
  const std::vector<int32_t> ids =
      (*t)->Encode("Hello world, this is a test.", true);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ((*t)->Decode(ids, false), "\n<s>\nHello world, this is a test.");
  EXPECT_EQ((*t)->Decode(ids, true), "Hello world, this is a test.");
}

TEST(Llama2cDataTest, TruncatedFileNamesFileAndField) {
  DS_REQUIRE_DATA();
  const std::string full =
      testing::ReadFileOrDie(DataPath("models/llama2c_stories260K/tok512.bin"));
  const std::string dir = testing::MakeTempDir("llama2c_truncated");
  const std::string path = dir + "/tok512_truncated.bin";
  testing::WriteFile(path, full.substr(0, full.size() / 2));
  auto t = LoadLlama2cTokenizer(path, 512);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr(path));
  EXPECT_THAT(t.status().message(), HasSubstr("token["));
  EXPECT_THAT(t.status().message(), HasSubstr("truncated"));
}

}  // namespace
}  // namespace dynsparse
