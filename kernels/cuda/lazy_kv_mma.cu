// Lazy K/V compute on tensor cores (lazy_kv.cuh): one m16n8k16 tile is 16
// K/V rows x up to 8 tokens, and a pass over a head's weights feeds two
// such tiles, so a head's owed tokens (up to a ring, 16) cost no more weight
// reads than its new one. Passes of 8 tokens re-read the weights for each
// 8: OPT-66B DejaVu steps took ~1 ms more once heads owed 8 or more tokens
// (from the 9th decode step on) and ~4 ms more at the ring's wrap
// (results/bench/h200_run35). On CUDA cores each token added a
// pass of FMAs, and a decode step's heads owe up to ~6 tokens when the kept
// heads change from step to step: OPT-66B steps went 17.6 -> 21 ms over the
// first 16 tokens of a sequence (results/bench/h200_run20).
//
// The f32 activations enter the f16 MMA as two terms, hi = f16(x) and
// lo = f16(x - hi), so the sums keep ~22 bits of x (close to the f32 FMAs of
// the CUDA-core path; one f16 rounding alone would lose 2^-12). Below
// |x| = 2^-3 lo is subnormal: an absolute error under 2^-25. The inputs are
// norm outputs, |x| <= sqrt(hidden) x the norm weight, far inside f16's
// range.
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/kv_access.cuh"
#include "kernels/cuda/lazy_kv.cuh"
#include "kernels/cuda/mma_f16.cuh"
#include "kernels/cuda/sparse_loads.cuh"

namespace dynsparse::cuda {
namespace {

constexpr int kTiles = 2;   // 16-row tiles per block.
constexpr int kSplits = 4;  // Warps per tile, each a quarter of hidden.
constexpr int kWarps = kTiles * kSplits;
// Groups of 8 tokens one pass covers: the largest ring (16 slots). A head is
// made active before it owes every slot (LazyWork), so it owes at most
// slots - 1 old tokens and the new one; a 17th (a ring of 16 owed in full,
// which in-order positions never leave) takes a second pass. Forcing heads
// one step later made every forced head owe 17 (results/bench/h200_run92).
// Three groups a pass would spill registers in the k loop.
constexpr int kMaxGroups = 2;
static_assert(kMaxGroups * 8 == kMaxRing, "LazyKvMmaKernel's passes");
static_assert(LazyKvMmaHiddenMultiple() % (64 * kSplits) == 0);

// hi + lo == x to ~2^-22 relative: the f16 rounding of x and of its error.
__device__ __forceinline__ void SplitHalf2(float x0, float x1, uint32_t& hi,
                                           uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 back = __half22float2(h);
  const __half2 l = __floats2half2_rn(x0 - back.x, x1 - back.y);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = *reinterpret_cast<const uint32_t*>(&l);
}

// One 64-element k block of a tile for NT groups of 8 tokens. Lane (g, t) =
// (lane / 4, lane % 4) holds 16 consecutive weights of rows g and g + 8 (w0,
// w8) and, per group, token g's activations (16 floats at x[n] + k), all at
// k = t * 16 ... The MMA's k order is permuted to match: in MMA j, fragment
// positions 2t, 2t + 1 are k = t * 16 + 4j + {0, 1} and positions 2t + 8,
// 2t + 9 are k = t * 16 + 4j + {2, 3}, the same map for A and B, so the
// product sums every k exactly once. The weights are loaded once for all
// groups.
template <int NT>
__device__ __forceinline__ void MmaKBlock(const uint4 (&w0)[2],
                                          const uint4 (&w8)[2],
                                          const float* const (&x)[NT],
                                          int64_t k, float (&acc)[NT][4]) {
  const uint32_t r0[8] = {w0[0].x, w0[0].y, w0[0].z, w0[0].w,
                          w0[1].x, w0[1].y, w0[1].z, w0[1].w};
  const uint32_t r8[8] = {w8[0].x, w8[0].y, w8[0].z, w8[0].w,
                          w8[1].x, w8[1].y, w8[1].z, w8[1].w};
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    const float4 x0 = __ldg(reinterpret_cast<const float4*>(x[n] + k));
    const float4 x1 = __ldg(reinterpret_cast<const float4*>(x[n] + k + 4));
    const float4 x2 = __ldg(reinterpret_cast<const float4*>(x[n] + k + 8));
    const float4 x3 = __ldg(reinterpret_cast<const float4*>(x[n] + k + 12));
    const float xv[16] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w,
                          x2.x, x2.y, x2.z, x2.w, x3.x, x3.y, x3.z, x3.w};
    uint32_t hi[8], lo[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
      SplitHalf2(xv[2 * i], xv[2 * i + 1], hi[i], lo[i]);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t a[4] = {r0[2 * j], r8[2 * j], r0[2 * j + 1],
                             r8[2 * j + 1]};
      MmaF16(acc[n], a, hi[2 * j], hi[2 * j + 1]);
      MmaF16(acc[n], a, lo[2 * j], lo[2 * j + 1]);
    }
  }
}

