// llama2.c checkpoint header and the array layout derived from it. Bytes
// 28..35 (when present) give the claimed file size, so layouts are checked
// against sizes far larger than the input.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/io/llama2c_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dynsparse;
  auto header = ParseLlama2cHeader(data, size, "fuzz.bin");
  if (!header.ok()) return 0;
  uint64_t file_size = size;
  if (size >= kLlama2cHeaderBytes + sizeof(uint64_t)) {
    std::memcpy(&file_size, data + kLlama2cHeaderBytes, sizeof(file_size));
  }
  (void)Llama2cLayout(*header, file_size, "fuzz.bin");
  (void)Llama2cLayout(*header, size, "fuzz.bin");
  return 0;
}
