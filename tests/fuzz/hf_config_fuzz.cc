// Hugging Face config.json text.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/io/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)dynsparse::ParseHfConfig(text, "fuzz/config.json");
  return 0;
}
