#include "datasets/tasks/loaders.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "datasets/tasks/jsonl.h"
#include "datasets/tasks/text_transforms.h"
#include "datasets/text_file.h"

namespace dynsparse {
namespace {

#define DS_ASSIGN_OR_RETURN_IMPL(var, tmp, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  var = *std::move(tmp)
#define DS_CONCAT_INNER(a, b) a##b
#define DS_CONCAT(a, b) DS_CONCAT_INNER(a, b)
#define DS_ASSIGN_OR_RETURN(var, expr) \
  DS_ASSIGN_OR_RETURN_IMPL(var, DS_CONCAT(status_or_, __LINE__), expr)

absl::Status CheckGold(const JsonFields& f, int64_t gold, size_t n) {
  if (gold < 0 || gold >= static_cast<int64_t>(n)) {
    return f.Error("gold", absl::StrCat("is ", gold, ", outside [0, ", n, ")"));
  }
  return absl::OkStatus();
}

// Number of Unicode code points in UTF-8 `s` (Python's len()).
size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Byte offset of code point `index` in UTF-8 `s` (s.size() when past the end).
size_t ByteOfCodePoint(std::string_view s, size_t index) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (seen == index) return i;
    ++seen;
  }
  return s.size();
}

}  // namespace

absl::StatusOr<std::vector<TaskDoc>> LoadPiqa(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::vector<JsonLine> lines, ReadJsonl(path));
  const std::string labels_path =
      (std::filesystem::path(path).parent_path() / "valid-labels.lst").string();
  DS_ASSIGN_OR_RETURN(std::string labels_text, ReadTextFile(labels_path));
  std::vector<std::string> labels =
      absl::StrSplit(labels_text, '\n', absl::SkipWhitespace());
  if (labels.size() != lines.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels_path, ": ", labels.size(), " labels for ",
                     lines.size(), " questions in ", path));
  }
  std::vector<TaskDoc> docs;
  for (size_t i = 0; i < lines.size(); ++i) {
    JsonFields f(path, lines[i]);
    DS_ASSIGN_OR_RETURN(std::string goal, f.String("goal"));
    DS_ASSIGN_OR_RETURN(std::string sol1, f.String("sol1"));
    DS_ASSIGN_OR_RETURN(std::string sol2, f.String("sol2"));
    int label = 0;
    if (!absl::SimpleAtoi(labels[i], &label) || label < 0 || label > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          labels_path, ":", i + 1, ": label '", labels[i], "' is not 0 or 1"));
    }
    docs.push_back({.text = absl::StrCat("Question: ", goal, "\nAnswer:"),
                    .choices = {sol1, sol2},
                    .target = "",
                    .gold = label});
  }
  return docs;
}

absl::StatusOr<std::vector<TaskDoc>> LoadHellaswag(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::string text, ReadMaybeBz2(path));
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.size() % 6 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", lines.size(),
                     " lines, not a multiple of 6 (query, gold, 4 endings)"));
  }
  std::vector<TaskDoc> docs;
  for (size_t i = 0; i < lines.size(); i += 6) {
    int gold = 0;
    if (!absl::SimpleAtoi(lines[i + 1], &gold) || gold < 0 || gold > 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", i + 2, ": gold label '", lines[i + 1],
                       "' is not in 0..3"));
    }
    TaskDoc doc;
    doc.text = HellaswagPreprocess(lines[i]);
    doc.gold = gold;
    for (int k = 0; k < 4; ++k) {
      doc.choices.push_back(HellaswagPreprocess(lines[i + 2 + k]));
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

absl::StatusOr<std::vector<TaskDoc>> LoadFoundryChoices(
    const std::string& path, const std::string& query_prefix_to_drop,
    const std::string& answer_suffix) {
  DS_ASSIGN_OR_RETURN(std::vector<JsonLine> lines, ReadJsonl(path));
  std::vector<TaskDoc> docs;
  for (const JsonLine& line : lines) {
    JsonFields f(path, line);
    DS_ASSIGN_OR_RETURN(std::string query, f.String("query"));
    DS_ASSIGN_OR_RETURN(std::vector<std::string> choices, f.Strings("choices"));
    DS_ASSIGN_OR_RETURN(int64_t gold, f.Int("gold"));
    if (absl::Status s = CheckGold(f, gold, choices.size()); !s.ok()) return s;
    if (!query_prefix_to_drop.empty()) {
      if (!absl::StartsWith(query, query_prefix_to_drop)) {
        return f.Error("query", absl::StrCat("does not start with '",
                                             query_prefix_to_drop, "'"));
      }
      query = query.substr(query_prefix_to_drop.size());
    }
    docs.push_back({.text = query + answer_suffix,
                    .choices = std::move(choices),
                    .target = "",
                    .gold = static_cast<int>(gold)});
  }
  return docs;
}

absl::StatusOr<std::vector<TaskDoc>> LoadFoundryCopa(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::vector<TaskDoc> docs,
                      LoadFoundryChoices(path, "", ""));
  DS_ASSIGN_OR_RETURN(std::vector<JsonLine> lines, ReadJsonl(path));
  for (size_t i = 0; i < docs.size(); ++i) {
    TaskDoc& doc = docs[i];
    // llm-foundry wrote premise[:-1] + ", because"; lm-eval has no comma.
    bool ok = false;
    for (const char* connector : {", because", ", therefore"}) {
      if (absl::EndsWith(doc.text, connector)) {
        doc.text = absl::StrCat(
            doc.text.substr(0, doc.text.size() - strlen(connector)),
            connector + 1);
        ok = true;
      }
    }
    if (!ok) {
      return JsonFields(path, lines[i])
          .Error("query", "does not end with ', because' or ', therefore'");
    }
    // lm-eval's doc_to_choice: " " + convert_choice(c) (lower-case first
    // letter); the target delimiter adds another space in front.
    for (std::string& c : doc.choices) {
      if (!c.empty() && c[0] >= 'A' && c[0] <= 'Z') c[0] = c[0] - 'A' + 'a';
      c = " " + c;
    }
  }
  return docs;
}

