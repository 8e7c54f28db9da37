// CPU kernels of sparse execution (DejaVu): gathered rows and columns of the
// weights, head-subset attention and lazy K/V completion. Same dot product as
// the dense GEMV (cpu_dot.h), so a kept unit's value equals the dense one.
#ifndef DYNSPARSE_KERNELS_CPU_CPU_SPARSE_H_
#define DYNSPARSE_KERNELS_CPU_CPU_SPARSE_H_

#include <cstdint>

#include "core/graph/backend.h"
#include "core/tensor.h"

namespace dynsparse::cpu {

// See the Backend methods of the same names (core/graph/backend.h).
void GatherLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                  const Tensor& ids, int64_t unit_width, Tensor* y);
void GatherLinearT(const Tensor& x, const Tensor& w_t, const Tensor& bias,
                   const Tensor& ids, Tensor* y);
void GatherColumnsLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Tensor& ids, int64_t unit_width, Tensor* y);
void GatherColumns(const Tensor& x, const Tensor& ids, int64_t unit_width,
                   Tensor* y);
void SparseAttention(const AttentionArgs& args, const Tensor& head_ids);
void LazyKv(const LazyKvArgs& args);

}  // namespace dynsparse::cpu

#endif  // DYNSPARSE_KERNELS_CPU_CPU_SPARSE_H_
