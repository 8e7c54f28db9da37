// cp.async (sm_80+): 16-byte copies from global to shared memory that run
// while the thread goes on, in commit groups it waits for by count. Staging
// weights this way keeps loads in flight without holding them in registers.
#ifndef DYNSPARSE_KERNELS_CUDA_CP_ASYNC_CUH_
#define DYNSPARSE_KERNELS_CUDA_CP_ASYNC_CUH_

#include <cstdint>

namespace dynsparse::cuda {

// 16 bytes global -> shared through L2 only; zero-filled when !valid (the
// source address must still be a valid one).
__device__ __forceinline__ void CpAsync16(void* dst, const void* src,
                                          bool valid = true) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr),
               "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most kPending of this thread's groups are still in flight.
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_CP_ASYNC_CUH_
