// Registered language-modelling corpora (perplexity), read from the shared
// data folder named by $DYNSPARSE_DATA.
#ifndef DYNSPARSE_DATASETS_CORPUS_REGISTRY_H_
#define DYNSPARSE_DATASETS_CORPUS_REGISTRY_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dynsparse {

struct CorpusInfo {
  std::string name;
  std::string relative_path;  // Under $DYNSPARSE_DATA.
  std::string description;
};

const std::vector<CorpusInfo>& CorpusRegistry();

struct CorpusText {
  std::string name;  // Registered name, or the path for plain files.
  std::string path;
  std::string text;
};

// `name_or_path` is a registered corpus name or a path to a UTF-8 text file.
absl::StatusOr<CorpusText> LoadCorpus(std::string_view name_or_path);

// OK when `name_or_path` is a registered corpus (its data is not read) or an
// existing file; otherwise the error LoadCorpus would give, listing the names.
absl::Status CheckCorpusName(std::string_view name_or_path);

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_CORPUS_REGISTRY_H_
