// Unit tests of the pipeline building blocks, with expectations taken from
// HF `tokenizers` 0.23 (Python) where they encode HF behaviour.
#include <string>
#include <vector>

#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/bpe_model.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/decoders.h"
#include "core/tokenizer/split_regex.h"
#include "core/tokenizer/text_split.h"
#include "core/tokenizer/utf8.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dynsparse::tok {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Pieces(std::string_view text,
                                const std::vector<ByteRange>& ranges) {
  std::vector<std::string> out;
  for (const auto& [start, end] : ranges) {
    out.emplace_back(text.substr(start, end - start));
  }
  return out;
}

TEST(Utf8Test, LossyReplacesMaximalSubparts) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(Utf8Lossy("a\xE2\x82z"), "a" + fffd + "z");  // Truncated 3-byte.
  EXPECT_EQ(Utf8Lossy("\xC0\xAF"), fffd + fffd);         // Overlong lead.
  EXPECT_EQ(Utf8Lossy("\xED\xA0\x80"), fffd + fffd + fffd);  // Surrogate.
  EXPECT_EQ(Utf8Lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9llo"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(ByteLevelTest, MapsEveryByteReversibly) {
  EXPECT_EQ(BytesToByteLevel(" "), "\xC4\xA0");   // Ġ
  EXPECT_EQ(BytesToByteLevel("\n"), "\xC4\x8A");  // Ċ
  EXPECT_EQ(BytesToByteLevel("a!~"), "a!~");
  for (int b = 0; b < 256; ++b) {
    const std::string mapped = BytesToByteLevel(std::string(1, char(b)));
    const DecodedChar c = DecodeUtf8(mapped, 0);
    ASSERT_EQ(c.len, mapped.size());
    EXPECT_EQ(ByteLevelCharToByte(c.cp), b);
  }
  EXPECT_FALSE(ByteLevelCharToByte(' ').has_value());
  EXPECT_FALSE(ByteLevelCharToByte(0x2581).has_value());
}

TEST(SplitRegexTest, RecognizesOnlyKnownPatterns) {
  EXPECT_EQ(RecognizeSplitRegex(kGpt2Pattern), SplitRegex::kGpt2);
  EXPECT_EQ(RecognizeSplitRegex(kLlama3Pattern), SplitRegex::kLlama3);
  EXPECT_FALSE(RecognizeSplitRegex(R"(\w+)").has_value());
}

TEST(SplitRegexTest, Gpt2MatchesOniguruma) {
  const std::string text = "Hello  world's 12345 HE'S ok!!\n\n  x\t";
  EXPECT_THAT(Pieces(text, FindRegexMatches(SplitRegex::kGpt2, text)),
              ElementsAre("Hello", " ", " world", "'s", " 12345", " HE", "'",
                          "S", " ok", "!!", "\n\n ", " x", "\t"));
}

TEST(SplitRegexTest, Llama3MatchesOniguruma) {
  const std::string text = "Hello  world's 12345 HE'S ok!!\n\n  x\t";
  EXPECT_THAT(Pieces(text, FindRegexMatches(SplitRegex::kLlama3, text)),
              ElementsAre("Hello", " ", " world", "'s", " ", "123", "45", " HE",
                          "'S", " ok", "!!\n\n", " ", " x", "\t"));
  const std::string code = "  \n\n  foo(bar);\r\n  return 1234567;";
  EXPECT_THAT(Pieces(code, FindRegexMatches(SplitRegex::kLlama3, code)),
              ElementsAre("  \n\n", " ", " foo", "(bar", ");\r\n", " ",
                          " return", " ", "123", "456", "7", ";"));
  // Case-insensitive contractions fold U+017F (long s) to 's'.
  const std::string folded = "it'\xC5\xBF DON'T";
  EXPECT_THAT(Pieces(folded, FindRegexMatches(SplitRegex::kLlama3, folded)),
              ElementsAre("it", "'\xC5\xBF", " DON", "'T"));
}

