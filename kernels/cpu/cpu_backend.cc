#include "kernels/cpu/cpu_backend.h"

#include <Eigen/Core>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_kernels.h"

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

}  // namespace dynsparse
