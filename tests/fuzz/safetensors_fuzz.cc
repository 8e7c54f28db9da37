// A whole .safetensors file: length prefix, JSON header, data offsets, and
// the loads that read the data region through those offsets.
#include <cstddef>
#include <cstdint>

#include "core/io/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dynsparse;
  const std::string path =
      fuzz::WriteScratchFile("model.safetensors", fuzz::AsText(data, size));
  auto file = SafetensorsFile::Open(path);
  if (!file.ok()) return 0;
  for (const std::string& name : file->Names()) {
    // Validation capped sizes at the file size, so every load is bounded.
    (void)file->Load(name);
  }
  return 0;
}
