// Arbitrary bytes (often invalid UTF-8) as text through every fixture
// tokenizer, and the same bytes read as ids through Decode: must not crash.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/logging.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::vector<std::unique_ptr<dynsparse::Tokenizer>> LoadFixtures() {
  dynsparse::SetMinLogLevel(dynsparse::LogLevel::kError);
  std::vector<std::unique_ptr<dynsparse::Tokenizer>> all;
  for (const char* name : {"gpt2", "llama2", "llama2_metaspace", "llama3_style"}) {
    const std::string dir =
        std::string(DYNSPARSE_SOURCE_DIR) + "/tests/fixtures/tokenizers/" + name;
    auto tokenizer = dynsparse::LoadHfTokenizer(dir);
    DS_CHECK(tokenizer.ok()) << tokenizer.status();
    all.push_back(std::move(*tokenizer));
  }
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto* tokenizers =
      new std::vector<std::unique_ptr<dynsparse::Tokenizer>>(LoadFixtures());
  const std::string_view text = dynsparse::fuzz::AsText(data, size);
  std::vector<int32_t> raw_ids(size / sizeof(int32_t));
  if (!raw_ids.empty()) std::memcpy(raw_ids.data(), data, raw_ids.size() * 4);
  for (const auto& tokenizer : *tokenizers) {
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = tokenizer->Encode(text, special);
      for (int32_t id : ids) {
        DS_CHECK(id >= 0 && id < tokenizer->vocab_size()) << "bad id " << id;
      }
      (void)tokenizer->Decode(ids, special);
      (void)tokenizer->Decode(raw_ids, special);
    }
  }
  return 0;
}
