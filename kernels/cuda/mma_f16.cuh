// f16 tensor-core pieces shared by the attention kernels (attention.cu,
// flash_prefill.cu, pipelined_attention.cu); include from .cu files only.
#ifndef DYNSPARSE_KERNELS_CUDA_MMA_F16_CUH_
#define DYNSPARSE_KERNELS_CUDA_MMA_F16_CUH_

#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

namespace dynsparse::cuda {

// Two floats rounded to f16 (nearest even) in one 32-bit fragment register,
// `lo` in the low half.
__device__ __forceinline__ uint32_t PackHalf2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// ldmatrix: four 8x8 b16 matrices from shared memory, lanes 8m..8m+7
// addressing the rows of matrix m; .trans hands each lane a column pair
// instead of a row pair (V's B fragment, k = key, from key-major rows).
__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], const __half* p) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4],
                                                const __half* p) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

// c += A B for one m16n8k16 tile: A's four and B's two f16x2 fragment
// registers per lane, f32 accumulators.
__device__ __forceinline__ void MmaF16(float (&c)[4], const uint32_t (&a)[4],
                                       uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
      "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The A fragments of a warp's 16 query rows over head_dim D, scaled and
// rounded to f16: row a (g) at qa, row b (g + 8) at qa + 8 * stride floats;
// a row that is not there (ok false) is zero.
template <int D>
__device__ __forceinline__ void LoadQueryFragments(uint32_t (&qf)[D / 16][4],
                                                   const float* qa,
                                                   int64_t stride, bool ok_a,
                                                   bool ok_b, int t,
                                                   float scale) {
  const float* qb = qa + 8 * stride;
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    const int c = 16 * s + 2 * t;
    qf[s][0] = ok_a ? PackHalf2(qa[c] * scale, qa[c + 1] * scale) : 0u;
    qf[s][1] = ok_b ? PackHalf2(qb[c] * scale, qb[c + 1] * scale) : 0u;
    qf[s][2] = ok_a ? PackHalf2(qa[c + 8] * scale, qa[c + 9] * scale) : 0u;
    qf[s][3] = ok_b ? PackHalf2(qb[c + 8] * scale, qb[c + 9] * scale) : 0u;
  }
}

// The first and last position of a warp's 16 query rows (a row that is not
// there has position -1): tiles of keys past `max` are skipped and tiles at
// or before `min` need no causal mask (INT_MAX when the warp has no row).
struct WarpPositions {
  int min;
  int max;
};
__device__ __forceinline__ WarpPositions WarpPositionRange(int pos_a,
                                                           int pos_b) {
  int hi = max(pos_a, pos_b);
  int lo = min(pos_a < 0 ? INT_MAX : pos_a, pos_b < 0 ? INT_MAX : pos_b);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, off));
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, off));
  }
  return {lo, hi};
}

// The online-softmax step of a warp's two fragment rows (a: row g, b: row
// g + 8) over kTiles 8-key C fragments of scores in base-2 units (scale *
// log2(e) folded into Q: exp2 is one instruction where exp is several),
// masked entries already -inf: the running max m moves to the tile's
// (reduced over the lane quad), the sum l and the kOut output fragments o
// are rescaled, and sc becomes exp2(sc - m), added into l. The max is
// subtracted as `base`, 0 while a row has seen no key, so masked entries
// become 0 without a select per entry and nothing is NaN. Split partials
// carry m in natural units: times ln 2 (SplitPartialMax).
template <int kTiles, int kOut>
__device__ __forceinline__ void OnlineSoftmaxUpdate(float (&sc)[kTiles][4],
                                                    float (&o)[kOut][4],
                                                    float& m_a, float& m_b,
                                                    float& l_a, float& l_b) {
  float tile_a = -INFINITY, tile_b = -INFINITY;
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    tile_a = fmaxf(tile_a, fmaxf(sc[j][0], sc[j][1]));
    tile_b = fmaxf(tile_b, fmaxf(sc[j][2], sc[j][3]));
  }
#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    tile_a = fmaxf(tile_a, __shfl_xor_sync(0xffffffffu, tile_a, off));
    tile_b = fmaxf(tile_b, __shfl_xor_sync(0xffffffffu, tile_b, off));
  }
  const float new_a = fmaxf(m_a, tile_a), new_b = fmaxf(m_b, tile_b);
  const float base_a = new_a == -INFINITY ? 0.f : new_a;
  const float base_b = new_b == -INFINITY ? 0.f : new_b;
  const float alpha_a = exp2f(m_a - base_a);  // 0 for the first keys seen
  const float alpha_b = exp2f(m_b - base_b);
  m_a = new_a;
  m_b = new_b;
  l_a *= alpha_a;
  l_b *= alpha_b;
#pragma unroll
  for (int n = 0; n < kOut; ++n) {
    o[n][0] *= alpha_a;
    o[n][1] *= alpha_a;
    o[n][2] *= alpha_b;
    o[n][3] *= alpha_b;
  }
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      sc[j][e] = exp2f(sc[j][e] - base_a);
      sc[j][2 + e] = exp2f(sc[j][2 + e] - base_b);
      l_a += sc[j][e];
      l_b += sc[j][2 + e];
    }
  }
}

// A base-2 running max (OnlineSoftmaxUpdate) in the natural units of the
// split partials' max, which DecodeCombineKernel exponentiates with exp.
__device__ __forceinline__ float SplitPartialMax(float m_log2) {
  return m_log2 * 0.69314718055994530942f;  // ln 2; -inf stays -inf
}

// One query row's split partial as DecodeCombineKernel reads it at entry e
// (8-byte aligned): max, sum, then the D weighted sums. Lane t of the quad
// holds columns 8n + 2t and 8n + 2t + 1 in o[n][first], o[n][first + 1]
// (first 0: fragment row a, 2: row b).
template <int D>
__device__ __forceinline__ void WriteSplitPartial(float* e, int t, float m,
                                                  float l,
                                                  const float (&o)[D / 8][4],
                                                  int first) {
  if (t == 0) {
    e[0] = m;
    e[1] = l;
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    *reinterpret_cast<float2*>(e + 2 + 8 * n + 2 * t) =
        make_float2(o[n][first], o[n][first + 1]);
  }
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_MMA_F16_CUH_
