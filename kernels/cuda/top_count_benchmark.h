// TopCountDevice benchmarks (top_count_benchmark.cu), registered into
// dynsparse_cuda_benchmarks beside the GEMV and attention ones.
#ifndef DYNSPARSE_KERNELS_CUDA_TOP_COUNT_BENCHMARK_H_
#define DYNSPARSE_KERNELS_CUDA_TOP_COUNT_BENCHMARK_H_

#include "kernels/cuda/benchmark_timing.h"

namespace dynsparse::cuda {

void RegisterTopCountBenchmarks(bench::Env* env);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_TOP_COUNT_BENCHMARK_H_
