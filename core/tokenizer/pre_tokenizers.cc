#include "core/tokenizer/pre_tokenizers.h"

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/unicode_props.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {
namespace {

// Cuts every non-added piece with `segment_fn` and `behavior`.
template <typename SegmentFn>
void SplitBySegments(std::vector<Piece>* pieces, SplitBehavior behavior,
                     SegmentFn segment_fn) {
  SplitPieces(pieces, [&](Piece&& piece, std::vector<Piece>* out) {
    const std::vector<Segment> segments = segment_fn(piece.text);
    AppendSlices(piece, ApplySplitBehavior(segments, behavior), out);
  });
}

void SplitByChar(std::vector<Piece>* pieces, SplitBehavior behavior,
                 bool (*pred)(char32_t)) {
  SplitBySegments(pieces, behavior, [&](const std::string& text) {
    return SegmentsByChar(text, pred);
  });
}

}  // namespace

void SequencePreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  for (const auto& step : steps_) step->PreTokenize(pieces);
}

void ByteLevelPreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  SplitPieces(pieces, [&](Piece&& piece, std::vector<Piece>* out) {
    if (add_prefix_space_ && !absl::StartsWith(piece.text, " ")) {
      piece.text = " " + piece.text;
    }
    if (!use_regex_) {
      out->push_back(std::move(piece));
      return;
    }
    const std::vector<ByteRange> matches =
        FindRegexMatches(SplitRegex::kGpt2, piece.text);
    AppendSlices(
        piece,
        ApplySplitBehavior(SegmentsFromMatches(piece.text.size(), matches),
                           SplitBehavior::kIsolated),
        out);
  });
  for (Piece& piece : *pieces) {
    if (piece.added_id < 0) piece.text = BytesToByteLevel(piece.text);
  }
}

void SplitPreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  SplitBySegments(pieces, behavior_, [&](const std::string& text) {
    std::vector<Segment> segments;
    if (const auto* literal = std::get_if<std::string>(&pattern_)) {
      segments = SegmentsBySubstring(text, *literal);
    } else {
      segments = SegmentsFromMatches(
          text.size(), FindRegexMatches(std::get<SplitRegex>(pattern_), text));
    }
    if (invert_) InvertSegments(&segments);
    return segments;
  });
}

MetaspacePreTokenizer::MetaspacePreTokenizer(char32_t replacement,
                                             PrependScheme scheme, bool split)
    : replacement_(replacement), scheme_(scheme), split_(split) {
  AppendUtf8(replacement_, &replacement_utf8_);
}

void MetaspacePreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  SplitPieces(pieces, [&](Piece&& piece, std::vector<Piece>* out) {
    piece.text = absl::StrReplaceAll(piece.text, {{" ", replacement_utf8_}});
    const bool starts_with_replacement =
        absl::StartsWith(piece.text, replacement_utf8_);
    const bool prepend =
        !starts_with_replacement &&
        (scheme_ == PrependScheme::kAlways ||
         (scheme_ == PrependScheme::kFirst && piece.at_origin));
    if (prepend) piece.text = replacement_utf8_ + piece.text;
    if (!split_) {
      out->push_back(std::move(piece));
      return;
    }
    const char32_t replacement = replacement_;
    const std::vector<Segment> segments = SegmentsByChar(
        piece.text, [replacement](char32_t c) { return c == replacement; });
    AppendSlices(piece,
                 ApplySplitBehavior(segments, SplitBehavior::kMergedWithNext),
                 out);
  });
}

void DigitsPreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  SplitByChar(pieces,
              individual_digits_ ? SplitBehavior::kIsolated
                                 : SplitBehavior::kContiguous,
              &IsNumber);
}

void WhitespaceSplitPreTokenizer::PreTokenize(
    std::vector<Piece>* pieces) const {
  SplitByChar(pieces, SplitBehavior::kRemoved, &IsWhiteSpace);
}

void WhitespacePreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  SplitBySegments(pieces, SplitBehavior::kRemoved, [](const std::string& text) {
    // Matches of \w+|[^\w\s]+ are kept: mark them as non-matches (Invert).
    std::vector<ByteRange> words;
    size_t pos = 0;
    while (pos < text.size()) {
      DecodedChar c = DecodeUtf8(text, pos);
      const bool word = IsWordChar(c.cp);
      if (!word && IsWhiteSpace(c.cp)) {
        pos += c.len;
        continue;
      }
      const size_t start = pos;
      while (pos < text.size()) {
        c = DecodeUtf8(text, pos);
        const bool same =
            word ? IsWordChar(c.cp) : !IsWordChar(c.cp) && !IsWhiteSpace(c.cp);
        if (!same) break;
        pos += c.len;
      }
      words.emplace_back(start, pos);
    }
    std::vector<Segment> segments = SegmentsFromMatches(text.size(), words);
    InvertSegments(&segments);
    return segments;
  });
}

void CharDelimiterSplitPreTokenizer::PreTokenize(
    std::vector<Piece>* pieces) const {
  const char32_t delimiter = delimiter_;
  SplitBySegments(
      pieces, SplitBehavior::kRemoved, [&](const std::string& text) {
        return SegmentsByChar(
            text, [delimiter](char32_t c) { return c == delimiter; });
      });
}

void PunctuationPreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  SplitByChar(pieces, behavior_, &IsPunctuation);
}

void BertPreTokenizer::PreTokenize(std::vector<Piece>* pieces) const {
  SplitByChar(pieces, SplitBehavior::kRemoved, &IsWhiteSpace);
  SplitByChar(pieces, SplitBehavior::kIsolated, &IsPunctuation);
}

}  // namespace dynsparse::tok
