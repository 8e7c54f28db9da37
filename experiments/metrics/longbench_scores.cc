#include "experiments/metrics/longbench_scores.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dynsparse {
namespace {

std::vector<std::string> Words(const std::string& s) {
  return absl::StrSplit(s, absl::ByAnyChar(" \t\n\r\v\f"), absl::SkipEmpty());
}

template <typename T>
int64_t LcsLength(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<int64_t> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1
                                    : std::max(prev[j], cur[j - 1]);
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string NormalizeAnswer(const std::string& s) {
  std::string lower = absl::AsciiStrToLower(s);
  std::string no_punct;
  for (char c : lower) {
    if (!absl::ascii_ispunct(c)) no_punct.push_back(c);
  }
  std::vector<std::string> kept;
  for (std::string& w : Words(no_punct)) {
    if (w != "a" && w != "an" && w != "the") kept.push_back(std::move(w));
  }
  return absl::StrJoin(kept, " ");
}

double QaF1Score(const std::string& prediction, const std::string& reference) {
  const std::vector<std::string> p = Words(NormalizeAnswer(prediction));
  const std::vector<std::string> r = Words(NormalizeAnswer(reference));
  std::map<std::string, int64_t> counts;
  for (const std::string& w : r) ++counts[w];
  int64_t same = 0;
  for (const std::string& w : p) {
    auto it = counts.find(w);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  if (same == 0) return 0.0;
  const double precision = static_cast<double>(same) / p.size();
  const double recall = static_cast<double>(same) / r.size();
  return 2 * precision * recall / (precision + recall);
}

double RougeLScore(const std::string& prediction,
                   const std::string& reference) {
  const std::vector<std::string> p = Words(absl::AsciiStrToLower(prediction));
  const std::vector<std::string> r = Words(absl::AsciiStrToLower(reference));
  if (p.empty() || r.empty()) return 0.0;
  const double lcs = static_cast<double>(LcsLength(p, r));
  if (lcs == 0) return 0.0;
  const double precision = lcs / p.size(), recall = lcs / r.size();
  return 2 * precision * recall / (precision + recall);
}

double ClassificationScore(const std::string& prediction,
                           const std::string& reference,
                           const std::vector<std::string>& all_classes) {
  std::vector<std::string> matches;
  for (const std::string& c : all_classes) {
    if (prediction.find(c) != std::string::npos) matches.push_back(c);
  }
  std::vector<std::string> kept;
  for (const std::string& m : matches) {
    if (reference.find(m) != std::string::npos && m != reference) continue;
    kept.push_back(m);
  }
  if (std::find(kept.begin(), kept.end(), reference) == kept.end()) return 0.0;
  return 1.0 / static_cast<double>(kept.size());
}

double CodeSimScore(const std::string& prediction,
                    const std::string& reference) {
  size_t start = 0;
  while (start < prediction.size() && prediction[start] == '\n') ++start;
  std::string line;
  const std::vector<std::string> lines =
      absl::StrSplit(prediction.substr(start), '\n');
  for (const std::string& l : lines) {
    if (l.find('`') == std::string::npos && l.find('#') == std::string::npos &&
        l.find("//") == std::string::npos) {
      line = l;
      break;
    }
  }
  const std::vector<char> a(line.begin(), line.end());
  const std::vector<char> b(reference.begin(), reference.end());
  if (a.empty() && b.empty()) return 1.0;
  const double ratio =
      2.0 * static_cast<double>(LcsLength(a, b)) / (a.size() + b.size());
  return std::round(100 * ratio) / 100;
}

}  // namespace dynsparse
