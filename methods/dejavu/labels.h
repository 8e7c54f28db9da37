// Sparsity labels as bitmaps: one bit per unit, rows of ceil(units / 8)
// bytes, unit j in byte j / 8 at bit j % 8 (LSB first). A 7B MLP row (11008
// neurons) is 1376 bytes instead of 22 KB of f16 activations.
#ifndef DYNSPARSE_METHODS_DEJAVU_LABELS_H_
#define DYNSPARSE_METHODS_DEJAVU_LABELS_H_

#include <cstdint>
#include <vector>

namespace dynsparse {

inline int64_t BitmapRowBytes(int64_t units) { return (units + 7) / 8; }

inline bool TestBit(const uint8_t* row, int64_t j) {
  return (row[j >> 3] >> (j & 7)) & 1;
}

// bits[j] = values[j] > 0 (ReLU's non-zeros: DejaVu's OPT label).
void PositiveBits(const float* values, int64_t units, uint8_t* bits);

// bits[j] = j is among the k largest scores (ties to the lower id, as
// Backend::TopK). `order` is scratch of `units` entries.
void TopKBits(const float* scores, int64_t units, int64_t k,
              std::vector<int32_t>* order, uint8_t* bits);

// Per row, the L2 norm of each head's slice of `context` (host f32
// [rows, heads * head_dim]): [rows * heads], row-major.
std::vector<float> HeadNorms(const float* context, int64_t rows, int64_t heads,
                             int64_t head_dim);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_LABELS_H_
