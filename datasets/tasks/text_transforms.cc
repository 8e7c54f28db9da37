#include "datasets/tasks/text_transforms.h"

namespace dynsparse {
namespace {

bool IsPySpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e' || c == '\x1f';
}

}  // namespace

std::string StripAscii(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && IsPySpace(s[b])) ++b;
  while (e > b && IsPySpace(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::string ReplaceAll(std::string_view s, std::string_view from,
                       std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

std::string HellaswagPreprocess(std::string_view text) {
  std::string s = StripAscii(text);
  s = ReplaceAll(s, " [title]", ". ");
  // re.sub("\\[.*?\\]", "", s): '.' does not match '\n', so a '[' whose
  // closing ']' lies past a newline (or nowhere) stays.
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != ']' && s[j] != '\n') ++j;
      if (j < s.size() && s[j] == ']') {
        i = j;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return ReplaceAll(out, "  ", " ");
}

std::string GeneralDetokenize(std::string_view text) {
  std::string s = ReplaceAll(text, " n't", "n't");
  s = ReplaceAll(s, " )", ")");
  s = ReplaceAll(s, "( ", "(");
  s = ReplaceAll(s, "\" ", "\"");
  s = ReplaceAll(s, " \"", "\"");
  // re.sub(r" (['.,])", r"\1", s): a space before ' . or , is dropped.
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ' && i + 1 < s.size() &&
        (s[i + 1] == '\'' || s[i + 1] == '.' || s[i + 1] == ',')) {
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace dynsparse
