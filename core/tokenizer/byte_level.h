// GPT-2's reversible byte <-> printable-character map ("bytes_to_unicode"),
// used by the ByteLevel pre-tokenizer, normalizer and decoder.
#ifndef DYNSPARSE_CORE_TOKENIZER_BYTE_LEVEL_H_
#define DYNSPARSE_CORE_TOKENIZER_BYTE_LEVEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dynsparse::tok {

// Maps every byte of `bytes` to its printable character (as UTF-8).
std::string BytesToByteLevel(std::string_view bytes);

// The byte a byte-level character stands for, if `cp` is one.
std::optional<uint8_t> ByteLevelCharToByte(char32_t cp);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_BYTE_LEVEL_H_
