// lm-eval's `wikitext` task data: WikiText-2 raw test split into documents as
// EleutherAI/wikitext_document_level does (a new page at every top-level
// " = Title = " heading), and lm-eval's wikitext_detokenizer.
#ifndef DYNSPARSE_DATASETS_WIKITEXT_DOCUMENTS_H_
#define DYNSPARSE_DATASETS_WIKITEXT_DOCUMENTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dynsparse {

// Rebuilds the original 4358-line wiki.test.raw from the shared copy (CRLF,
// blank lines dropped) and the tokenized file's blank-line positions, then
// splits it into pages. Both paths are under $DYNSPARSE_DATA/wikitext2.
absl::StatusOr<std::vector<std::string>> LoadWikitextDocuments(
    const std::string& raw_path, const std::string& tokens_path);

// The documents of $DYNSPARSE_DATA (error naming the variable when unset).
absl::StatusOr<std::vector<std::string>> LoadWikitextDocumentsFromData();

// lm_eval/tasks/wikitext/preprocess_wikitext.py wikitext_detokenizer().
// Whitespace classes (\s) are ASCII here; Python's also match Unicode spaces.
std::string WikitextDetokenize(std::string_view page);

// len(re.split(r"\s+", page)): lm-eval's word count of the original page.
int64_t WikitextWordCount(std::string_view page);

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_WIKITEXT_DOCUMENTS_H_