TEST(TextSplitTest, BehaviorsMatchHf) {
  const std::string text = "  a  b ";
  const std::vector<Segment> spaces = SegmentsBySubstring(text, " ");
  EXPECT_THAT(
      Pieces(text, ApplySplitBehavior(spaces, SplitBehavior::kMergedWithNext)),
      ElementsAre(" ", " a", " ", " b", " "));
  EXPECT_THAT(
      Pieces(text, ApplySplitBehavior(spaces, SplitBehavior::kContiguous)),
      ElementsAre("  ", "a", "  ", "b", " "));
  EXPECT_THAT(Pieces(text, ApplySplitBehavior(
                               spaces, SplitBehavior::kMergedWithPrevious)),
              ElementsAre(" ", " ", "a ", " ", "b "));
  EXPECT_THAT(Pieces(text, ApplySplitBehavior(spaces, SplitBehavior::kRemoved)),
              ElementsAre("a", "b"));
}

BpeModel MakeModel(BpeOptions options = {}) {
  BpeVocab vocab = {{"a", 0},  {"b", 1},   {"c", 2},     {"ab", 3},
                    {"bc", 4}, {"abc", 5}, {"<unk>", 6}, {"<0x7A>", 7}};
  const BpeMerges merges = {{"b", "c"}, {"a", "b"}, {"a", "bc"}};
  auto model = BpeModel::Create(std::move(vocab), merges, std::move(options),
                                [](size_t i) { return std::to_string(i); });
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

TEST(BpeModelTest, AppliesLowestRankMergeFirst) {
  const BpeModel model = MakeModel();
  std::vector<int32_t> ids;
  model.Tokenize("abc", nullptr, &ids);  // "bc" (rank 0) before "ab".
  EXPECT_THAT(ids, ElementsAre(5));
  ids.clear();
  model.Tokenize("abab", nullptr, &ids);
  EXPECT_THAT(ids, ElementsAre(3, 3));
}

TEST(BpeModelTest, UnknownCharsUseByteFallbackThenUnk) {
  BpeOptions options;
  options.unk_token = "<unk>";
  options.byte_fallback = true;
  options.fuse_unk = true;
  const BpeModel model = MakeModel(options);
  std::vector<int32_t> ids;
  // 'z' has a byte token; 'x' and 'y' do not and fuse into one <unk>.
  model.Tokenize("zxya", nullptr, &ids);
  EXPECT_THAT(ids, ElementsAre(7, 6, 0));
}

TEST(AddedVocabularyTest, StripAndSingleWordRules) {
  const BpeModel model = MakeModel();
  AddedVocabulary added;
  AddedToken mask{.content = "<mask>",
                  .lstrip = true,
                  .rstrip = true,
                  .normalized = false,
                  .special = true};
  AddedToken word{.content = "ab", .single_word = true};
  ASSERT_EQ(added.Add(mask, model), 8);  // After the model's 8 tokens.
  ASSERT_EQ(added.Add(word, model), 3);  // Already in the vocabulary.
  added.Finalize(model, nullptr);
  std::vector<std::string> texts;
  std::vector<int32_t> ids;
  for (const Piece& p :
       added.ExtractAndNormalize("x \t<mask>  ab cab", nullptr)) {
    texts.push_back(p.text);
    ids.push_back(p.added_id);
  }
  EXPECT_THAT(texts, ElementsAre("x", " \t<mask>  ", "ab", " cab"));
  EXPECT_THAT(ids, ElementsAre(-1, 8, 3, -1));
  EXPECT_TRUE(added.IsSpecial("<mask>"));
  EXPECT_FALSE(added.IsSpecial("ab"));
}

TEST(DecodersTest, ByteFallbackStripAndMetaspace) {
  std::vector<std::string> tokens = {"<0x41>", "<0xE2>", "<0x82>",
                                     "x",      "<0xC3>", "<0xA9>"};
  ByteFallbackDecoder().DecodeChain(&tokens);
  EXPECT_THAT(tokens, ElementsAre("\xEF\xBF\xBD", "\xEF\xBF\xBD",
                                  "\xEF\xBF\xBD", "x", "\xC3\xA9"));
  tokens = {"  a ", " b"};
  StripDecoder(' ', 2, 1).DecodeChain(&tokens);
  EXPECT_THAT(tokens, ElementsAre("a", "b"));
  // HF drops every "▁" of the first token, not only the leading one.
  const MetaspaceDecoder metaspace(0x2581, PrependScheme::kAlways);
  EXPECT_EQ(DecodeTokens(&metaspace, {"\xE2\x96\x81\xE2\x96\x81"
                                      "a",
                                      "\xE2\x96\x81"
                                      "b"}),
            "a b");
}

}  // namespace
}  // namespace dynsparse::tok
