#include "kernels/cpu/cpu_backend.h"

#include <Eigen/Core>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/cpu_sparse.h"

namespace dynsparse {

CpuBackend::CpuBackend(int threads) {
  cpu::SetThreads(threads);
  Eigen::setNbThreads(cpu::Threads());
}

std::string CpuBackend::name() const {
  return absl::StrCat("cpu (Eigen, ", cpu::Threads(), " threads)");
}

Tensor CpuBackend::Allocate(DType dtype, Shape shape) {
  return Tensor::Zeros(dtype, std::move(shape));
}

void CpuBackend::Embed(const Tensor& table, absl::Span<const int32_t> ids,
                       Tensor* out) {
  cpu::Embed(table, ids, out);
}

void CpuBackend::Linear(const Tensor& x, const Tensor& w, const Tensor& bias,
                        Tensor* y) {
  cpu::Linear(x, w, bias, y);
}

void CpuBackend::LayerNorm(const Tensor& x, const Tensor& weight,
                           const Tensor& bias, double eps, Tensor* y) {
  cpu::LayerNorm(x, weight, bias, eps, y);
}

void CpuBackend::RmsNorm(const Tensor& x, const Tensor& weight, double eps,
                         Tensor* y) {
  cpu::RmsNorm(x, weight, eps, y);
}

void CpuBackend::AddInPlace(const Tensor& x, Tensor* y) {
  cpu::AddInPlace(x, y);
}

void CpuBackend::Activate(Activation activation, Tensor* x) {
  cpu::Activate(activation, x);
}

void CpuBackend::GatedActivate(Activation activation, const Tensor& gate,
                               Tensor* up) {
  cpu::GatedActivate(activation, gate, up);
}

void CpuBackend::ApplyRope(const RopeTable& rope,
                           absl::Span<const int32_t> positions, int64_t heads,
                           Tensor* x) {
  cpu::ApplyRope(rope, positions, heads, x);
}

void CpuBackend::WriteRows(const Tensor& rows,
                           absl::Span<const int32_t> positions, Tensor* cache) {
  cpu::WriteRows(rows, positions, cache);
}

void CpuBackend::Attention(const AttentionArgs& args) { cpu::Attention(args); }

void CpuBackend::LastQueryAttention(const LastQueryArgs& args) {
  cpu::LastQueryAttention(args);
}

void CpuBackend::MaskUnits(const UnitSelection& keep, int64_t unit_width,
                           Tensor* x) {
  cpu::MaskUnits(keep, unit_width, x);
}

void CpuBackend::GatherLinear(const Tensor& x, const Tensor& w,
                              const Tensor& bias, const Tensor& ids,
                              int64_t unit_width, bool activate,
                              Activation activation, Tensor* y) {
  cpu::GatherLinear(x, w, bias, ids, unit_width, y);
  if (activate) cpu::Activate(activation, y);
}

void CpuBackend::GatherGatedLinear(const Tensor& x, const Tensor& w_up,
                                   const Tensor& w_gate, const Tensor& b_up,
                                   const Tensor& b_gate, const Tensor& ids,
                                   Activation activation, Tensor* y) {
  // The dense path's order: both projections, then act(gate) * up.
  Tensor gate = Allocate(DType::kF32, y->shape());
  cpu::GatherLinear(x, w_gate, b_gate, ids, 1, &gate);
  cpu::GatherLinear(x, w_up, b_up, ids, 1, y);
  cpu::GatedActivate(activation, gate, y);
}

void CpuBackend::GatherLinearT(const Tensor& x, const Tensor& w_t,
                               const Tensor& bias, const Tensor& ids,
                               Tensor* y) {
  cpu::GatherLinearT(x, w_t, bias, ids, y);
}

void CpuBackend::GatherColumnsLinear(const Tensor& x, const Tensor& w,
                                     const Tensor& bias, const Tensor& ids,
                                     int64_t unit_width, Tensor* y) {
  cpu::GatherColumnsLinear(x, w, bias, ids, unit_width, y);
}

void CpuBackend::GatherColumns(const Tensor& x, const Tensor& ids,
                               int64_t unit_width, Tensor* y) {
  cpu::GatherColumns(x, ids, unit_width, y);
}

void CpuBackend::SparseAttention(const AttentionArgs& args,
                                 const Tensor& head_ids) {
  cpu::SparseAttention(args, head_ids);
}

void CpuBackend::LazyKv(const LazyKvArgs& args) { cpu::LazyKv(args); }

}  // namespace dynsparse
