#include "core/io/rope_permute.h"

#include <cstring>

namespace dynsparse {

Tensor InterleavedToHalfRotary(const Tensor& w, int64_t n_heads) {
  DS_CHECK(w.rank() == 2 && n_heads > 0 && w.dim(0) % n_heads == 0)
      << w.DebugString() << " with " << n_heads << " heads";
  const int64_t head_dim = w.dim(0) / n_heads;
  DS_CHECK(head_dim % 2 == 0) << "head_dim " << head_dim;
  const int64_t half = head_dim / 2;
  const size_t row_bytes = w.dim(1) * DTypeSize(w.dtype());
  Tensor out = Tensor::Zeros(w.dtype(), w.shape());
  const char* src = static_cast<const char*>(w.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t from = h * head_dim + 2 * i + j;
        const int64_t to = h * head_dim + j * half + i;
        std::memcpy(dst + to * row_bytes, src + from * row_bytes, row_bytes);
      }
    }
  }
  return out;
}

}  // namespace dynsparse