absl::StatusOr<std::vector<TaskDoc>> LoadFoundryPartial(const std::string& path,
                                                        bool wsc273_spacing) {
  DS_ASSIGN_OR_RETURN(std::vector<JsonLine> lines, ReadJsonl(path));
  std::vector<TaskDoc> docs;
  for (const JsonLine& line : lines) {
    JsonFields f(path, line);
    DS_ASSIGN_OR_RETURN(std::vector<std::string> options,
                        f.Strings("context_options"));
    DS_ASSIGN_OR_RETURN(std::string continuation, f.String("continuation"));
    DS_ASSIGN_OR_RETURN(int64_t gold, f.Int("gold"));
    if (absl::Status s = CheckGold(f, gold, options.size()); !s.ok()) return s;
    if (wsc273_spacing && !continuation.empty() &&
        (absl::ascii_isalnum(continuation[0]) ||
         static_cast<unsigned char>(continuation[0]) >= 0x80)) {
      continuation = " " + continuation;
    }
    docs.push_back({.text = "",
                    .choices = std::move(options),
                    .target = std::move(continuation),
                    .gold = static_cast<int>(gold)});
  }
  return docs;
}

absl::StatusOr<std::vector<TaskDoc>> LoadFoundryLambada(
    const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::vector<JsonLine> lines, ReadJsonl(path));
  std::vector<TaskDoc> docs;
  for (const JsonLine& line : lines) {
    JsonFields f(path, line);
    DS_ASSIGN_OR_RETURN(std::string context, f.String("context"));
    DS_ASSIGN_OR_RETURN(std::string continuation, f.String("continuation"));
    TaskDoc doc;
    doc.text = std::move(context);
    doc.target = " " + continuation;
    docs.push_back(std::move(doc));
  }
  return docs;
}

absl::StatusOr<std::vector<TaskDoc>> LoadSuperGlueRte(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::vector<JsonLine> lines, ReadJsonl(path));
  std::vector<TaskDoc> docs;
  for (const JsonLine& line : lines) {
    JsonFields f(path, line);
    DS_ASSIGN_OR_RETURN(std::string premise, f.String("premise"));
    DS_ASSIGN_OR_RETURN(std::string hypothesis, f.String("hypothesis"));
    DS_ASSIGN_OR_RETURN(std::string label, f.String("label"));
    if (label != "entailment" && label != "not_entailment") {
      return f.Error("label", absl::StrCat("is '", label,
                                           "', not entailment|not_entailment"));
    }
    docs.push_back({.text = absl::StrCat(premise, "\nQuestion: ", hypothesis,
                                         " True or False?\nAnswer:"),
                    .choices = {"True", "False"},
                    .target = "",
                    .gold = label == "entailment" ? 0 : 1});
  }
  return docs;
}

absl::StatusOr<std::vector<TaskDoc>> LoadSuperGlueWsc(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::vector<JsonLine> lines, ReadJsonl(path));
  std::vector<TaskDoc> docs;
  for (const JsonLine& line : lines) {
    JsonFields f(path, line);
    DS_ASSIGN_OR_RETURN(std::string text, f.String("text"));
    DS_ASSIGN_OR_RETURN(JsonFields target, f.Object("target"));
    DS_ASSIGN_OR_RETURN(std::string noun, target.String("span1_text"));
    DS_ASSIGN_OR_RETURN(std::string pronoun, target.String("span2_text"));
    DS_ASSIGN_OR_RETURN(int64_t span2_index, target.Int("span2_index"));
    DS_ASSIGN_OR_RETURN(bool label, f.Bool("label"));
    // pre = " ".join(text.split()[:span2_index]);
    // post = text[len(pre) + len(pronoun) + 1:]  (code-point indices).
    std::vector<std::string> words =
        absl::StrSplit(text, absl::ByAnyChar(" \t\n\r\v\f"), absl::SkipEmpty());
    if (span2_index < 0 || span2_index > static_cast<int64_t>(words.size())) {
      return target.Error("span2_index", "is outside the text's words");
    }
    std::string pre;
    for (int64_t w = 0; w < span2_index; ++w) {
      if (w > 0) pre += " ";
      pre.append(words[w]);
    }
    const size_t post_byte =
        ByteOfCodePoint(text, CodePoints(pre) + CodePoints(pronoun) + 1);
    const std::string passage = GeneralDetokenize(
        absl::StrCat(pre, " *", pronoun, "*", text.substr(post_byte)));
    docs.push_back({.text = absl::StrCat(
                        "Passage: ", passage,
                        "\nQuestion: In the passage above, does the "
                        "pronoun \"*",
                        pronoun, "*\" refer to \"*", noun, "*\"?\nAnswer:"),
                    .choices = {"no", "yes"},
                    .target = "",
                    .gold = label ? 1 : 0});
  }
  return docs;
}

}  // namespace dynsparse
