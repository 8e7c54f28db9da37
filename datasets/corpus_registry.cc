#include "datasets/corpus_registry.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "datasets/text_file.h"

namespace dynsparse {

const std::vector<CorpusInfo>& CorpusRegistry() {
  static const auto* const kCorpora = new std::vector<CorpusInfo>{
      {"wikitext2", "wikitext2/wiki.test.raw",
       "WikiText-2 raw test (2891 non-empty lines joined by newlines)"},
      {"wikitext2-valid-tokens", "wikitext2/wiki.valid.tokens",
       "WikiText-2 tokenized validation (with <unk>)"},
      {"ptb", "ptb/ptb.test.txt", "Penn Treebank test (Mikolov preprocessing)"},
      {"ptb-valid", "ptb/ptb.valid.txt", "Penn Treebank validation"},
  };
  return *kCorpora;
}

namespace {

absl::Status NotACorpus(const std::string& path) {
  std::vector<std::string> names;
  for (const CorpusInfo& info : CorpusRegistry()) names.push_back(info.name);
  return absl::NotFoundError(absl::StrCat(
      "'", path, "' is neither a file nor a registered corpus (valid: ",
      absl::StrJoin(names, ", "), ")"));
}

}  // namespace

absl::Status CheckCorpusName(std::string_view name_or_path) {
  for (const CorpusInfo& info : CorpusRegistry()) {
    if (info.name == name_or_path) return absl::OkStatus();
  }
  const std::string path(name_or_path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotACorpus(path);
  return absl::OkStatus();
}

absl::StatusOr<CorpusText> LoadCorpus(std::string_view name_or_path) {
  for (const CorpusInfo& info : CorpusRegistry()) {
    if (info.name != name_or_path) continue;
    const char* root = std::getenv("DYNSPARSE_DATA");
    if (root == nullptr || *root == '\0') {
      return absl::FailedPreconditionError(
          absl::StrCat("corpus '", info.name,
                       "' needs DYNSPARSE_DATA set to the shared data folder"));
    }
    const std::string path = absl::StrCat(root, "/", info.relative_path);
    auto text = ReadTextFile(path);
    if (!text.ok()) return text.status();
    // The shared copies keep their source repositories' CRLF line endings;
    // the canonical corpora (and HF datasets' rows) use LF, so bits per byte
    // and tokenization would otherwise differ from published numbers.
    return CorpusText{info.name, path,
                      absl::StrReplaceAll(*text, {{"\r\n", "\n"}})};
  }
  const std::string path(name_or_path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotACorpus(path);
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return CorpusText{path, path, *std::move(text)};
}

}  // namespace dynsparse
