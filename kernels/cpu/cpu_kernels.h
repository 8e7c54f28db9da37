// CPU kernels (Eigen + OpenMP). Activations are f32; weights may be f32, f16
// or bf16. Each function is the plain reference the CUDA kernels are tested
// against, and fast enough to run every test and small model on 2 cores.
#ifndef DYNSPARSE_KERNELS_CPU_CPU_KERNELS_H_
#define DYNSPARSE_KERNELS_CPU_CPU_KERNELS_H_

#include <cstdint>

#include "absl/types/span.h"
#include "core/graph/backend.h"
#include "core/graph/rope.h"
#include "core/graph/unit_selection.h"
#include "core/model_config.h"
#include "core/tensor.h"

namespace dynsparse::cpu {

// Threads used by OpenMP loops and Eigen's GEMM; 0 = all cores.
void SetThreads(int threads);
int Threads();

// y[n, out] = x[n, in] * w[out, in]^T + bias. One row (decode) streams the
// weights once with a vectorised dot per output; more rows use Eigen's GEMM.
void Linear(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor* y);
// y[out] = w[out, in] * x[in], weights converted on the fly.
void Gemv(const Tensor& w, const float* x, float* y);

void Embed(const Tensor& table, absl::Span<const int32_t> ids, Tensor* out);
void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
               double eps, Tensor* y);
void RmsNorm(const Tensor& x, const Tensor& weight, double eps, Tensor* y);
void AddInPlace(const Tensor& x, Tensor* y);
void Activate(Activation activation, Tensor* x);
void GatedActivate(Activation activation, const Tensor& gate, Tensor* up);
void ApplyRope(const RopeTable& rope, absl::Span<const int32_t> positions,
               int64_t heads, Tensor* x);
void WriteRows(const Tensor& rows, absl::Span<const int32_t> positions,
               Tensor* cache);
void MaskUnits(const UnitSelection& keep, int64_t unit_width, Tensor* x);
void Attention(const AttentionArgs& args);
// Backend::LastQueryAttention (cpu_token_ops.cc).
void LastQueryAttention(const LastQueryArgs& args);

}  // namespace dynsparse::cpu

#endif  // DYNSPARSE_KERNELS_CPU_CPU_KERNELS_H_
