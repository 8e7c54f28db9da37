#include "core/tokenizer/hf_json_components.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tokenizer/string_view_compat.h"

namespace dynsparse::tok {
namespace {

absl::StatusOr<std::string> TypeOf(const JsonRef& j) {
  RETURN_IF_ERROR(j.CheckObject());
  return j["type"].String();
}

absl::Status Unsupported(const JsonRef& type_field, std::string_view kind,
                         std::string_view type) {
  return type_field.Error(
      absl::StrCat("unsupported ", Sv(kind), " type '", Sv(type), "'"));
}

// A regex without metacharacters is a literal string.
std::optional<std::string> RegexAsLiteral(std::string_view regex) {
  if (regex.empty()) return std::nullopt;
  for (const char c : regex) {
    if (std::string_view(R"(\.^$|?*+()[]{})").find(c) !=
        std::string_view::npos) {
      return std::nullopt;
    }
  }
  return std::string(regex);
}

// {"String": s} or a literal {"Regex": r}, as used by Replace.
absl::StatusOr<std::string> LiteralPattern(const JsonRef& pattern) {
  RETURN_IF_ERROR(pattern.CheckObject());
  if (!pattern["String"].missing()) return pattern["String"].String();
  if (!pattern["Regex"].missing()) {
    ASSIGN_OR_RETURN(std::string regex, pattern["Regex"].String());
    if (auto literal = RegexAsLiteral(regex)) return *literal;
    return pattern["Regex"].Error(absl::StrCat("unsupported regex '", regex,
                                               "' (only literal patterns)"));
  }
  return pattern.Error("expected {\"String\": ...} or {\"Regex\": ...}");
}

absl::StatusOr<SplitBehavior> ParseBehavior(const JsonRef& j,
                                            SplitBehavior default_value) {
  if (j.is_null()) return default_value;
  ASSIGN_OR_RETURN(std::string name, j.String());
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return j.Error(absl::StrCat("unknown split behavior '", name, "'"));
}

// Metaspace's prepend_scheme, or the older add_prefix_space flag.
absl::StatusOr<PrependScheme> ParsePrependScheme(const JsonRef& j) {
  PrependScheme scheme = PrependScheme::kAlways;
  const JsonRef field = j["prepend_scheme"];
  if (!field.is_null()) {
    ASSIGN_OR_RETURN(std::string name, field.String());
    if (name == "always") {
      scheme = PrependScheme::kAlways;
    } else if (name == "first") {
      scheme = PrependScheme::kFirst;
    } else if (name == "never") {
      scheme = PrependScheme::kNever;
    } else {
      return field.Error(absl::StrCat("unknown prepend_scheme '", name, "'"));
    }
  }
  ASSIGN_OR_RETURN(bool add_prefix_space, j["add_prefix_space"].BoolOr(true));
  if (!add_prefix_space) scheme = PrependScheme::kNever;
  return scheme;
}

template <typename T, typename ParseFn>
absl::StatusOr<std::vector<std::unique_ptr<T>>> ParseList(const JsonRef& list,
                                                          ParseFn parse) {
  ASSIGN_OR_RETURN(size_t n, list.ArraySize());
  std::vector<std::unique_ptr<T>> out;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<T> item, parse(list[i]));
    if (item == nullptr) return list[i].Error("expected an object, got null");
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const JsonRef& j) {
  if (j.is_null()) return nullptr;
  ASSIGN_OR_RETURN(std::string type, TypeOf(j));
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(auto steps,
                     ParseList<Normalizer>(j["normalizers"], ParseNormalizer));
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  if (type == "Prepend") {
    ASSIGN_OR_RETURN(std::string prefix, j["prepend"].String());
    return std::make_unique<PrependNormalizer>(std::move(prefix));
  }
  if (type == "Replace") {
    ASSIGN_OR_RETURN(std::string pattern, LiteralPattern(j["pattern"]));
    ASSIGN_OR_RETURN(std::string content, j["content"].String());
    return std::make_unique<ReplaceNormalizer>(std::move(pattern),
                                               std::move(content));
  }
  if (type == "NFC")
    return std::make_unique<UnicodeNormalizer>(NormalForm::kNfc);
  if (type == "NFD")
    return std::make_unique<UnicodeNormalizer>(NormalForm::kNfd);
  if (type == "NFKC") {
    return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkc);
  }
  if (type == "NFKD") {
    return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkd);
  }
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") {
    ASSIGN_OR_RETURN(bool left, j["strip_left"].BoolOr(true));
    ASSIGN_OR_RETURN(bool right, j["strip_right"].BoolOr(true));
    return std::make_unique<StripNormalizer>(left, right);
  }
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  return Unsupported(j["type"], "normalizer", type);
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(
    const JsonRef& j) {
  if (j.is_null()) return nullptr;
  ASSIGN_OR_RETURN(std::string type, TypeOf(j));
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(auto steps, ParseList<PreTokenizer>(j["pretokenizers"],
                                                         ParsePreTokenizer));
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "ByteLevel") {
    ASSIGN_OR_RETURN(bool add_prefix_space, j["add_prefix_space"].BoolOr(true));
    ASSIGN_OR_RETURN(bool use_regex, j["use_regex"].BoolOr(true));
    return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, use_regex);
  }
  if (type == "Split") {
    const JsonRef pattern = j["pattern"];
    RETURN_IF_ERROR(pattern.CheckObject());
    SplitPreTokenizer::Pattern matcher;
    if (!pattern["String"].missing()) {
      ASSIGN_OR_RETURN(std::string literal, pattern["String"].String());
      matcher = std::move(literal);
    } else if (!pattern["Regex"].missing()) {
      ASSIGN_OR_RETURN(std::string regex, pattern["Regex"].String());
      if (auto known = RecognizeSplitRegex(regex)) {
        matcher = *known;
      } else if (auto literal = RegexAsLiteral(regex)) {
        matcher = std::move(*literal);
      } else {
        return pattern["Regex"].Error(absl::StrCat(
            "unsupported regex '", regex,
            "' (implemented: the GPT-2, Llama-3 and Qwen2 split patterns)"));
      }
    } else {
      return pattern.Error("expected {\"String\": ...} or {\"Regex\": ...}");
    }
    ASSIGN_OR_RETURN(SplitBehavior behavior,
                     ParseBehavior(j["behavior"], SplitBehavior::kIsolated));
    ASSIGN_OR_RETURN(bool invert, j["invert"].BoolOr(false));
    return std::make_unique<SplitPreTokenizer>(std::move(matcher), behavior,
                                               invert);
  }
  if (type == "Metaspace") {
    ASSIGN_OR_RETURN(char32_t replacement, j["replacement"].Char());
    ASSIGN_OR_RETURN(PrependScheme scheme, ParsePrependScheme(j));
    ASSIGN_OR_RETURN(bool split, j["split"].BoolOr(true));
    return std::make_unique<MetaspacePreTokenizer>(replacement, scheme, split);
  }
  if (type == "Digits") {
    ASSIGN_OR_RETURN(bool individual, j["individual_digits"].BoolOr(false));
    return std::make_unique<DigitsPreTokenizer>(individual);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<WhitespaceSplitPreTokenizer>();
  }
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Punctuation") {
    ASSIGN_OR_RETURN(SplitBehavior behavior,
                     ParseBehavior(j["behavior"], SplitBehavior::kIsolated));
    return std::make_unique<PunctuationPreTokenizer>(behavior);
  }
  if (type == "CharDelimiterSplit") {
    ASSIGN_OR_RETURN(char32_t delimiter, j["delimiter"].Char());
    return std::make_unique<CharDelimiterSplitPreTokenizer>(delimiter);
  }
  return Unsupported(j["type"], "pre-tokenizer", type);
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(
    const JsonRef& j) {
  if (j.is_null()) return nullptr;
  ASSIGN_OR_RETURN(std::string type, TypeOf(j));
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(auto steps, ParseList<PostProcessor>(j["processors"],
                                                          ParsePostProcessor));
    return std::make_unique<SequencePostProcessor>(std::move(steps));
  }
  if (type == "ByteLevel") return std::make_unique<NoOpPostProcessor>();
  if (type == "TemplateProcessing") {
    const JsonRef single = j["single"];
    const JsonRef specials = j["special_tokens"];
    ASSIGN_OR_RETURN(size_t n, single.ArraySize());
    std::vector<TemplatePostProcessor::Item> items;
    for (size_t i = 0; i < n; ++i) {
      const JsonRef item = single[i];
      RETURN_IF_ERROR(item.CheckObject());
      TemplatePostProcessor::Item parsed;
      if (!item["Sequence"].missing()) {
        ASSIGN_OR_RETURN(std::string seq, item["Sequence"]["id"].String());
        if (seq != "A") {
          return item["Sequence"]["id"].Error(absl::StrCat(
              "sequence '", seq, "' in a single-sequence template"));
        }
        parsed.is_sequence = true;
      } else if (!item["SpecialToken"].missing()) {
        const JsonRef name_field = item["SpecialToken"]["id"];
        ASSIGN_OR_RETURN(std::string name, name_field.String());
        const JsonRef ids = specials[name]["ids"];
        if (specials[name].missing()) {
          return name_field.Error(
              absl::StrCat("special token '", name,
                           "' is not in post_processor.special_tokens"));
        }
        ASSIGN_OR_RETURN(size_t num_ids, ids.ArraySize());
        for (size_t k = 0; k < num_ids; ++k) {
          ASSIGN_OR_RETURN(int64_t id, ids[k].Int());
          if (id < 0 || id > INT32_MAX) return ids[k].Error("id out of range");
          parsed.ids.push_back(static_cast<int32_t>(id));
        }
      } else {
        return item.Error(
            "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
      items.push_back(std::move(parsed));
    }
    return std::make_unique<TemplatePostProcessor>(std::move(items));
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // "cls": ["<s>", 0], "sep": ["</s>", 2]
    int32_t ids[2];
    const char* names[2] = {"cls", "sep"};
    for (int k = 0; k < 2; ++k) {
      const JsonRef pair = j[names[k]];
      ASSIGN_OR_RETURN(size_t size, pair.ArraySize());
      if (size != 2) return pair.Error("expected [token, id]");
      ASSIGN_OR_RETURN(int64_t id, pair[1].Int());
      if (id < 0 || id > INT32_MAX) return pair[1].Error("id out of range");
      ids[k] = static_cast<int32_t>(id);
    }
    return std::make_unique<ClsSepPostProcessor>(ids[0], ids[1]);
  }
  return Unsupported(j["type"], "post-processor", type);
}

absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const JsonRef& j) {
  if (j.is_null()) return nullptr;
  ASSIGN_OR_RETURN(std::string type, TypeOf(j));
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(auto steps,
                     ParseList<Decoder>(j["decoders"], ParseDecoder));
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Replace") {
    ASSIGN_OR_RETURN(std::string pattern, LiteralPattern(j["pattern"]));
    ASSIGN_OR_RETURN(std::string content, j["content"].String());
    return std::make_unique<ReplaceDecoder>(std::move(pattern),
                                            std::move(content));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    ASSIGN_OR_RETURN(char32_t content, j["content"].Char());
    ASSIGN_OR_RETURN(int64_t start, j["start"].IntOr(0));
    ASSIGN_OR_RETURN(int64_t stop, j["stop"].IntOr(0));
    if (start < 0 || stop < 0) return j.Error("negative strip count");
    return std::make_unique<StripDecoder>(content, static_cast<size_t>(start),
                                          static_cast<size_t>(stop));
  }
  if (type == "Metaspace") {
    ASSIGN_OR_RETURN(char32_t replacement, j["replacement"].Char());
    ASSIGN_OR_RETURN(PrependScheme scheme, ParsePrependScheme(j));
    return std::make_unique<MetaspaceDecoder>(replacement, scheme);
  }
  if (type == "BPEDecoder") {
    ASSIGN_OR_RETURN(std::optional<std::string> suffix,
                     j["suffix"].OptionalString());
    return std::make_unique<BpeSuffixDecoder>(suffix.value_or("</w>"));
  }
  return Unsupported(j["type"], "decoder", type);
}

}  // namespace dynsparse::tok
