// CpuBackend: the Backend interface on host memory with the Eigen/OpenMP
// kernels of cpu_kernels.h.
#ifndef DYNSPARSE_KERNELS_CPU_CPU_BACKEND_H_
#define DYNSPARSE_KERNELS_CPU_CPU_BACKEND_H_

#include <string>

#include "core/graph/backend.h"

namespace dynsparse {

class CpuBackend : public Backend {
 public:
  // threads <= 0 keeps OpenMP's default (all cores).
  explicit CpuBackend(int threads = 0);

  Device device() const override { return Device::kCpu; }
  std::string name() const override;
  Tensor Allocate(DType dtype, Shape shape) override;
  void Embed(const Tensor& table, absl::Span<const int32_t> ids,
             Tensor* out) override;
  void Linear(const Tensor& x, const Tensor& w, const Tensor& bias,
              Tensor* y) override;
  void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 double eps, Tensor* y) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, double eps,
               Tensor* y) override;
  void AddInPlace(const Tensor& x, Tensor* y) override;
  void Activate(Activation activation, Tensor* x) override;
  void GatedActivate(Activation activation, const Tensor& gate,
                     Tensor* up) override;
  void ApplyRope(const RopeTable& rope, absl::Span<const int32_t> positions,
                 int64_t heads, Tensor* x) override;
  void WriteRows(const Tensor& rows, absl::Span<const int32_t> positions,
                 Tensor* cache) override;
  void Attention(const AttentionArgs& args) override;
  void MaskUnits(const UnitSelection& keep, int64_t unit_width,
                 Tensor* x) override;
  Tensor ToHost(const Tensor& x) override { return x; }
  void LastQueryAttention(const LastQueryArgs& args) override;

  // Sparse execution (cpu_sparse.h).
  bool SupportsSparse() const override { return true; }
  void GatherLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                    const Tensor& ids, int64_t unit_width, bool activate,
                    Activation activation, Tensor* y) override;
  void GatherGatedLinear(const Tensor& x, const Tensor& w_up,
                         const Tensor& w_gate, const Tensor& b_up,
                         const Tensor& b_gate, const Tensor& ids,
                         Activation activation, Tensor* y) override;
  void GatherLinearT(const Tensor& x, const Tensor& w_t, const Tensor& bias,
                     const Tensor& ids, Tensor* y) override;
  void GatherColumnsLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                           const Tensor& ids, int64_t unit_width,
                           Tensor* y) override;
  void GatherColumns(const Tensor& x, const Tensor& ids, int64_t unit_width,
                     Tensor* y) override;
  void SparseAttention(const AttentionArgs& args,
                       const Tensor& head_ids) override;
  void LazyKv(const LazyKvArgs& args) override;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_KERNELS_CPU_CPU_BACKEND_H_
