// Op signatures of a CudaBackend step: a hash of what an op launches with
// (pointers, shapes, settings), so a CUDA-graph replay can check that the
// step issues the same ops as the captured one.
#ifndef DYNSPARSE_KERNELS_CUDA_OP_SIGNATURE_H_
#define DYNSPARSE_KERNELS_CUDA_OP_SIGNATURE_H_

#include <cstdint>
#include <cstring>

#include "core/tensor.h"

namespace dynsparse::cuda {

// The first value of each CudaBackend op's signature (cuda_backend*.cc).
enum OpCode : uint64_t {
  kOpEmbed = 1,
  kOpLinear,
  kOpLayerNorm,
  kOpRmsNorm,
  kOpAdd,
  kOpActivate,
  kOpGated,
  kOpRope,
  kOpWriteRows,
  kOpAttention,
  kOpMask,
  kOpToHost,
  kOpAddNorm,
  kOpRopeWriteKv,
  kOpGatedMlp,
  kOpGatedRounded,
  kOpLinearActivate,
  kOpStageIds,
  kOpTopK,
  kOpUnitNorms,
  kOpGatherLinear,
  kOpGatherLinearT,
  kOpLinearTransposed,
  kOpGatherColumnsLinear,
  kOpGatherColumns,
  kOpSparseAttention,
  kOpLazyKv,
  kOpRoundInput,
  kOpRopeWriteKvAttention,
  kOpNormLinear,
  kOpLinearAccumulate,
  kOpNormGatedMlp,
  kOpArgmax,
  kOpEmbedIds,
  kOpGatherMlp,
  kOpLinearBatched,
  kOpLinearSegments,
  // Side-stream work (cuda_backend_side.cc; a wait adds its token << 32).
  kOpBeginSideWork = 0x51de0001,
  kOpEndSideWork,
  kOpWaitSideWork,
  kOpDecodeStack = 0x57ac0001,  // cuda_backend_stack.cc
};

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

inline uint64_t MixDouble(uint64_t h, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return Mix(h, bits);
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_OP_SIGNATURE_H_