// The block's place in the work: its tile of 16 [K; V] rows and its split
// of hidden.
struct TileSpot {
  int tile, split, lane, gq, tq;
  bool is_v;
  int64_t row0, k_begin, part, stride;
  // Rows gq (w0) and gq + second (w0 + second * hidden): second is 8, or
  // half head_dim for an f16 cache with RoPE (LazyKvMmaKernel).
  int64_t second;
  const __half* w0;
};

// Up to 8 * NT owed tokens from list position p0 in one pass over the
// weights: each group of 8 is one MMA column tile, and the splits' partial
// sums meet in shared memory in split order.
template <int NT, int kUnroll, typename KvT>
__device__ __forceinline__ void LazyPass(
    const LazyArgs& a, const TileSpot& t, int p0, int np, const int* slot_list,
    const int* pos_list,
    float (&partial)[kSplits - 1][kMaxGroups][kTiles][32][4]) {
  const float* x[NT];
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    // Columns past np repeat the group's first token and are not stored.
    const int first = p0 + 8 * n;
    const int in_group = min(8, np - 8 * n);
    const int slot = slot_list[first + (t.gq < in_group ? t.gq : 0)];
    x[n] =
        (slot < 0 ? a.h : a.ring_x + slot * a.hidden) + t.k_begin + t.tq * 16;
  }
  constexpr bool kHalf = std::is_same_v<KvT, __half>;
  const __half* w0 = t.w0;
  const __half* w8 = w0 + (kHalf ? t.second : 8) * a.hidden;
  float acc[NT][4] = {};
  const int64_t whole = t.part - t.part % (64 * kUnroll);
  int64_t k = 0;
  for (; k < whole; k += 64 * kUnroll) {
    uint4 wa[kUnroll][2], wb[kUnroll][2];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      wa[u][0] = LoadNoAlloc(w0 + k + u * 64);
      wa[u][1] = LoadNoAlloc(w0 + k + u * 64 + 8);
      wb[u][0] = LoadNoAlloc(w8 + k + u * 64);
      wb[u][1] = LoadNoAlloc(w8 + k + u * 64 + 8);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      MmaKBlock<NT>(wa[u], wb[u], x, k + u * 64, acc);
    }
  }
  for (; k < t.part; k += 64) {  // part % 64 == 0
    const uint4 wa[2] = {LoadNoAlloc(w0 + k), LoadNoAlloc(w0 + k + 8)};
    const uint4 wb[2] = {LoadNoAlloc(w8 + k), LoadNoAlloc(w8 + k + 8)};
    MmaKBlock<NT>(wa, wb, x, k, acc);
  }
  if (t.split > 0) {
#pragma unroll
    for (int n = 0; n < NT; ++n) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        partial[t.split - 1][n][t.tile][t.lane][c] = acc[n][c];
      }
    }
  }
  __syncthreads();
  if (t.split == 0) {
    KvT* cache = static_cast<KvT*>(t.is_v ? a.v_cache : a.k_cache);
#pragma unroll
    for (int n = 0; n < NT; ++n) {
#pragma unroll
      for (int s = 0; s < kSplits - 1; ++s) {
#pragma unroll
        for (int c = 0; c < 4; ++c)
          acc[n][c] += partial[s][n][t.tile][t.lane][c];
      }
      if constexpr (!kHalf) {
        // c0, c1: row gq, tokens 2tq, 2tq + 1; c2, c3: row gq + 8.
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int token = 8 * n + 2 * t.tq + (c & 1);
          if (token >= np) continue;
          const int64_t row = t.row0 + t.gq + (c >= 2 ? 8 : 0);
          const float b = LoadAsFloat(t.is_v ? a.bv : a.bk,
                                      t.is_v ? a.bv_kind : a.bk_kind, row, 0.f);
          KvStore(cache + pos_list[p0 + token] * t.stride + row, acc[n][c] + b);
        }
      } else {
        // c0, c1: row gq, tokens 2tq, 2tq + 1; c2, c3: row gq + second,
        // with RoPE the other half of c0's and c1's K pairs (rotated here
        // as LazyKvCommitKernel rotates an f32 cache's rows).
        const bool rope = a.inv_freq != nullptr && !t.is_v;
        const int64_t row = t.row0 + t.gq;
        const void* bias = t.is_v ? a.bv : a.bk;
        const FloatKind kind = t.is_v ? a.bv_kind : a.bk_kind;
        const float b = LoadAsFloat(bias, kind, row, 0.f);
        const float b2 = LoadAsFloat(bias, kind, row + t.second, 0.f);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int token = 8 * n + 2 * t.tq + c;
          if (token >= np) continue;
          const int pos = pos_list[p0 + token];
          float x = acc[n][c] + b, y = acc[n][c + 2] + b2;
          if (rope) {
            const float angle =
                __fmul_rn(static_cast<float>(pos),
                          a.inv_freq[row - static_cast<int64_t>(blockIdx.x) *
                                               a.head_dim]);
            float sn, cs;
            sincosf(angle, &sn, &cs);
            const float2 r = RotatePair(x, y, cs, sn);
            x = r.x;
            y = r.y;
          }
          KvT* out = cache + pos * t.stride + row;
          KvStore(out, x);
          KvStore(out + t.second, y);
        }
      }
    }
  }
  __syncthreads();  // partial is reused by the next pass.
}

