#include "core/tokenizer/pieces.h"

namespace dynsparse::tok {

void SplitPieces(
    std::vector<Piece>* pieces,
    absl::FunctionRef<void(Piece&& piece, std::vector<Piece>* out)> split) {
  std::vector<Piece> result;
  result.reserve(pieces->size());
  std::vector<Piece> parts;
  for (Piece& piece : *pieces) {
    if (piece.added_id >= 0) {
      result.push_back(std::move(piece));
      continue;
    }
    parts.clear();
    split(std::move(piece), &parts);
    for (Piece& part : parts) {
      if (part.added_id >= 0 || !part.text.empty()) {
        result.push_back(std::move(part));
      }
    }
  }
  *pieces = std::move(result);
}

void AppendSlices(const Piece& piece, const std::vector<ByteRange>& ranges,
                  std::vector<Piece>* out) {
  for (const auto& [start, end] : ranges) {
    if (end <= start) continue;
    Piece slice;
    slice.text = piece.text.substr(start, end - start);
    slice.at_origin = piece.at_origin && start == 0;
    out->push_back(std::move(slice));
  }
}

}  // namespace dynsparse::tok
