// f16 tensor-core pieces shared by the attention kernels (attention.cu,
// flash_prefill.cu); include from .cu files only.
#ifndef DYNSPARSE_KERNELS_CUDA_MMA_F16_CUH_
#define DYNSPARSE_KERNELS_CUDA_MMA_F16_CUH_

#include <cuda_fp16.h>

#include <cstdint>

namespace dynsparse::cuda {

// Two floats rounded to f16 (nearest even) in one 32-bit fragment register,
// `lo` in the low half.
__device__ __forceinline__ uint32_t PackHalf2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// c += A B for one m16n8k16 tile: A's four and B's two f16x2 fragment
// registers per lane, f32 accumulators.
__device__ __forceinline__ void MmaF16(float (&c)[4], const uint32_t (&a)[4],
                                       uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
      "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_MMA_F16_CUH_
