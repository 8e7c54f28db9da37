// Helpers shared by the fuzz targets: loaders that only take paths get the
// input through a per-process scratch directory.
#ifndef DYNSPARSE_FUZZ_FUZZ_UTIL_H_
#define DYNSPARSE_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dynsparse::fuzz {

// A directory private to this process (libFuzzer workers may run in parallel).
const std::string& ScratchDir();

// Writes `bytes` to ScratchDir()/name and returns the full path.
std::string WriteScratchFile(const std::string& name, std::string_view bytes);

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace dynsparse::fuzz

#endif  // DYNSPARSE_FUZZ_FUZZ_UTIL_H_
