// Linear layers on the CPU. Decode (one row) is memory-bound: each weight is
// read once, converted in registers, and dotted with x. Prefill uses Eigen's
// GEMM on f32 weights, or on f32 copies of 64-row panels of f16/bf16 weights.
#include <Eigen/Core>
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_dot.h"
#include "kernels/cpu/cpu_kernels.h"

namespace dynsparse::cpu {
namespace {

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// y[o] = dot(row o of w, x), output rows split across threads.
template <typename W, typename... Tag>
void GemvRows(const W* w, const float* x, float* y, int64_t out, int64_t in,
              Tag... tag) {
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < out; ++o) y[o] = Dot(w + o * in, x, in, tag...);
}

void AddBias(const Tensor& bias, Tensor* y) {
  if (bias.empty()) return;
  const int64_t rows = y->dim(0);
  const int64_t cols = y->dim(1);
  std::vector<float> b = bias.ToF32Vector();
  float* out = y->data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] += b[c];
  }
}

}  // namespace

void Gemv(const Tensor& w, const float* x, float* y) {
  const int64_t out = w.dim(0);
  const int64_t in = w.dim(1);
  switch (w.dtype()) {
    case DType::kF32:
      return GemvRows(w.data<float>(), x, y, out, in);
    case DType::kBF16:
      return GemvRows(w.data<uint16_t>(), x, y, out, in, std::true_type{});
    case DType::kF16:
      return GemvRows(w.data<uint16_t>(), x, y, out, in, std::false_type{});
    case DType::kI32:
      DS_CHECK(false) << "integer weights";
  }
}

void Linear(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor* y) {
  const int64_t n = x.dim(0);
  const int64_t in = x.dim(1);
  const int64_t out = w.dim(0);
  DS_CHECK_EQ(w.dim(1), in);
  DS_CHECK(y->dim(0) == n && y->dim(1) == out);
  if (n == 1) {
    Gemv(w, x.data<float>(), y->data<float>());
  } else {
    Eigen::Map<const RowMatrix> xm(x.data<float>(), n, in);
    Eigen::Map<RowMatrix> ym(y->data<float>(), n, out);
    if (w.dtype() == DType::kF32) {
      Eigen::Map<const RowMatrix> wm(w.data<float>(), out, in);
      ym.noalias() = xm * wm.transpose();
    } else {
      // Convert a panel of weight rows at a time to keep the copy in cache.
      constexpr int64_t kPanel = 64;
      RowMatrix panel(kPanel, in);
      const uint16_t* base = w.data<uint16_t>();
      const bool bf16 = w.dtype() == DType::kBF16;
      for (int64_t o = 0; o < out; o += kPanel) {
        const int64_t rows = std::min(kPanel, out - o);
        if (bf16) {
          WidenToF32(base + o * in, panel.data(), rows * in, std::true_type{});
        } else {
          WidenToF32(base + o * in, panel.data(), rows * in, std::false_type{});
        }
        ym.middleCols(o, rows).noalias() = xm * panel.topRows(rows).transpose();
      }
    }
  }
  AddBias(bias, y);
}

}  // namespace dynsparse::cpu
