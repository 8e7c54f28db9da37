// The flash prefill kernel's block shape, as plain data (no CUDA headers) so
// CudaBackendOptions carries it and the switches parse it without a GPU.
#ifndef DYNSPARSE_KERNELS_CUDA_FLASH_PREFILL_CONFIG_H_
#define DYNSPARSE_KERNELS_CUDA_FLASH_PREFILL_CONFIG_H_

namespace dynsparse::cuda {

// `warps` x 16 query rows per block, and the blocks per SM the register
// budget is cut for (launch bounds). 4 x 2 (64 rows, ~200 registers, no
// spills) is the default; 4 x 3 (168 registers, a few bytes spilled) and
// 8 x 1 (128 rows) are the other shapes built (A/B timing).
struct FlashPrefillConfig {
  int warps = 4;
  int min_blocks = 2;
};

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_FLASH_PREFILL_CONFIG_H_
