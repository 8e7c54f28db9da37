// LoadHfTokenizer / LoadBpeVocabMergesTokenizer: file discovery,
// tokenizer.json assembly and the tokenizer_config.json fallbacks.
#include <filesystem>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/tokenizer/hf_bpe_files.h"
#include "core/tokenizer/hf_json_components.h"
#include "core/tokenizer/hf_tokenizer.h"
#include "core/tokenizer/json_reader.h"
#include "core/tokenizer/tokenizer.h"

namespace dynsparse {
namespace {

namespace fs = std::filesystem;
using tok::JsonRef;

// Special-token settings from tokenizer_config.json, completed by
// special_tokens_map.json.
struct SpecialTokenConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // Whether a file has the key at all; "bos_token": null (e.g. Qwen2)
  // means "no BOS", which the name heuristics must not override.
  bool bos_specified = false;
  bool eos_specified = false;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
};

// A token entry: "text", {"content": "text", ...} or null.
absl::StatusOr<std::optional<std::string>> TokenString(const JsonRef& j) {
  if (j.is_null()) return std::optional<std::string>();
  if (j.json().is_object()) return j["content"].OptionalString();
  return j.OptionalString();
}

absl::Status MergeConfigFile(const fs::path& path, SpecialTokenConfig* config) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return absl::OkStatus();
  ASSIGN_OR_RETURN(nlohmann::json json, tok::ReadJsonFile(path.string()));
  const JsonRef root = JsonRef::Root(json, path.string());
  RETURN_IF_ERROR(root.CheckObject());
  if (!config->bos_token) {
    ASSIGN_OR_RETURN(config->bos_token, TokenString(root["bos_token"]));
  }
  if (!config->eos_token) {
    ASSIGN_OR_RETURN(config->eos_token, TokenString(root["eos_token"]));
  }
  config->bos_specified |= !root["bos_token"].missing();
  config->eos_specified |= !root["eos_token"].missing();
  for (auto [key, field] :
       {std::pair{"add_bos_token", &config->add_bos_token},
        std::pair{"add_eos_token", &config->add_eos_token}}) {
    if (field->has_value() || root[key].is_null()) continue;
    ASSIGN_OR_RETURN(bool value, root[key].Bool());
    *field = value;
  }
  return absl::OkStatus();
}

absl::StatusOr<SpecialTokenConfig> ReadSpecialTokenConfig(const fs::path& dir) {
  SpecialTokenConfig config;
  if (dir.empty()) return config;
  RETURN_IF_ERROR(MergeConfigFile(dir / "tokenizer_config.json", &config));
  RETURN_IF_ERROR(MergeConfigFile(dir / "special_tokens_map.json", &config));
  return config;
}

std::optional<int32_t> LookUp(const tok::HfTokenizerParts& parts,
                              const std::string& token) {
  if (auto id = parts.added.TokenToId(token)) return id;
  return parts.model->TokenToId(token);
}

// The first of `names` present in the vocabulary.
std::optional<int32_t> FirstKnown(const tok::HfTokenizerParts& parts,
                                  std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto id = LookUp(parts, name)) return id;
  }
  return std::nullopt;
}

// Resolves BOS/EOS ids and the add_bos/add_eos fallback.
void ApplySpecialTokenConfig(const SpecialTokenConfig& config,
                             const std::string& source,
                             tok::HfTokenizerParts* parts) {
  const auto resolve = [&](const std::optional<std::string>& token,
                           const char* what) -> std::optional<int32_t> {
    if (!token) return std::nullopt;
    auto id = LookUp(*parts, *token);
    if (!id) {
      DS_LOG(Warning) << source << ": " << what << " '" << *token
                      << "' is not in the vocabulary";
    }
    return id;
  };
  parts->bos_id = resolve(config.bos_token, "bos_token");
  parts->eos_id = resolve(config.eos_token, "eos_token");

  // Without a config, name the usual suspects (first found wins).
  if (!config.bos_specified) {
    parts->bos_id = FirstKnown(
        *parts, {"<|begin_of_text|>", "<s>", "<|endoftext|>", "<bos>"});
  }
  if (!config.eos_specified) {
    parts->eos_id = FirstKnown(
        *parts,
        {"<|end_of_text|>", "</s>", "<|endoftext|>", "<eos>", "<|im_end|>"});
  }

  // tokenizer_config.json's add_bos_token/add_eos_token only matter when
  // no post-processor decides the special tokens (null or ByteLevel only),
  // so a tokenizer.json with a template always encodes as `tokenizers` does.
  if (parts->post_processor != nullptr &&
      parts->post_processor->DecidesSpecialTokens()) {
    return;
  }
  if (config.add_bos_token.value_or(false) && parts->bos_id) {
    parts->extra_prefix.push_back(*parts->bos_id);
  }
  if (config.add_eos_token.value_or(false) && parts->eos_id) {
    parts->extra_suffix.push_back(*parts->eos_id);
  }
}

