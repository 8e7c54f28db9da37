// model.safetensors.index.json text.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/io/sharded_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)dynsparse::ParseShardedIndex(text, "fuzz/model.safetensors.index.json");
  return 0;
}
