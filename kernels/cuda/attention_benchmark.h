// Attention kernel benchmarks (attention_benchmark.cu), registered into
// dynsparse_cuda_benchmarks beside the GEMV ones.
#ifndef DYNSPARSE_KERNELS_CUDA_ATTENTION_BENCHMARK_H_
#define DYNSPARSE_KERNELS_CUDA_ATTENTION_BENCHMARK_H_

#include "kernels/cuda/benchmark_timing.h"

namespace dynsparse::cuda {

void RegisterAttentionBenchmarks(bench::Env* env);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_ATTENTION_BENCHMARK_H_
