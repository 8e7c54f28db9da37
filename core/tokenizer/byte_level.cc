#include "core/tokenizer/byte_level.h"

#include <array>

#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {
namespace {

// Printable Latin-1 bytes map to themselves; the other 68 bytes map, in
// order, to U+0100 onwards, so that no byte becomes whitespace or control.
bool MapsToItself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
         (b >= 0xAE && b <= 0xFF);
}

constexpr int kMappedEnd = 256 + 68;

struct ByteLevelTables {
  std::array<char32_t, 256> byte_to_cp{};
  std::array<std::string, 256> byte_to_utf8;
  // Code points 0..323 back to bytes; -1 where a code point is not mapped.
  std::array<int16_t, kMappedEnd> cp_to_byte{};
  ByteLevelTables() {
    cp_to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      byte_to_cp[b] = MapsToItself(b) ? static_cast<char32_t>(b) : next++;
      AppendUtf8(byte_to_cp[b], &byte_to_utf8[b]);
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& Tables() {
  static const ByteLevelTables* const kTables = new ByteLevelTables();
  return *kTables;
}

}  // namespace

std::string BytesToByteLevel(std::string_view bytes) {
  const ByteLevelTables& tables = Tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes)
    out += tables.byte_to_utf8[static_cast<uint8_t>(c)];
  return out;
}

std::optional<uint8_t> ByteLevelCharToByte(char32_t cp) {
  if (cp >= static_cast<char32_t>(kMappedEnd)) return std::nullopt;
  const int16_t b = Tables().cp_to_byte[cp];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

}  // namespace dynsparse::tok
