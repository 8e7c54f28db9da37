// Linear layers on the CPU. Decode (one row) is memory-bound: each weight is
// read once, converted in registers, and dotted with x. Prefill uses Eigen's
// GEMM on f32 weights, or on f32 copies of 64-row panels of f16/bf16 weights.
#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace dynsparse::cpu {
namespace {

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline float DotF32(const float* w, const float* x, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

inline float DotBF16(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += BF16ToF32(w[i]) * x[i];
  return sum;
}

inline float DotF16(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += F16ToF32(w[i]) * x[i];
  return sum;
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
    case DType::kF32: {
      const float* wd = w.data<float>();
#pragma omp parallel for schedule(static)
      for (int64_t o = 0; o < out; ++o) y[o] = DotF32(wd + o * in, x, in);
      break;
    }
    case DType::kBF16: {
      const uint16_t* wd = w.data<uint16_t>();
#pragma omp parallel for schedule(static)
      for (int64_t o = 0; o < out; ++o) y[o] = DotBF16(wd + o * in, x, in);
      break;
    }
    case DType::kF16: {
      const uint16_t* wd = w.data<uint16_t>();
#pragma omp parallel for schedule(static)
      for (int64_t o = 0; o < out; ++o) y[o] = DotF16(wd + o * in, x, in);
      break;
    }
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
      const char* base = static_cast<const char*>(w.raw_data());
      const size_t row_bytes = in * DTypeSize(w.dtype());
      for (int64_t o = 0; o < out; o += kPanel) {
        const int64_t rows = std::min(kPanel, out - o);
        ConvertElements(w.dtype(), base + o * row_bytes, DType::kF32,
                        panel.data(), rows * in);
        ym.middleCols(o, rows).noalias() = xm * panel.topRows(rows).transpose();
      }
    }
  }
  AddBias(bias, y);
}

}  // namespace dynsparse::cpu
