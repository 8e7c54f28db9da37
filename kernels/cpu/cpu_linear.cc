// Linear layers on the CPU. Decode (one row) is memory-bound: each weight is
// read once, converted in registers, and dotted with x. Prefill uses Eigen's
// GEMM on f32 weights, or on f32 copies of 64-row panels of f16/bf16 weights.
#include <Eigen/Core>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace dynsparse::cpu {
namespace {

// Widening of one weight; the tag says which 16-bit format (bf16 or f16).
inline float ElementToF32(float w) { return w; }
inline float ElementToF32(uint16_t w, std::true_type) { return BF16ToF32(w); }
inline float ElementToF32(uint16_t w, std::false_type) { return F16ToF32(w); }

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
// Eight f32 lanes per step, two accumulators to hide FMA latency; f16 and
// bf16 weights widen in registers, so decode reads each weight byte once.
inline __m256 Load8(const float* w) { return _mm256_loadu_ps(w); }
inline __m256 Load8(const uint16_t* w, std::true_type /*bf16*/) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}
inline __m256 Load8(const uint16_t* w, std::false_type /*f16*/) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
}

inline float HorizontalSum(__m256 v) {
  const __m128 sum4 =
      _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 sum2 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
  return _mm_cvtss_f32(_mm_add_ss(sum2, _mm_movehdup_ps(sum2)));
}

template <typename W, typename... Tag>
inline float Dot(const W* w, const float* x, int64_t n, Tag... tag) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(Load8(w + i, tag...), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(Load8(w + i + 8, tag...), _mm256_loadu_ps(x + i + 8),
                           acc1);
  }
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += ElementToF32(w[i], tag...) * x[i];
  return sum;
}
#else
// Portable fallback; the compiler vectorises what it can.
template <typename W, typename... Tag>
inline float Dot(const W* w, const float* x, int64_t n, Tag... tag) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += ElementToF32(w[i], tag...) * x[i];
  return sum;
}
#endif

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
