// Reading BPE models: the "model" object of a tokenizer.json, or the
// GPT-2-style vocab.json + merges.txt pair.
#ifndef DYNSPARSE_CORE_TOKENIZER_HF_BPE_FILES_H_
#define DYNSPARSE_CORE_TOKENIZER_HF_BPE_FILES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/tokenizer/bpe_model.h"
#include "core/tokenizer/json_reader.h"

namespace dynsparse::tok {

// `model` is the tokenizer.json "model" field; only type "BPE" is supported.
absl::StatusOr<std::unique_ptr<BpeModel>> ParseBpeModel(const JsonRef& model);

// vocab.json ({"token": id, ...}) and merges.txt ("left right" per line, an
// optional "#version" header), with default BPE options.
absl::StatusOr<std::unique_ptr<BpeModel>> ReadBpeVocabMerges(
    const std::string& vocab_path, const std::string& merges_path);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_HF_BPE_FILES_H_
