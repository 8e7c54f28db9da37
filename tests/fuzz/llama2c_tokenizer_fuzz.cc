// llama2.c tokenizer.bin. The first 2 bytes choose vocab_size (the caller's
// value, from the checkpoint header); the rest is the file. A tokenizer that
// parses must then encode and decode without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/tokenizer/llama2c_tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dynsparse::tok::Llama2cTokenizer;
  if (size < 2) return 0;
  const int64_t vocab_size = data[0] | (data[1] << 8);
  const std::string_view file = dynsparse::fuzz::AsText(data + 2, size - 2);
  auto tokenizer = Llama2cTokenizer::Parse("fuzz.bin", file, vocab_size);
  if (!tokenizer.ok()) return 0;
  for (bool special : {false, true}) {
    const std::vector<int32_t> ids =
        tokenizer->Encode("Once upon a time \xf0\x9f\x98\x80 <0x41>\n", special);
    (void)tokenizer->Decode(ids, special);
  }
  std::vector<int32_t> all;
  for (int32_t id = -1; id <= tokenizer->vocab_size(); ++id) all.push_back(id);
  (void)tokenizer->Decode(all, false);
  return 0;
}
