// GPT-2 style vocab.json + merges.txt. The input is the two files joined by
// one NUL byte (neither format allows NUL in valid text).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/logging.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dynsparse;
  SetMinLogLevel(LogLevel::kError);
  const std::string_view input = fuzz::AsText(data, size);
  const size_t nul = input.find('\0');
  const std::string_view vocab = input.substr(0, nul);
  const std::string_view merges =
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  const std::string vocab_path = fuzz::WriteScratchFile("vocab.json", vocab);
  const std::string merges_path = fuzz::WriteScratchFile("merges.txt", merges);
  auto tokenizer = LoadBpeVocabMergesTokenizer(vocab_path, merges_path);
  if (!tokenizer.ok()) return 0;
  const std::vector<int32_t> ids =
      (*tokenizer)->Encode("Hello world<|endoftext|> caf\xc3\xa9", true);
  (void)(*tokenizer)->Decode(ids, false);
  return 0;
}