// Block: kTiles tiles of 16 rows of one kv head's [K; V] rows, each tile
// summed by kSplits warps over quarters of hidden. A head's owed tokens
// take one pass over its weights (two for kMaxRing + 1). Two 64-element k
// blocks of loads go together, but with 3 blocks an SM (80 registers) a
// pass of two token groups takes one at a time.
// An f16 cache with RoPE takes tiles of 8 K (or V) dimensions i and their
// RoPE partners i + head_dim / 2 instead, so a lane holds both halves of
// its pairs and K is rotated in f32 and rounded to f16 once.
template <int kBlocksPerSm, typename KvT>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm)
    LazyKvMmaKernel(const LazyArgs a) {
  constexpr int kWideUnroll = kBlocksPerSm >= 3 ? 1 : 2;
  PdlWait();
  __shared__ int slot_list[kMaxRing + 1], pos_list[kMaxRing + 1], count;
  __shared__ float partial[kSplits - 1][kMaxGroups][kTiles][32][4];
  const int g = blockIdx.x;
  if (threadIdx.x < 32) LazyWork(a, g, slot_list, pos_list, &count);
  __syncthreads();
  const int n = count;
  if (n == 0) return;
  TileSpot t;
  const int warp = threadIdx.x >> 5;
  t.lane = threadIdx.x & 31;
  t.tile = warp % kTiles;
  t.split = warp / kTiles;
  // head_dim % 16 == 0: a tile is all K rows or all V rows.
  const int r0 = (blockIdx.y * kTiles + t.tile) * 16;
  t.is_v = r0 >= a.head_dim;
  t.row0 =
      static_cast<int64_t>(g) * a.head_dim + (t.is_v ? r0 - a.head_dim : r0);
  t.second = 8;
  if (std::is_same_v<KvT, __half> && a.inv_freq != nullptr) {
    // Pairs [0, half) of K, then [half, head_dim) of V; 8 | half.
    const int half = a.head_dim / 2;
    const int q0 = r0 / 2;
    t.is_v = q0 >= half;
    t.row0 = static_cast<int64_t>(g) * a.head_dim + (t.is_v ? q0 - half : q0);
    t.second = half;
  }
  t.gq = t.lane >> 2;
  t.tq = t.lane & 3;
  t.part = a.hidden / kSplits;
  t.k_begin = t.split * t.part;
  t.stride = static_cast<int64_t>(a.kv_heads) * a.head_dim;
  t.w0 = static_cast<const __half*>(t.is_v ? a.wv : a.wk) +
         (t.row0 + t.gq) * a.hidden + t.k_begin + t.tq * 16;
  // n is the same for the whole block: the branch is uniform.
  if (n <= 8) {
    LazyPass<1, 2, KvT>(a, t, 0, n, slot_list, pos_list, partial);
  } else {
    LazyPass<2, kWideUnroll, KvT>(a, t, 0, min(n, 16), slot_list, pos_list,
                                  partial);
    if (n > 16) {
      LazyPass<1, 2, KvT>(a, t, 16, n - 16, slot_list, pos_list, partial);
    }
  }
}

}  // namespace

absl::Status LaunchLazyKvMma(DeviceContext& ctx, const LazyArgs& a,
                             int blocks_per_sm) {
  if (!LazyKvMmaTakes(a.head_dim, a.hidden)) {
    return absl::InvalidArgumentError(
        "LazyKvMma: head_dim must be a multiple of 16 and hidden of 256");
  }
  const dim3 grid(static_cast<unsigned>(a.kv_heads),
                  static_cast<unsigned>(2 * a.head_dim / (16 * kTiles)));
  if (blocks_per_sm == 0) {
    // The kept heads' blocks (the rest exit at once) all fit at 2 an SM:
    // the 2-block build, whose passes of 16 tokens keep more loads in
    // flight, was faster there (OPT-30B, Llama-2-7B); OPT-66B's 288 do not
    // fit in 264 and lose a wave (results/bench/h200_run38).
    const int64_t kept_kv_heads =
        a.h == nullptr
            ? a.kv_heads
            : std::min<int64_t>(a.kv_heads, (a.k + a.group - 1) / a.group);
    blocks_per_sm = kept_kv_heads * grid.y <= 2 * ctx.info().sm_count ? 2 : 3;
  }
  if (blocks_per_sm != 2 && blocks_per_sm != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LazyKvMma: built for 2 or 3 blocks an SM, not ", blocks_per_sm));
  }
  auto kernel = a.kv_half ? (blocks_per_sm == 2 ? LazyKvMmaKernel<2, __half>
                                                : LazyKvMmaKernel<3, __half>)
                          : (blocks_per_sm == 2 ? LazyKvMmaKernel<2, float>
                                                : LazyKvMmaKernel<3, float>);
  LaunchKernel(ctx.programmatic_launch(), kernel, grid, dim3(kWarps * 32), 0,
               ctx.stream(), a);
  return LastLaunchStatus("LazyKvMmaKernel");
}

}  // namespace dynsparse::cuda
