// Op signatures of a CudaBackend step: a hash of what an op launches with
// (pointers, shapes, settings), so a CUDA-graph replay can check that the
// step issues the same ops as the captured one.
#ifndef DYNSPARSE_KERNELS_CUDA_OP_SIGNATURE_H_
#define DYNSPARSE_KERNELS_CUDA_OP_SIGNATURE_H_

#include <cstdint>

#include "core/tensor.h"

namespace dynsparse::cuda {

inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

inline uint64_t MixTensor(uint64_t h, const Tensor& t) {
  h = Mix(h, reinterpret_cast<uintptr_t>(t.empty() ? nullptr : t.raw_data()));
  h = Mix(h, static_cast<uint64_t>(t.dtype()));
  for (int64_t d : t.shape()) h = Mix(h, static_cast<uint64_t>(d));
  return h;
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_OP_SIGNATURE_H_
