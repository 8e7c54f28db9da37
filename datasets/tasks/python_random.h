// CPython's random.Random (MT19937 seeded by init_by_array) and the parts of
// it lm-eval's few-shot sampler uses, so `num_fewshot` picks the same
// examples as lm-eval for the same seed (1234) and document order.
#ifndef DYNSPARSE_DATASETS_TASKS_PYTHON_RANDOM_H_
#define DYNSPARSE_DATASETS_TASKS_PYTHON_RANDOM_H_

#include <array>
#include <cstdint>
#include <vector>

namespace dynsparse {

class PythonRandom {
 public:
  // random.Random(seed) for a non-negative integer seed below 2**32.
  explicit PythonRandom(uint32_t seed);

  uint32_t GenRandUint32();
  // random.getrandbits(k), 1 <= k <= 32.
  uint32_t GetRandBits(int k);
  // random._randbelow(n) (the getrandbits variant), 1 <= n < 2**32.
  uint32_t RandBelow(uint32_t n);
  // Indices chosen by random.sample(range(n), k), in sample order.
  std::vector<int64_t> Sample(int64_t n, int64_t k);

 private:
  std::array<uint32_t, 624> mt_;
  int index_ = 625;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_TASKS_PYTHON_RANDOM_H_
