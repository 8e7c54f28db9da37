// How the tensor-core GEMV (gemv.cu) may split K so that its grid's last
// wave fills. Plain C++ (no CUDA), so that CI tests the choice on machines
// without nvcc or a GPU.
#ifndef DYNSPARSE_KERNELS_CUDA_GEMV_SPLIT_PLAN_H_
#define DYNSPARSE_KERNELS_CUDA_GEMV_SPLIT_PLAN_H_

#include <cstdint>

namespace dynsparse::cuda {

// K splits (1 .. min(max_splits, 8)) for a grid of `blocks` row groups when
// `resident` blocks fit on the GPU at once. A tensor-core block lives one
// pass over its share of K, so a grid of 1.16 waves (Llama-2-7B's q/k/v at
// batch 3-7: 768 blocks, 660 resident) runs its last 108 blocks nearly
// alone once the first wave is done. The smallest count whose waves fill at
// least 90% of their last one, else the best filled (the fewest splits on a
// tie): every split after the first costs the partial sums' reduce launch.
int64_t WaveFillingSplits(int64_t blocks, int64_t resident, int64_t max_splits);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_GEMV_SPLIT_PLAN_H_
