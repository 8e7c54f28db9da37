#include "datasets/wikitext_documents.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "datasets/tasks/text_transforms.h"
#include "datasets/text_file.h"

namespace dynsparse {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

// re.sub(open + r"\s*([^close]*?)\s*" + close, open + r"\1" + close, s):
// from each `open` to the next `close`, the inner text loses its leading and
// trailing whitespace.
std::string TrimInside(std::string_view s, char open, char close) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == open) {
      const size_t end = s.find(close, i + 1);
      if (end != std::string_view::npos) {
        size_t b = i + 1, e = end;
        while (b < e && IsSpace(s[b])) ++b;
        while (e > b && IsSpace(s[e - 1])) --e;
        out.push_back(open);
        out.append(s.substr(b, e - b));
        out.push_back(close);
        i = end + 1;
        continue;
      }
    }
    out.push_back(s[i++]);
  }
  return out;
}

// re.sub(r"/' [0-9]/", r"/'[0-9]/", s): the replacement is literal text.
std::string SlashQuoteDigit(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (i + 4 < s.size() && s.substr(i, 3) == "/' " && s[i + 3] >= '0' &&
        s[i + 3] <= '9' && s[i + 4] == '/') {
      out.append("/'[0-9]/");
      i += 5;
      continue;
    }
    out.push_back(s[i++]);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> LoadWikitextDocuments(
    const std::string& raw_path, const std::string& tokens_path) {
  auto raw = ReadTextFile(raw_path);
  if (!raw.ok()) return raw.status();
  auto tokens = ReadTextFile(tokens_path);
  if (!tokens.ok()) return tokens.status();
  std::vector<std::string> raw_lines = absl::StrSplit(*raw, '\n');
  if (!raw_lines.empty() && raw_lines.back().empty()) raw_lines.pop_back();
  std::vector<std::string> token_lines = absl::StrSplit(*tokens, '\n');
  if (!token_lines.empty() && token_lines.back().empty())
    token_lines.pop_back();
  // The original file: a " " line where the tokenized file has a blank line,
  // otherwise the next raw line (without the copy's CR).
  std::vector<std::string> lines;
  size_t next = 0;
  for (size_t i = 0; i < token_lines.size(); ++i) {
    if (StripAscii(token_lines[i]).empty()) {
      lines.push_back(" ");
      continue;
    }
    if (next >= raw_lines.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(raw_path, ": ", raw_lines.size(),
                       " lines, fewer than the non-blank "
                       "lines of ",
                       tokens_path));
    }
    std::string line = raw_lines[next++];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  if (next != raw_lines.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(raw_path, ": ", raw_lines.size(), " lines, but ",
                     tokens_path, " has ", next, " non-blank lines"));
  }
  lines.push_back("");  // The final newline, as Python's split("\n") gives.
  std::vector<std::string> docs;
  std::vector<std::string> page;
  for (const std::string& line : lines) {
    const std::string r =
        StripAscii(ReplaceAll(ReplaceAll(line, "= = =", "==="), "= =", "=="));
    if (r.size() >= 3 && r.compare(0, 2, "= ") == 0 &&
        r.compare(r.size() - 2, 2, " =") == 0) {
      std::string text = absl::StrJoin(page, "\n");
      if (!StripAscii(text).empty()) docs.push_back(std::move(text));
      page.clear();
    }
    page.push_back(line);
  }
  docs.push_back(absl::StrJoin(page, "\n"));
  return docs;
}

absl::StatusOr<std::vector<std::string>> LoadWikitextDocumentsFromData() {
  const char* root = std::getenv("DYNSPARSE_DATA");
  if (root == nullptr || *root == '\0') {
    return absl::FailedPreconditionError(
        "the wikitext protocol reads $DYNSPARSE_DATA/wikitext2/wiki.test.raw "
        "and wiki.test.tokens: set DYNSPARSE_DATA to the shared data folder");
  }
  return LoadWikitextDocuments(
      absl::StrCat(root, "/wikitext2/wiki.test.raw"),
      absl::StrCat(root, "/wikitext2/wiki.test.tokens"));
}

std::string WikitextDetokenize(std::string_view page) {
  std::string s = ReplaceAll(page, "s '", "s'");
  s = SlashQuoteDigit(s);
  s = ReplaceAll(s, " @-@ ", "-");
  s = ReplaceAll(s, " @,@ ", ",");
  s = ReplaceAll(s, " @.@ ", ".");
  s = ReplaceAll(s, " : ", ": ");
  s = ReplaceAll(s, " ; ", "; ");
  s = ReplaceAll(s, " . ", ". ");
  s = ReplaceAll(s, " ! ", "! ");
  s = ReplaceAll(s, " ? ", "? ");
  s = ReplaceAll(s, " , ", ", ");
  s = TrimInside(s, '(', ')');
  s = TrimInside(s, '[', ']');
  s = TrimInside(s, '{', '}');
  s = TrimInside(s, '"', '"');
  s = TrimInside(s, '\'', '\'');
  s = ReplaceAll(s, "= = = =", "====");
  s = ReplaceAll(s, "= = =", "===");
  s = ReplaceAll(s, "= =", "==");
  s = ReplaceAll(s, " \xC2\xB0 ", "\xC2\xB0");  // chr(176), the degree sign.
  s = ReplaceAll(s, " \n", "\n");
  s = ReplaceAll(s, "\n ", "\n");
  s = ReplaceAll(s, " N ", " 1 ");
  s = ReplaceAll(s, " 's", "'s");
  return s;
}

int64_t WikitextWordCount(std::string_view page) {
  int64_t pieces = 1;
  for (size_t i = 0; i < page.size();) {
    if (IsSpace(page[i])) {
      ++pieces;
      while (i < page.size() && IsSpace(page[i])) ++i;
    } else {
      ++i;
    }
  }
  return pieces;
}

}  // namespace dynsparse
