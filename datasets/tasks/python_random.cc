#include "datasets/tasks/python_random.h"

#include <bit>
#include <cmath>
#include <unordered_set>

namespace dynsparse {

PythonRandom::PythonRandom(uint32_t seed) {
  // init_genrand(19650218) then init_by_array({seed}), as CPython's
  // random_seed() does for an int seed.
  mt_[0] = 19650218u;
  for (int i = 1; i < 624; ++i) {
    mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + i;
  }
  const uint32_t key[1] = {seed};
  const int key_length = 1;
  int i = 1, j = 0;
  for (int k = 624; k > 0; --k) {
    mt_[i] =
        (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + j;
    ++i;
    ++j;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (int k = 623; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - i;
    ++i;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;
  index_ = 624;
}

uint32_t PythonRandom::GenRandUint32() {
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu;
  constexpr uint32_t kMatrixA = 0x9908b0dfu;
  if (index_ >= 624) {
    for (int k = 0; k < 624; ++k) {
      const uint32_t y = (mt_[k] & kUpper) | (mt_[(k + 1) % 624] & kLower);
      mt_[k] = mt_[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint32_t PythonRandom::GetRandBits(int k) {
  return GenRandUint32() >> (32 - k);
}

uint32_t PythonRandom::RandBelow(uint32_t n) {
  const int k = std::bit_width(n);  // n.bit_length()
  uint32_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

std::vector<int64_t> PythonRandom::Sample(int64_t n, int64_t k) {
  std::vector<int64_t> result(k);
  int64_t setsize = 21;
  if (k > 5) {
    setsize += static_cast<int64_t>(
        std::pow(4.0, std::ceil(std::log(3.0 * k) / std::log(4.0))));
  }
  if (n <= setsize) {
    std::vector<int64_t> pool(n);
    for (int64_t i = 0; i < n; ++i) pool[i] = i;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = RandBelow(static_cast<uint32_t>(n - i));
      result[i] = pool[j];
      pool[j] = pool[n - i - 1];
    }
  } else {
    std::unordered_set<int64_t> selected;
    for (int64_t i = 0; i < k; ++i) {
      int64_t j = RandBelow(static_cast<uint32_t>(n));
      while (selected.count(j)) j = RandBelow(static_cast<uint32_t>(n));
      selected.insert(j);
      result[i] = j;
    }
  }
  return result;
}

}  // namespace dynsparse
