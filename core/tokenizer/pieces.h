// The unit that flows through the Hugging Face pipeline: the input is cut
// into pieces (added tokens, then pre-tokenizer words), and the model
// tokenizes each remaining piece on its own.
#ifndef DYNSPARSE_CORE_TOKENIZER_PIECES_H_
#define DYNSPARSE_CORE_TOKENIZER_PIECES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"

namespace dynsparse::tok {

struct Piece {
  std::string text;       // Normalized (and possibly transformed) text.
  int32_t added_id = -1;  // >= 0: an added token, passed through untouched.
  // Whether the piece starts at byte 0 of the original input; Metaspace's
  // prepend_scheme "first" only prepends there (HF checks the original offset).
  bool at_origin = false;
};

using ByteRange = std::pair<size_t, size_t>;  // [start, end) in bytes.

// Replaces every non-added piece by the pieces `split` appends for it.
// Empty pieces are dropped, as PreTokenizedString::split does.
void SplitPieces(
    std::vector<Piece>* pieces,
    absl::FunctionRef<void(Piece&& piece, std::vector<Piece>* out)> split);

// Appends the non-empty [start, end) slices of `piece.text` to `out`; a
// slice keeps at_origin only when it starts at byte 0.
void AppendSlices(const Piece& piece, const std::vector<ByteRange>& ranges,
                  std::vector<Piece>* out);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_PIECES_H_
