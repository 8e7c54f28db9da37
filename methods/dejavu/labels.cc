#include "methods/dejavu/labels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace dynsparse {

void PositiveBits(const float* values, int64_t units, uint8_t* bits) {
  std::memset(bits, 0, BitmapRowBytes(units));
  for (int64_t j = 0; j < units; ++j) {
    if (values[j] > 0.0f) bits[j >> 3] |= static_cast<uint8_t>(1u << (j & 7));
  }
}

void TopKBits(const float* scores, int64_t units, int64_t k,
              std::vector<int32_t>* order, uint8_t* bits) {
  std::memset(bits, 0, BitmapRowBytes(units));
  order->resize(units);
  std::iota(order->begin(), order->end(), 0);
  std::nth_element(order->begin(), order->begin() + (k - 1), order->end(),
                   [scores](int32_t a, int32_t b) {
                     return scores[a] > scores[b] ||
                            (scores[a] == scores[b] && a < b);
                   });
  for (int64_t i = 0; i < k; ++i) {
    const int32_t j = (*order)[i];
    bits[j >> 3] |= static_cast<uint8_t>(1u << (j & 7));
  }
}

std::vector<float> HeadNorms(const float* context, int64_t rows, int64_t heads,
                             int64_t head_dim) {
  std::vector<float> norms(rows * heads);
  for (int64_t i = 0; i < rows * heads; ++i) {
    const float* v = context + i * head_dim;
    double sum = 0.0;
    for (int64_t j = 0; j < head_dim; ++j) sum += double(v[j]) * v[j];
    norms[i] = static_cast<float>(std::sqrt(sum));
  }
  return norms;
}

}  // namespace dynsparse
