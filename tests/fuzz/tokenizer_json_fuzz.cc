// tokenizer.json text, through LoadHfTokenizer (it only takes paths). A
// tokenizer that loads must then encode and decode without crashing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/logging.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dynsparse;
  SetMinLogLevel(LogLevel::kError);  // Loader warnings would flood the run.
  const std::string path =
      fuzz::WriteScratchFile("tokenizer.json", fuzz::AsText(data, size));
  auto tokenizer = LoadHfTokenizer(path);
  if (!tokenizer.ok()) return 0;
  for (bool special : {false, true}) {
    const std::vector<int32_t> ids = (*tokenizer)->Encode(
        " Hello, wor\xc3\xb6ld! <|endoftext|> \xf0\x9f\x98\x80 123\n", special);
    (void)(*tokenizer)->Decode(ids, special);
  }
  std::vector<int32_t> some;
  const int64_t n = (*tokenizer)->vocab_size();
  for (int64_t id = -1; id <= n && id < 512; ++id) some.push_back(id);
  some.push_back(static_cast<int32_t>(n));
  (void)(*tokenizer)->Decode(some, false);
  (void)(*tokenizer)->Decode(some, true);
  return 0;
}