absl::Status AddTokensFromJson(const JsonRef& list,
                               tok::HfTokenizerParts* parts) {
  if (list.is_null()) return absl::OkStatus();
  ASSIGN_OR_RETURN(size_t n, list.ArraySize());
  for (size_t i = 0; i < n; ++i) {
    const JsonRef entry = list[i];
    RETURN_IF_ERROR(entry.CheckObject());
    tok::AddedToken token;
    ASSIGN_OR_RETURN(token.content, entry["content"].String());
    ASSIGN_OR_RETURN(int64_t file_id, entry["id"].Int());
    ASSIGN_OR_RETURN(token.special, entry["special"].BoolOr(false));
    ASSIGN_OR_RETURN(token.single_word, entry["single_word"].BoolOr(false));
    ASSIGN_OR_RETURN(token.lstrip, entry["lstrip"].BoolOr(false));
    ASSIGN_OR_RETURN(token.rstrip, entry["rstrip"].BoolOr(false));
    ASSIGN_OR_RETURN(token.normalized,
                     entry["normalized"].BoolOr(!token.special));
    // HF assigns ids itself (model id for known content, else the next free
    // one) and only warns when the file disagrees; do the same.
    const std::optional<int32_t> id = parts->added.Add(token, *parts->model);
    if (id.has_value() && *id != file_id) {
      DS_LOG(Warning) << entry.file() << ": " << entry.path() << ": token '"
                      << token.content << "' has id " << file_id
                      << " in the file but gets id " << *id;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizerJson(
    const fs::path& json_path, const fs::path& config_dir) {
  const std::string file = json_path.string();
  ASSIGN_OR_RETURN(nlohmann::json json, tok::ReadJsonFile(file));
  const JsonRef root = JsonRef::Root(json, file);
  RETURN_IF_ERROR(root.CheckObject());

  tok::HfTokenizerParts parts;
  ASSIGN_OR_RETURN(parts.normalizer, tok::ParseNormalizer(root["normalizer"]));
  ASSIGN_OR_RETURN(parts.pre_tokenizer,
                   tok::ParsePreTokenizer(root["pre_tokenizer"]));
  ASSIGN_OR_RETURN(parts.model, tok::ParseBpeModel(root["model"]));
  RETURN_IF_ERROR(AddTokensFromJson(root["added_tokens"], &parts));
  parts.added.Finalize(*parts.model, parts.normalizer.get());
  ASSIGN_OR_RETURN(parts.post_processor,
                   tok::ParsePostProcessor(root["post_processor"]));
  ASSIGN_OR_RETURN(parts.decoder, tok::ParseDecoder(root["decoder"]));
  if (!root["truncation"].is_null() || !root["padding"].is_null()) {
    DS_LOG(Warning) << file << ": truncation/padding settings are ignored";
  }

  ASSIGN_OR_RETURN(SpecialTokenConfig config,
                   ReadSpecialTokenConfig(config_dir));
  ApplySpecialTokenConfig(config, file, &parts);
  return std::make_unique<tok::HfTokenizer>(std::move(parts));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadBpeVocabMergesTokenizer(
    const std::string& vocab_path, const std::string& merges_path,
    const std::string& config_dir) {
  tok::HfTokenizerParts parts;
  ASSIGN_OR_RETURN(parts.model,
                   tok::ReadBpeVocabMerges(vocab_path, merges_path));
  parts.pre_tokenizer = std::make_unique<tok::ByteLevelPreTokenizer>(
      /*add_prefix_space=*/false, /*use_regex=*/true);
  parts.decoder = std::make_unique<tok::ByteLevelDecoder>();
  parts.post_processor = std::make_unique<tok::NoOpPostProcessor>();

  ASSIGN_OR_RETURN(SpecialTokenConfig config,
                   ReadSpecialTokenConfig(config_dir));
  // Special tokens named by the config, else GPT-2's <|endoftext|>.
  std::vector<std::string> specials;
  for (const auto& token : {config.bos_token, config.eos_token}) {
    if (token) specials.push_back(*token);
  }
  if (specials.empty()) specials.push_back("<|endoftext|>");
  for (const std::string& content : specials) {
    if (!parts.model->TokenToId(content)) continue;
    tok::AddedToken token;
    token.content = content;
    token.special = true;
    token.normalized = false;
    parts.added.Add(token, *parts.model);
  }
  parts.added.Finalize(*parts.model, nullptr);
  ApplySpecialTokenConfig(config, vocab_path, &parts);
  return std::make_unique<tok::HfTokenizer>(std::move(parts));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizer(
    const std::string& dir) {
  std::error_code ec;
  const fs::path path(dir);
  if (fs::is_regular_file(path, ec)) {
    const fs::path parent = path.parent_path();
    return LoadTokenizerJson(path, parent.empty() ? fs::path(".") : parent);
  }
  if (!fs::is_directory(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat(dir, ": no such tokenizer directory or file"));
  }
  if (fs::is_regular_file(path / "tokenizer.json", ec)) {
    return LoadTokenizerJson(path / "tokenizer.json", path);
  }
  if (fs::is_regular_file(path / "vocab.json", ec) &&
      fs::is_regular_file(path / "merges.txt", ec)) {
    return LoadBpeVocabMergesTokenizer((path / "vocab.json").string(),
                                       (path / "merges.txt").string(), dir);
  }
  return absl::NotFoundError(absl::StrCat(
      dir, ": has neither tokenizer.json nor vocab.json + merges.txt"));
}

}  // namespace dynsparse
