// The CPU's vectorised dot product of f32/f16/bf16 weights with f32 inputs,
// shared by the dense GEMV (cpu_linear.cc) and the sparse gather kernels
// (cpu_sparse.cc) so both round identically.
#ifndef DYNSPARSE_KERNELS_CPU_CPU_DOT_H_
#define DYNSPARSE_KERNELS_CPU_CPU_DOT_H_

#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace dynsparse::cpu {

// Widening of one weight; the tag says which 16-bit format (bf16 or f16).
inline float ElementToF32(float w) { return w; }
inline float ElementToF32(uint16_t w, std::true_type) { return BF16ToF32(w); }
inline float ElementToF32(uint16_t w, std::false_type) { return F16ToF32(w); }

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

// out[i] = w[i] widened to f32, the values ElementToF32 gives (f16 and bf16
// widen exactly): cpu_linear.cc's GEMM converts a panel of weights per call,
// and the element-by-element ConvertElements was most of a LazyLLM decode
// step on the CPU (its revived rows run the GEMM path).
template <typename... Tag>
inline void WidenToF32(const uint16_t* w, float* out, int64_t n, Tag... tag) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, Load8(w + i, tag...));
#endif
  for (; i < n; ++i) out[i] = ElementToF32(w[i], tag...);
}

}  // namespace dynsparse::cpu

#endif  // DYNSPARSE_KERNELS_CPU_CPU_DOT_H_
