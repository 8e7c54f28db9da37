// lm-eval wikitext documents and detokenizer against the Python
// re-implementation (tests/fixtures/zeroshot/requests.json "wikitext").
#include "datasets/wikitext_documents.h"

#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

uint64_t Fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

int64_t CodePoints(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

TEST(WikitextTest, DetokenizerRules) {
  EXPECT_EQ(WikitextDetokenize("a @-@ b @,@ c @.@ d , e ( f ) = = g = ="),
            "a-b,c.d, e (f) == g ==");
  EXPECT_EQ(WikitextWordCount(" a  b\nc "), 5);  // ['', 'a', 'b', 'c', '']
}

TEST(WikitextTest, DocumentsMatchLmEvalReimplementation) {
  DS_REQUIRE_DATA();
  std::ifstream in(testing::FixturePath("zeroshot/requests.json"));
  const nlohmann::json want = nlohmann::json::parse(in)["wikitext"];
  auto docs = LoadWikitextDocumentsFromData();
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), want.size());
  for (size_t d = 0; d < docs->size(); ++d) {
    SCOPED_TRACE(d);
    const std::string& page = (*docs)[d];
    EXPECT_EQ(WikitextWordCount(page), want[d]["words"].get<int64_t>());
    EXPECT_EQ(static_cast<int64_t>(page.size()),
              want[d]["bytes"].get<int64_t>());
    const std::string detok = WikitextDetokenize(page);
    EXPECT_EQ(CodePoints(detok), want[d]["detokenized_chars"].get<int64_t>());
    EXPECT_EQ(std::to_string(Fnv1a64(detok)),
              want[d]["detokenized_fnv1a64"].get<std::string>());
  }
}

}  // namespace
}  // namespace dynsparse
