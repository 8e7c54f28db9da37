#include "core/tokenizer/hf_bpe_files.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/tokenizer/string_view_compat.h"

namespace dynsparse::tok {
namespace {

absl::StatusOr<BpeVocab> ParseVocab(const JsonRef& vocab) {
  RETURN_IF_ERROR(vocab.CheckObject());
  BpeVocab out;
  out.reserve(vocab.json().size());
  for (const auto& [token, value] : vocab.json().items()) {
    // The fast path avoids building a JsonRef (and its path) per entry.
    if (value.is_number_unsigned() && value.get<uint64_t>() <= INT32_MAX) {
      out[token] = static_cast<int32_t>(value.get<uint64_t>());
      continue;
    }
    const JsonRef entry = vocab[token];
    ASSIGN_OR_RETURN(int64_t id, entry.Int());
    return entry.Error(absl::StrCat("id ", id, " out of range"));
  }
  return out;
}

// "left right": exactly one space, as HF requires.
std::optional<std::pair<std::string, std::string>> SplitMergeLine(
    std::string_view line) {
  std::vector<std::string> parts = absl::StrSplit(Sv(line), ' ');
  if (parts.size() != 2) return std::nullopt;
  return std::make_pair(std::move(parts[0]), std::move(parts[1]));
}

absl::StatusOr<BpeMerges> ParseMerges(const JsonRef& merges) {
  ASSIGN_OR_RETURN(size_t n, merges.ArraySize());
  BpeMerges out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const JsonRef merge = merges[i];
    if (merge.json().is_string()) {
      auto pair = SplitMergeLine(merge.json().get_ref<const std::string&>());
      if (!pair) return merge.Error("expected \"left right\" (one space)");
      out.push_back(std::move(*pair));
    } else if (merge.json().is_array() && merge.json().size() == 2) {
      ASSIGN_OR_RETURN(std::string left, merge[0].String());
      ASSIGN_OR_RETURN(std::string right, merge[1].String());
      out.emplace_back(std::move(left), std::move(right));
    } else {
      return merge.Error(
          absl::StrCat("expected \"left right\" or [\"left\", \"right\"], got ",
                       merge.json().type_name()));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> ParseBpeModel(const JsonRef& model) {
  if (model.is_null()) return model.Error("missing (no model object)");
  RETURN_IF_ERROR(model.CheckObject());
  ASSIGN_OR_RETURN(std::optional<std::string> type,
                   model["type"].OptionalString());
  if (type.has_value() && *type != "BPE") {
    return model["type"].Error(absl::StrCat("unsupported model type '", *type,
                                            "' (only BPE is implemented)"));
  }
  ASSIGN_OR_RETURN(BpeVocab vocab, ParseVocab(model["vocab"]));
  ASSIGN_OR_RETURN(BpeMerges merges, ParseMerges(model["merges"]));

  BpeOptions options;
  ASSIGN_OR_RETURN(options.unk_token, model["unk_token"].OptionalString());
  ASSIGN_OR_RETURN(std::optional<std::string> prefix,
                   model["continuing_subword_prefix"].OptionalString());
  options.continuing_subword_prefix = prefix.value_or("");
  ASSIGN_OR_RETURN(std::optional<std::string> suffix,
                   model["end_of_word_suffix"].OptionalString());
  options.end_of_word_suffix = suffix.value_or("");
  ASSIGN_OR_RETURN(options.fuse_unk, model["fuse_unk"].BoolOr(false));
  ASSIGN_OR_RETURN(options.byte_fallback, model["byte_fallback"].BoolOr(false));
  ASSIGN_OR_RETURN(options.ignore_merges, model["ignore_merges"].BoolOr(false));
  const JsonRef dropout = model["dropout"];
  if (!dropout.is_null()) {
    if (!dropout.json().is_number()) return dropout.Error("expected a number");
    if (dropout.json().get<double>() > 0) {
      DS_LOG(Warning) << dropout.file() << ": model.dropout is ignored "
                      << "(deterministic encoding, as at inference)";
    }
  }

  const JsonRef merges_ref = model["merges"];
  ASSIGN_OR_RETURN(BpeModel bpe,
                   BpeModel::Create(std::move(vocab), merges,
                                    std::move(options), [&](size_t i) {
                                      return absl::StrCat(
                                          merges_ref.file(), ": ",
                                          merges_ref.path(), "[", i, "]");
                                    }));
  return std::make_unique<BpeModel>(std::move(bpe));
}

absl::StatusOr<std::unique_ptr<BpeModel>> ReadBpeVocabMerges(
    const std::string& vocab_path, const std::string& merges_path) {
  ASSIGN_OR_RETURN(nlohmann::json vocab_json, ReadJsonFile(vocab_path));
  ASSIGN_OR_RETURN(BpeVocab vocab,
                   ParseVocab(JsonRef::Root(vocab_json, vocab_path)));

  std::ifstream in(merges_path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(merges_path, ": cannot open file"));
  }
  BpeMerges merges;
  std::vector<size_t> line_numbers;  // For error messages.
  std::string line;
  size_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("#version") || line.empty()) continue;
    auto pair = SplitMergeLine(line);
    if (!pair) {
      return absl::InvalidArgumentError(
          absl::StrCat(merges_path, ": line ", line_number,
                       ": expected \"left right\" (one space)"));
    }
    merges.push_back(std::move(*pair));
    line_numbers.push_back(line_number);
  }
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat(merges_path, ": read error"));
  }
  ASSIGN_OR_RETURN(
      BpeModel bpe,
      BpeModel::Create(std::move(vocab), merges, BpeOptions(), [&](size_t i) {
        return absl::StrCat(merges_path, ": line ", line_numbers[i]);
      }));
  return std::make_unique<BpeModel>(std::move(bpe));
}

}  // namespace dynsparse::tok
