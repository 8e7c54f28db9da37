// The legacy (v0) llama2.c checkpoint layout: seven int32 header fields, then
// float32 arrays back to back. Pure functions over bytes, so every rule is
// testable without a file.
#ifndef DYNSPARSE_CORE_IO_LLAMA2C_FORMAT_H_
#define DYNSPARSE_CORE_IO_LLAMA2C_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

inline constexpr size_t kLlama2cHeaderBytes = 7 * sizeof(int32_t);
// "ak42" read as a little-endian uint32: the versioned (v1+) format's magic.
inline constexpr uint32_t kLlama2cVersionedMagic = 0x616b3432;

struct Llama2cHeader {
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t vocab_size = 0;  // Always positive here; see shared_classifier.
  int64_t seq_len = 0;
  bool shared_classifier = true;  // The file stores vocab_size < 0 if not.

  int64_t head_size() const { return dim / n_heads; }
  int64_t kv_dim() const { return n_kv_heads * head_size(); }
};

// Checks the header's values (positive, within caps, heads dividing dim and
// each other, even head size); recognises the versioned format and refuses it.
absl::StatusOr<Llama2cHeader> ParseLlama2cHeader(const uint8_t* data,
                                                 size_t size,
                                                 absl::string_view label);

// One float32 array of the file, in file order.
struct Llama2cArray {
  absl::string_view name;  // "token_embedding", "wq", ...
  uint64_t offset = 0;     // Bytes from the start of the file.
  uint64_t count = 0;      // Floats.
};

// The arrays' positions, computed with overflow checks, and checked against
// `file_size`: a short file names the first array it cuts, a long one is
// refused as not matching the header.
absl::StatusOr<std::vector<Llama2cArray>> Llama2cLayout(
    const Llama2cHeader& header, uint64_t file_size, absl::string_view label);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_LLAMA2C_FORMAT_H_
