// Decode GEMV: y[b, o] = sum_k x[b, k] * w[o, k] + bias[o], batch b in 1..8,
// w f16/bf16 [out, in] row-major, x and y f32, f32 accumulation.
//
// Why this shape of kernel. At batch <= 8 the product does 2*b FLOPs per
// weight element against 2 bytes of weight traffic, far below the ~200
// FLOP/byte at which an H200 becomes compute-bound, so the floor is the time
// to read w once from HBM (32 MiB for 4096x4096 bf16: ~7.8 us at 4.3 TB/s).
// Everything here serves that stream:
//  * Layout. w stays in torch's [out, in] row-major layout: output o is the
//    dot product of one contiguous weight row with x, so a warp reading a row
//    moves 32 lanes x 16 bytes = 512 contiguous bytes per load, fully
//    coalesced, and no transposed copy of the checkpoint is needed.
//  * 16-byte loads (uint4 = 8 halves) with L1::no_allocate: each weight byte
//    is used once, so it bypasses L1 and leaves L1 to x, which every row
//    re-reads (x is at most 8 x in x 4 bytes and stays cached).
//  * Memory-level parallelism: each lane issues kUnroll x kRows independent
//    16-byte loads (128 bytes) before it uses the first; with >= 16 warps per
//    SM that keeps well over the ~30 KB per SM in flight that HBM3e needs.
//  * x reuse: a warp computes kRows rows at once, so each x value loaded from
//    L1 is used kRows times; at batch 8 that keeps L1 traffic for x at 4x the
//    weight traffic, inside L1's bandwidth (rows 2 at b <= 4, 4 above).
//  * Reductions: each lane accumulates partial dot products in registers over
//    its slice of K; a warp-shuffle butterfly sums the 32 lanes; when several
//    warps of a block split one row's K (warps_per_row up to 4: more, shorter
//    blocks measured faster on the H200 as long as each warp keeps a full
//    unrolled step of loads) they combine through shared memory.
//  * Split-K across blocks (k_splits > 1) for small `out` (when the grid
//    cannot fill 132 SMs): blocks write f32 partials to the context
//    workspace and a second small kernel sums them in a fixed order, so the
//    result is deterministic (no atomics).
// Two fast kernels share that design:
//  * CUDA cores (GemvVectorKernel): each lane unpacks its 8 weights to f32 and
//    does 8 x batch FMAs against f32 x. Best at batch 1-2; at batch 8 the
//    FMAs (8 per weight byte pair) saturate the issue slots long before HBM.
//  * Tensor cores (GemvMmaKernel): a warp owns 16 rows and feeds the weights
//    straight from its 16-byte loads into mma.sync.m16n8k16 as the A operand;
//    the batch (padded to 8) is the n dimension. The dot product does not
//    care in which order K is summed, so instead of the mma's canonical K
//    order (which would need 4-byte loads or an ldmatrix pass through shared
//    memory) lane (g, t) gives its 8 consecutive weights of rows g and g+8 to
//    the K slots it owns, and loads x for those same 8 K positions into the B
//    fragment. x is f32; mma wants w's type, so x is split into hi + lo of
//    that type and each A fragment meets both (2 mma): products carry x to
//    16 (bf16) or 22 (f16) bits, f32 accumulation. 8 warps of a block split
//    K over one 16-row group and add their fragments through shared memory.
// Shapes the fast paths cannot take (in % 8 != 0, unaligned pointers, f32
// weights) run a scalar kernel (one element per lane per step): correct, not
// fast. kAuto takes the CUDA-core kernel below batch 3, the tensor-core one
// from 3 (measured crossover). Numbers and open leads: kernels/cuda/NOTES.md.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv.h"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kVec = 8;  // Halves per 16-byte load.

// Rows per warp and loads in flight per row, by batch (see the top comment).
template <int B>
struct GemvTile {
  static constexpr int kRows = B <= 4 ? 2 : 4;
  static constexpr int kUnroll = B <= 4 ? 4 : 2;
};

int RowsPerWarp(int64_t batch) { return batch <= 4 ? 2 : 4; }
int UnrollFor(int64_t batch) { return batch <= 4 ? 4 : 2; }

struct GemvArgs {
  const void* w;
  const float* x;
  const void* bias;
  FloatKind bias_kind;
  float* y;
  float* partial;     // [k_splits, batch, out] when k_splits > 1.
  const float* gate;  // GatedGemv only: x is read as act(gate) * x.
  // Fused pre-norm of x (NormInput): gamma (w's dtype), LayerNorm's row sums
  // c[o] = sum_k w[o, k] gamma[k] (null for RMSNorm) and eps.
  const void* norm_weight;
  const float* norm_row_sums;
  float norm_eps;
  bool layer_norm;
  bool accumulate;       // y += result (the residual add in the epilogue).
  int act;               // -1, or an Activation applied to y (+ bias)
  int64_t act_from_row;  // ... in rows >= this one only.
  bool early_loads;      // Weight loads before PdlWait (vector kernel).
  int batch;
  int64_t out;
  int64_t in;
  int warps_per_row;
  int64_t chunks_per_split;  // 8-element chunks of K per blockIdx.y.
};

// 16 bytes through the read-only path without allocating in L1.
__device__ __forceinline__ uint4 LoadStreaming(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// Eight weights packed in a uint4 -> f32.
template <typename T>
__device__ __forceinline__ void Unpack8(const uint4& v, float (&f)[8]);

template <>
__device__ __forceinline__ void Unpack8<__nv_bfloat16>(const uint4& v,
                                                       float (&f)[8]) {
  // bf16 is the top half of an f32: shift or mask, no conversion instruction.
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(words[i] << 16);
    f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

template <>
__device__ __forceinline__ void Unpack8<__half>(const uint4& v, float (&f)[8]) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __half2 h = *reinterpret_cast<const __half2*>(&words[i]);
    const float2 p = __half22float2(h);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

// Statistics of x that a fused pre-norm needs: sum and sum of squares over
// all of K (NormInput accumulates them; zero otherwise).
struct XStats {
  float sum = 0.0f;
  float sq = 0.0f;
};

// y's final value: act(sum + bias), as Linear followed by Activate computes
// it (the activation folded into the epilogue saves OPT's ReLU launch).
// With a fused norm `sum` is w . (gamma * x): RMSNorm scales it by
// 1 / rms(x); LayerNorm subtracts mean * c[row] first (the bias is then
// LayerNorm's W beta + b, computed at upload).
__device__ __forceinline__ float Finish(const GemvArgs& a, int64_t row,
                                        float sum, XStats stats = {}) {
  if (a.norm_weight != nullptr) {
    const float inv_n = 1.0f / static_cast<float>(a.in);
    const float mean = a.layer_norm ? stats.sum * inv_n : 0.0f;
    const float var = fmaxf(stats.sq * inv_n - mean * mean, 0.0f);
    const float inv = 1.0f / sqrtf(var + a.norm_eps);
    if (a.norm_row_sums != nullptr) {
      sum = fmaf(-mean, a.norm_row_sums[row], sum);
    }
    sum *= inv;
  }
  const float v = sum + LoadAsFloat(a.bias, a.bias_kind, row, 0.0f);
  return row < a.act_from_row ? v : ActByCode(a.act, v);
}

// Writes one finished dot product: to y (+ bias) or, when K is split across
// blocks, to this split's slice of the partials.
__device__ __forceinline__ void StoreResult(const GemvArgs& a, int batch, int b,
                                            int64_t row, float sum,
                                            XStats stats = {}) {
  if (gridDim.y == 1) {
    float* y = a.y + b * a.out + row;
    const float v = Finish(a, row, sum, stats);
    *y = a.accumulate ? *y + v : v;
  } else {
    a.partial[(static_cast<int64_t>(blockIdx.y) * batch + b) * a.out + row] =
        sum;
  }
}

// How the CUDA-core kernel reads x: as is, or (GatedGemv) as act(gate) * x,
// the gated MLP's product folded into the down projection's input load so
// the intermediate vector needs no separate elementwise pass. The product is
// one rounded f32 multiply, as in activation.cu's GatedOp.
struct PlainInput {
  __device__ static void Apply(const GemvArgs&, int64_t, float4&, float4&,
                               XStats&) {}
};
// x * gate, for a gate that already holds act(gate) (GatedMlp: the up/gate
// GEMV applied the activation in its epilogue, once per element, so this
// load costs one multiply instead of an exp and a division per block).
struct ProductInput {
  __device__ static void Apply(const GemvArgs& a, int64_t f4, float4& xa,
                               float4& xb, XStats&) {
    const float4* g4 = reinterpret_cast<const float4*>(a.gate);
    const float4 ga = __ldg(g4 + f4);
    const float4 gb = __ldg(g4 + f4 + 1);
    xa.x = __fmul_rn(xa.x, ga.x);
    xa.y = __fmul_rn(xa.y, ga.y);
    xa.z = __fmul_rn(xa.z, ga.z);
    xa.w = __fmul_rn(xa.w, ga.w);
    xb.x = __fmul_rn(xb.x, gb.x);
    xb.y = __fmul_rn(xb.y, gb.y);
    xb.z = __fmul_rn(xb.z, gb.z);
    xb.w = __fmul_rn(xb.w, gb.w);
  }
};
template <Activation A>
struct GatedInput {
  __device__ static void Apply(const GemvArgs& a, int64_t f4, float4& xa,
                               float4& xb, XStats&) {
    const float4* g4 = reinterpret_cast<const float4*>(a.gate);
    const float4 ga = __ldg(g4 + f4);
    const float4 gb = __ldg(g4 + f4 + 1);
    xa.x = __fmul_rn(xa.x, Act<A>(ga.x));
    xa.y = __fmul_rn(xa.y, Act<A>(ga.y));
    xa.z = __fmul_rn(xa.z, Act<A>(ga.z));
    xa.w = __fmul_rn(xa.w, Act<A>(ga.w));
    xb.x = __fmul_rn(xb.x, Act<A>(gb.x));
    xb.y = __fmul_rn(xb.y, Act<A>(gb.y));
    xb.z = __fmul_rn(xb.z, Act<A>(gb.z));
    xb.w = __fmul_rn(xb.w, Act<A>(gb.w));
  }
};

// A block's pre-norm folded into the load of x (one row): x * gamma feeds the
// dot products and the raw x the statistics. A row group's warps together
// read all of K once, so each group ends with the sum and the sum of squares
// of the whole row and the norm needs no launch of its own.
template <typename T>
struct NormInput {
  __device__ static void Apply(const GemvArgs& a, int64_t f4, float4& xa,
                               float4& xb, XStats& stats) {
    float g[8];
    Unpack8<T>(__ldg(static_cast<const uint4*>(a.norm_weight) + f4 / 2), g);
    One(g[0], xa.x, stats);
    One(g[1], xa.y, stats);
    One(g[2], xa.z, stats);
    One(g[3], xa.w, stats);
    One(g[4], xb.x, stats);
    One(g[5], xb.y, stats);
    One(g[6], xb.z, stats);
    One(g[7], xb.w, stats);
  }
  __device__ static void One(float g, float& v, XStats& stats) {
    stats.sum += v;
    stats.sq = fmaf(v, v, stats.sq);
    v *= g;
  }
};

// The gated MLP's up/gate GEMV in pairs (GemvOptions::gated_pairs): w is
// [w_up; w_gate] (2n rows), a warp's two rows are neuron j of each half, and
// y[j] = (up_j + b) * act(gate_j + b), the product GatedActivate forms, so
// the down GEMV reads one vector instead of forming it in every block.
__device__ __forceinline__ void StorePair(const GemvArgs& a, int64_t j,
                                          float up_sum, float gate_sum,
                                          XStats stats) {
  const int64_t half = a.out / 2;  // act_from_row == half: gate rows only.
  a.y[j] = __fmul_rn(Finish(a, half + j, gate_sum, stats),
                     Finish(a, j, up_sum, stats));
}

// Block = 8 warps = (8 / warps_per_row) row groups x warps_per_row K slices.
// A row group is kRows consecutive rows (kPairs: rows j and out / 2 + j);
// blockIdx.y selects the K split. kMinBlocks > 1 asks ptxas to fit that many
// blocks an SM (OccupancyBound).
template <typename T, int B, typename XIn = PlainInput, bool kPairs = false,
          int kMinBlocks = 1>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    GemvVectorKernel(const GemvArgs a) {
  // PdlWait comes after the first step's weight loads: weights are never
  // written during a forward step, so with programmatic dependent launch
  // those loads overlap the tail of the previous kernel (a norm, attention)
  // instead of starting only once it has finished.
  bool waited = !a.early_loads;
  if (waited) PdlWait();
  constexpr int R = GemvTile<B>::kRows;
  constexpr int U = GemvTile<B>::kUnroll;
  __shared__ float partial_sums[kWarps][R * B];
  __shared__ XStats partial_stats[kWarps];
  XStats stats;

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wpr = a.warps_per_row;
  const int wk = warp % wpr;
  const int wr = warp / wpr;
  const int groups_per_block = kWarps / wpr;
  static_assert(!kPairs || (B == 1 && R == 2), "pairs: one row, two rows/warp");
  const int64_t group_id =
      static_cast<int64_t>(blockIdx.x) * groups_per_block + wr;
  const int64_t row0 = kPairs ? group_id : group_id * R;
  const int64_t live_rows = kPairs ? a.out / 2 : a.out;
  const int64_t chunks = a.in / kVec;
  const int64_t chunk_begin = blockIdx.y * a.chunks_per_split;
  const int64_t chunk_end = min(chunks, chunk_begin + a.chunks_per_split);

  float acc[R][B];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int b = 0; b < B; ++b) acc[r][b] = 0.0f;
  }

  if (row0 < live_rows) {
    const uint4* w_rows[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      // Rows past the end re-read the last row; their results are dropped.
      const int64_t row =
          kPairs ? r * live_rows + row0 : min(row0 + r, a.out - 1);
      w_rows[r] = static_cast<const uint4*>(a.w) + row * chunks;
    }
    const float4* x4 = reinterpret_cast<const float4*>(a.x);
    const int64_t x4_row = a.in / 4;  // float4s per x row.
    const int64_t step = static_cast<int64_t>(wpr) * 32;
    for (int64_t c0 = chunk_begin + wk * 32 + lane; c0 < chunk_end;
         c0 += step * U) {
      // All weight loads of this step first: kRows x kUnroll in flight.
      uint4 wv[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t c = c0 + u * step;
#pragma unroll
        for (int r = 0; r < R; ++r) {
          wv[u][r] = c < chunk_end ? LoadStreaming(w_rows[r] + c)
                                   : make_uint4(0u, 0u, 0u, 0u);
        }
      }
      if (!waited) {
        PdlWait();
        waited = true;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t c = c0 + u * step;
        if (c < chunk_end) {
          float wf[R][8];
#pragma unroll
          for (int r = 0; r < R; ++r) Unpack8<T>(wv[u][r], wf[r]);
#pragma unroll
          for (int b = 0; b < B; ++b) {
            float4 xa = __ldg(x4 + b * x4_row + 2 * c);
            float4 xb = __ldg(x4 + b * x4_row + 2 * c + 1);
            XIn::Apply(a, b * x4_row + 2 * c, xa, xb, stats);
            const float xv[8] = {xa.x, xa.y, xa.z, xa.w,
                                 xb.x, xb.y, xb.z, xb.w};
#pragma unroll
            for (int r = 0; r < R; ++r) {
#pragma unroll
              for (int j = 0; j < 8; ++j) {
                acc[r][b] = fmaf(wf[r][j], xv[j], acc[r][b]);
              }
            }
          }
        }
      }
    }
  }
  if (!waited) PdlWait();

#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int b = 0; b < B; ++b) acc[r][b] = WarpSum(acc[r][b]);
  }
  if (a.norm_weight != nullptr) {
    stats.sum = WarpSum(stats.sum);
    stats.sq = WarpSum(stats.sq);
  }

  if (wpr == 1) {
    if (row0 >= live_rows) return;
    if constexpr (kPairs) {
      if (lane == 0) StorePair(a, row0, acc[0][0], acc[1][0], stats);
    } else {
      // Lane i stores value i (R * B <= 32), so the stores go out in
      // parallel.
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int b = 0; b < B; ++b) {
          if (lane == r * B + b && row0 + r < a.out) {
            StoreResult(a, B, b, row0 + r, acc[r][b], stats);
          }
        }
      }
    }
    return;
  }

  // Several warps split this row group's K: combine in a fixed order.
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int b = 0; b < B; ++b) {
      if (lane == r * B + b) partial_sums[warp][r * B + b] = acc[r][b];
    }
  }
  if (lane == 0) partial_stats[warp] = stats;
  __syncthreads();
  if constexpr (kPairs) {
    if (threadIdx.x >= groups_per_block) return;  // One thread per pair.
    float up = 0.0f, gate = 0.0f;
    XStats group_stats;
    for (int k = 0; k < wpr; ++k) {
      const int w = threadIdx.x * wpr + k;
      up += partial_sums[w][0];
      gate += partial_sums[w][1];
      group_stats.sum += partial_stats[w].sum;
      group_stats.sq += partial_stats[w].sq;
    }
    const int64_t j =
        static_cast<int64_t>(blockIdx.x) * groups_per_block + threadIdx.x;
    if (j < live_rows) StorePair(a, j, up, gate, group_stats);
  } else {
    for (int t = threadIdx.x; t < groups_per_block * R * B; t += kThreads) {
      const int group = t / (R * B);
      const int i = t % (R * B);
      float sum = 0.0f;
      XStats group_stats;
      for (int k = 0; k < wpr; ++k) {
        sum += partial_sums[group * wpr + k][i];
        group_stats.sum += partial_stats[group * wpr + k].sum;
        group_stats.sq += partial_stats[group * wpr + k].sq;
      }
      const int64_t row =
          (static_cast<int64_t>(blockIdx.x) * groups_per_block + group) * R +
          i / B;
      if (row < a.out) StoreResult(a, B, i % B, row, sum, group_stats);
    }
  }
}

// ---- Tensor-core path ----------------------------------------------------

constexpr int kMmaWarps = 8;
constexpr int kMmaThreads = kMmaWarps * 32;
constexpr int kMmaRows = 16;  // m of mma.m16n8k16.
constexpr int kMmaV = 2;      // 16-byte loads per row per lane per unit.
constexpr int kMmaU = 2;      // Units whose loads a warp issues together.
// One unit: 4 lanes (t) x kMmaV chunks of 8 = 64 K elements of 16 rows.
constexpr int kMmaUnitChunks = 4 * kMmaV;
// Splits of K start on multiples of this (all 8 warps get whole units).
constexpr int kMmaSplitChunks = kMmaWarps * kMmaUnitChunks;

template <typename T>
struct MmaOps;

template <>
struct MmaOps<__nv_bfloat16> {
  static __device__ __forceinline__ float Round(float v) {
    return __bfloat162float(__float2bfloat16_rn(v));
  }
  static __device__ __forceinline__ uint32_t Pack(float lo_k, float hi_k) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo_k, hi_k);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  static __device__ __forceinline__ void Mma(float (&c)[4], uint32_t a0,
                                             uint32_t a1, uint32_t a2,
                                             uint32_t a3, uint32_t b0,
                                             uint32_t b1) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    __trap();  // Built for a pre-Ampere target: no bf16/f16 m16n8k16 mma.
#endif
  }
};

template <>
struct MmaOps<__half> {
  static __device__ __forceinline__ float Round(float v) {
    return __half2float(__float2half_rn(v));
  }
  static __device__ __forceinline__ uint32_t Pack(float lo_k, float hi_k) {
    const __half2 h = __floats2half2_rn(lo_k, hi_k);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  static __device__ __forceinline__ void Mma(float (&c)[4], uint32_t a0,
                                             uint32_t a1, uint32_t a2,
                                             uint32_t a3, uint32_t b0,
                                             uint32_t b1) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    __trap();  // Built for a pre-Ampere target: no bf16/f16 m16n8k16 mma.
#endif
  }
};

// Block = 8 warps on one 16-row group; warp w takes units w, w + 8, ... of
// this K split. Lane (g = lane / 4, t = lane % 4) loads, per unit, kMmaV
// adjacent 16-byte chunks of rows g and g + 8 at chunk u + t * kMmaV + v, and
// x of batch row g (zeros for g >= B) at the same K positions. For each chunk
// the words (k, k+1), (k+2, k+3) fill the K slots {2t, 2t+1}, {2t+8, 2t+9} of
// one mma and words (k+4, k+5), (k+6, k+7) those of a second one, for A and
// B alike. Accumulator c[0..3] = (row g, batch 2t), (g, 2t+1), (g+8, 2t),
// (g+8, 2t+1).
// Measured on an H200 (gemv_benchmark sweeps, 2026-11-30): this form (all
// loads of kMmaU units issued, then used; 40-48 registers, so up to 48 warps
// per SM) beat a loop-carried prefetch of the next units (58-74 registers)
// and a lane order giving 64 contiguous bytes per load instruction (62
// registers): the kernel is latency-bound and occupancy wins.
template <typename T, int B>
__global__ void __launch_bounds__(kMmaThreads) GemvMmaKernel(const GemvArgs a) {
  PdlWait();
  using Ops = MmaOps<T>;
  __shared__ float partial_sums[kMmaWarps][kMmaRows * 8];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kMmaRows;
  const int64_t chunks = a.in / kVec;
  const int64_t chunk_begin = blockIdx.y * a.chunks_per_split;
  const int64_t chunk_end = min(chunks, chunk_begin + a.chunks_per_split);
  // Rows past the end re-read the last row; their results are dropped.
  const uint4* w_lo =
      static_cast<const uint4*>(a.w) + min(row0 + g, a.out - 1) * chunks;
  const uint4* w_hi =
      static_cast<const uint4*>(a.w) + min(row0 + g + 8, a.out - 1) * chunks;
  const bool has_x = g < B;
  const float4* x4 =
      reinterpret_cast<const float4*>(a.x) + (has_x ? g : 0) * (a.in / 4);

  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  constexpr int64_t kStep = int64_t{kMmaWarps} * kMmaUnitChunks;
  // The loop bounds depend on the warp only: every lane reaches each mma.
  for (int64_t u0 = chunk_begin + warp * kMmaUnitChunks; u0 < chunk_end;
       u0 += kStep * kMmaU) {
    uint4 wv[kMmaU][kMmaV][2];
#pragma unroll
    for (int uu = 0; uu < kMmaU; ++uu) {
#pragma unroll
      for (int v = 0; v < kMmaV; ++v) {
        const int64_t chunk = u0 + uu * kStep + t * kMmaV + v;
        const bool ok = chunk < chunk_end;
        wv[uu][v][0] =
            ok ? LoadStreaming(w_lo + chunk) : make_uint4(0, 0, 0, 0);
        wv[uu][v][1] =
            ok ? LoadStreaming(w_hi + chunk) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int uu = 0; uu < kMmaU; ++uu) {
#pragma unroll
      for (int v = 0; v < kMmaV; ++v) {
        const int64_t chunk = u0 + uu * kStep + t * kMmaV + v;
        float xs[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        if (has_x && chunk < chunk_end) {
          const float4 p = __ldg(x4 + 2 * chunk);
          const float4 q = __ldg(x4 + 2 * chunk + 1);
          xs[0] = p.x;
          xs[1] = p.y;
          xs[2] = p.z;
          xs[3] = p.w;
          xs[4] = q.x;
          xs[5] = q.y;
          xs[6] = q.z;
          xs[7] = q.w;
        }
        uint32_t hi[4], lo[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float h0 = Ops::Round(xs[2 * i]);
          const float h1 = Ops::Round(xs[2 * i + 1]);
          hi[i] = Ops::Pack(h0, h1);
          lo[i] = Ops::Pack(xs[2 * i] - h0, xs[2 * i + 1] - h1);
        }
        const uint4& r0 = wv[uu][v][0];  // Row g.
        const uint4& r8 = wv[uu][v][1];  // Row g + 8.
        Ops::Mma(c, r0.x, r8.x, r0.y, r8.y, hi[0], hi[1]);
        Ops::Mma(c, r0.x, r8.x, r0.y, r8.y, lo[0], lo[1]);
        Ops::Mma(c, r0.z, r8.z, r0.w, r8.w, hi[2], hi[3]);
        Ops::Mma(c, r0.z, r8.z, r0.w, r8.w, lo[2], lo[3]);
      }
    }
  }

  partial_sums[warp][g * 8 + 2 * t] = c[0];
  partial_sums[warp][g * 8 + 2 * t + 1] = c[1];
  partial_sums[warp][(g + 8) * 8 + 2 * t] = c[2];
  partial_sums[warp][(g + 8) * 8 + 2 * t + 1] = c[3];
  __syncthreads();
  if (threadIdx.x < kMmaRows * 8) {
    const int r = threadIdx.x / 8;
    const int b = threadIdx.x % 8;
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kMmaWarps; ++w) sum += partial_sums[w][threadIdx.x];
    if (b < B && row0 + r < a.out) StoreResult(a, B, b, row0 + r, sum);
  }
}

// Fallback: one warp per row, one element per lane per step. Any in, any
// alignment, f32/f16/bf16 weights. Never splits K.
template <typename T, int B>
__global__ void __launch_bounds__(kThreads) GemvScalarKernel(const GemvArgs a) {
  PdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= a.out) return;
  const T* w_row = static_cast<const T*>(a.w) + row * a.in;
  float acc[B];
#pragma unroll
  for (int b = 0; b < B; ++b) acc[b] = 0.0f;
  for (int64_t k = lane; k < a.in; k += 32) {
    const float wv = ToFloat(w_row[k]);
#pragma unroll
    for (int b = 0; b < B; ++b) acc[b] = fmaf(wv, a.x[b * a.in + k], acc[b]);
  }
#pragma unroll
  for (int b = 0; b < B; ++b) {
    const float sum = WarpSum(acc[b]);
    if (lane == b) {
      float* y = a.y + b * a.out + row;
      *y = a.accumulate ? *y + Finish(a, row, sum) : Finish(a, row, sum);
    }
  }
}

// y[b, o] = sum over splits of partial[s, b, o] + bias[o], in split order.
__global__ void GemvSplitReduceKernel(const GemvArgs a, int batch,
                                      int k_splits) {
  PdlWait();
  const int64_t total = static_cast<int64_t>(batch) * a.out;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i % a.out;
    float sum = 0.0f;
    for (int s = 0; s < k_splits; ++s) sum += a.partial[s * total + i];
    a.y[i] = a.accumulate ? a.y[i] + Finish(a, row, sum) : Finish(a, row, sum);
  }
}

using KernelFn = void (*)(GemvArgs);

// Blocks an SM the one-row kernels are built to fit when the context asks for
// it (DeviceContext::gemv_occupancy_bounds). Left to itself ptxas gives the
// fused-norm kernel (q/k/v, up/gate) 78 registers, 6 blocks an SM, and the
// plain one (o-projection, down) 72, 7 an SM; capped they take 71 and 64
// without spilling (ptxas -v, sm_90a), one block an SM more each. The
// product input spills at 64 and keeps 7. H200 (results/bench/h200_run125,
// h200_run126): Llama-2-7B decode 4.00 -> 3.63 ms, OPT-6.7B 4.14 -> 3.85;
// the fused-norm kernel at 8 (64 registers, 16-24 bytes spilled) or the
// plain one at 7 were slower.
template <typename XIn>
constexpr int OccupancyBound() {
  if constexpr (std::is_same_v<XIn, PlainInput>) return 8;
  return 7;
}

// Resident blocks per SM of `kernel` at `threads`, asked of the driver once
// per (device, kernel, threads): PlanGemv runs before every eager GEMV, and
// the query was 2-3 us of host time each (h200_run76's API trace).
absl::StatusOr<int> BlocksPerSm(const DeviceContext& ctx, KernelFn kernel,
                                int threads) {
  using Key = std::tuple<int, KernelFn, int>;
  static std::mutex mu;
  static auto* known = new std::map<Key, int>();  // never destroyed
  const Key key{ctx.device(), kernel, threads};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known->find(key); it != known->end()) return it->second;
  }
  int blocks = 0;
  DS_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, kernel, threads, 0));
  std::lock_guard<std::mutex> lock(mu);
  known->emplace(key, blocks);
  return blocks;
}

// The one-row kernel reading x through XIn, with or without OccupancyBound.
template <typename T, typename XIn, bool kPairs = false>
KernelFn OneRowKernel(bool bounded) {
  return bounded ? GemvVectorKernel<T, 1, XIn, kPairs, OccupancyBound<XIn>()>
                 : GemvVectorKernel<T, 1, XIn, kPairs>;
}

// The one-row CUDA-core kernel with a fused norm and/or gated pairs.
template <typename T>
KernelFn VectorVariant(bool norm, bool pairs, bool bounded) {
  if (norm) {
    return pairs ? OneRowKernel<T, NormInput<T>, true>(bounded)
                 : OneRowKernel<T, NormInput<T>>(bounded);
  }
  return pairs ? OneRowKernel<T, PlainInput, true>(bounded)
               : OneRowKernel<T, PlainInput>(bounded);
}

// The gated down projection: x * gate (ProductInput, bounded like the
// others), or x * act(gate) computed in the load (GatedInput, off the default
// route: at 7 blocks an SM two of them spill, so they keep ptxas's counts).
template <typename T>
KernelFn GatedKernelFor(std::optional<Activation> activation, bool bounded) {
  if (!activation.has_value()) return OneRowKernel<T, ProductInput>(bounded);
  switch (*activation) {
    case Activation::kRelu:
      return GemvVectorKernel<T, 1, GatedInput<Activation::kRelu>>;
    case Activation::kSilu:
      return GemvVectorKernel<T, 1, GatedInput<Activation::kSilu>>;
    case Activation::kGelu:
      return GemvVectorKernel<T, 1, GatedInput<Activation::kGelu>>;
    case Activation::kGeluTanh:
      return GemvVectorKernel<T, 1, GatedInput<Activation::kGeluTanh>>;
  }
  return nullptr;
}

template <typename T>
KernelFn VectorKernelFor(int64_t batch, bool bounded) {
  switch (batch) {
    case 1:
      return OneRowKernel<T, PlainInput>(bounded);
    case 2:
      return GemvVectorKernel<T, 2>;
    case 3:
      return GemvVectorKernel<T, 3>;
    case 4:
      return GemvVectorKernel<T, 4>;
    case 5:
      return GemvVectorKernel<T, 5>;
    case 6:
      return GemvVectorKernel<T, 6>;
    case 7:
      return GemvVectorKernel<T, 7>;
    case 8:
      return GemvVectorKernel<T, 8>;
  }
  return nullptr;
}

template <typename T>
KernelFn ScalarKernelFor(int64_t batch) {
  switch (batch) {
    case 1:
      return GemvScalarKernel<T, 1>;
    case 2:
      return GemvScalarKernel<T, 2>;
    case 3:
      return GemvScalarKernel<T, 3>;
    case 4:
      return GemvScalarKernel<T, 4>;
    case 5:
      return GemvScalarKernel<T, 5>;
    case 6:
      return GemvScalarKernel<T, 6>;
    case 7:
      return GemvScalarKernel<T, 7>;
    case 8:
      return GemvScalarKernel<T, 8>;
  }
  return nullptr;
}

template <typename T>
KernelFn MmaKernelFor(int64_t batch) {
  switch (batch) {
    case 1:
      return GemvMmaKernel<T, 1>;
    case 2:
      return GemvMmaKernel<T, 2>;
    case 3:
      return GemvMmaKernel<T, 3>;
    case 4:
      return GemvMmaKernel<T, 4>;
    case 5:
      return GemvMmaKernel<T, 5>;
    case 6:
      return GemvMmaKernel<T, 6>;
    case 7:
      return GemvMmaKernel<T, 7>;
    case 8:
      return GemvMmaKernel<T, 8>;
  }
  return nullptr;
}

template <typename T>
KernelFn KernelFor(GemvPath path, int64_t batch, bool bounded) {
  switch (path) {
    case GemvPath::kCudaCore:
      return VectorKernelFor<T>(batch, bounded);
    case GemvPath::kTensorCore:
      return MmaKernelFor<T>(batch);
    case GemvPath::kScalar:
      return ScalarKernelFor<T>(batch);
    case GemvPath::kAuto:
      break;
  }
  return nullptr;
}

// The kernel a plain GEMV (no fused norm, pairs or gate) runs.
KernelFn SelectKernel(DType dtype, int64_t batch, GemvPath path, bool bounded) {
  switch (dtype) {
    case DType::kBF16:
      return KernelFor<__nv_bfloat16>(path, batch, bounded);
    case DType::kF16:
      return KernelFor<__half>(path, batch, bounded);
    case DType::kF32:
      return path == GemvPath::kScalar ? ScalarKernelFor<float>(batch)
                                       : nullptr;
    case DType::kI32:
      break;
  }
  return nullptr;
}

// The kernel a launch with these options runs (its plan is sized by that
// kernel's occupancy). `gate`: GatedGemv's activation, null for Gemv.
KernelFn LaunchedKernel(const DeviceContext& ctx, DType dtype, int64_t batch,
                        GemvPath path, bool norm, bool pairs,
                        const std::optional<Activation>* gate) {
  const bool bounded = ctx.gemv_occupancy_bounds();
  if (gate != nullptr) {
    return dtype == DType::kF16 ? GatedKernelFor<__half>(*gate, bounded)
                                : GatedKernelFor<__nv_bfloat16>(*gate, bounded);
  }
  if (!norm && !pairs) return SelectKernel(dtype, batch, path, bounded);
  return dtype == DType::kF16
             ? VectorVariant<__half>(norm, pairs, bounded)
             : VectorVariant<__nv_bfloat16>(norm, pairs, bounded);
}

int ThreadsFor(GemvPath path) {
  return path == GemvPath::kTensorCore ? kMmaThreads : kThreads;
}

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

absl::Status ValidateOperands(const Tensor& x, const Tensor& w) {
  RETURN_IF_ERROR(CheckOnDevice(x, "Gemv x"));
  RETURN_IF_ERROR(CheckOnDevice(w, "Gemv w"));
  if (w.rank() != 2 || x.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv wants x [batch, in] and w [out, in], got x ",
                     x.DebugString(), " and w ", w.DebugString()));
  }
  if (x.dim(1) != w.dim(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv inner dimensions differ: x ", x.DebugString(),
                     ", w ", w.DebugString()));
  }
  if (x.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv x must be f32, got ", x.DebugString()));
  }
  if (!IsFloating(w.dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv w must be f16, bf16 or f32, got ", w.DebugString()));
  }
  if (x.dim(0) < 1 || x.dim(0) > kGemvMaxBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemv batch must be 1..", kGemvMaxBatch, " (decode), got ",
                     x.dim(0), " rows; larger batches belong to a GEMM"));
  }
  if (x.dim(1) > (int64_t{1} << 31) - 1 || w.dim(0) > (int64_t{1} << 31) - 1) {
    return absl::InvalidArgumentError("Gemv dimensions must fit in int32");
  }
  return absl::OkStatus();
}

}  // namespace

// Batch at and above which kAuto takes the tensor-core path.
constexpr int64_t kTensorCoreMinBatch = 3;

const char* GemvPathName(GemvPath path) {
  switch (path) {
    case GemvPath::kAuto:
      return "auto";
    case GemvPath::kScalar:
      return "scalar";
    case GemvPath::kCudaCore:
      return "cuda_core";
    case GemvPath::kTensorCore:
      return "tensor_core";
  }
  return "?";
}

std::string GemvPlan::DebugString() const {
  return absl::StrCat(GemvPathName(path), " rows/warp=", rows_per_warp,
                      " warps/row=", warps_per_row, " k_splits=", k_splits,
                      " blocks=", grid_blocks,
                      " resident_warps=", resident_warps);
}

namespace {

// PlanGemv for the kernel LaunchedKernel picks (`gate` as there).
absl::StatusOr<GemvPlan> PlanLaunch(const DeviceContext& ctx, const Tensor& x,
                                    const Tensor& w, const GemvOptions& options,
                                    const std::optional<Activation>* gate) {
  RETURN_IF_ERROR(ValidateOperands(x, w));
  const int64_t batch = x.dim(0);
  const int64_t out = w.dim(0);
  const int64_t in = w.dim(1);
  const int64_t chunks = in / kVec;
  const bool fast_ok =
      (w.dtype() == DType::kF16 || w.dtype() == DType::kBF16) &&
      in % kVec == 0 && IsAligned(w.raw_data(), 16) &&
      IsAligned(x.raw_data(), 16);
  GemvPlan plan;
  switch (options.path) {
    case GemvPath::kAuto:
      plan.path = !fast_ok                       ? GemvPath::kScalar
                  : batch >= kTensorCoreMinBatch ? GemvPath::kTensorCore
                                                 : GemvPath::kCudaCore;
      break;
    case GemvPath::kScalar:
      plan.path = GemvPath::kScalar;
      break;
    case GemvPath::kCudaCore:
    case GemvPath::kTensorCore:
      if (!fast_ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Gemv path ", GemvPathName(options.path),
            " needs f16/bf16 weights, in % 8 == 0 and 16-byte aligned x and "
            "w; got x ",
            x.DebugString(), ", w ", w.DebugString()));
      }
      plan.path = options.path;
      break;
  }
  if (options.k_splits < 0) {
    return absl::InvalidArgumentError("k_splits must be >= 0");
  }
  if ((options.norm.has_value() || options.gated_pairs) &&
      (batch != 1 || plan.path != GemvPath::kCudaCore)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a fused norm or gated pairs need one row on the CUDA-core path ",
        "(f16/bf16 weights, aligned, in % 8 == 0); got x ", x.DebugString(),
        ", w ", w.DebugString(), ", path ", GemvPathName(plan.path)));
  }
  if (options.gated_pairs &&
      (out % 2 != 0 || !options.activation.has_value() ||
       options.activation_from_row != out / 2 || options.accumulate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gated pairs need [w_up; w_gate] (even rows, got ", out,
                     "), an activation from row out / 2 and no accumulate"));
  }
  const KernelFn kernel =
      LaunchedKernel(ctx, w.dtype(), batch, plan.path, options.norm.has_value(),
                     options.gated_pairs, gate);
  if (kernel == nullptr) {
    return absl::InternalError("no GEMV kernel for this dtype and batch");
  }
  const int threads = ThreadsFor(plan.path);
  absl::StatusOr<int> blocks_per_sm = BlocksPerSm(ctx, kernel, threads);
  if (!blocks_per_sm.ok()) return blocks_per_sm.status();
  const int64_t resident_blocks =
      int64_t{std::max(1, *blocks_per_sm)} * ctx.sm_count();
  plan.resident_warps = static_cast<int>(resident_blocks * (threads / 32));
  plan.chunks_per_split = chunks;

  if (plan.path == GemvPath::kScalar) {
    plan.grid_blocks = CeilDiv(out, kWarps);
    return plan;
  }

  if (plan.path == GemvPath::kTensorCore) {
    plan.rows_per_warp = kMmaRows;
    plan.warps_per_row = kMmaWarps;
    plan.grid_blocks = CeilDiv(out, kMmaRows);
    const int64_t split_units = CeilDiv(chunks, kMmaSplitChunks);
    int64_t splits = options.k_splits;
    if (splits == 0) {
      splits = 1;
      if (plan.grid_blocks < ctx.sm_count()) {
        // Fewer row groups than SMs: split K across blocks until there are
        // about two blocks per SM, keeping >= 2 units per warp per split.
        splits = std::min(CeilDiv(2 * ctx.sm_count(), plan.grid_blocks),
                          std::max<int64_t>(1, split_units / 2));
      } else if (2 * plan.grid_blocks <= resident_blocks &&
                 static_cast<double>(out) * in * DTypeSize(w.dtype()) >= 64e6) {
        // The GPU could hold twice the blocks and the weights are large
        // enough (>= 64 MB, ~15 us) to amortise the reduce launch: two
        // splits double the warps in flight (4096x11008: 37.6 -> 30.3 us).
        splits = 2;
      }
    }
    splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, split_units));
    const int64_t units_per_split = CeilDiv(split_units, splits);
    plan.chunks_per_split =
        std::max<int64_t>(1, units_per_split) * kMmaSplitChunks;
    plan.k_splits = static_cast<int>(
        std::max<int64_t>(1, CeilDiv(chunks, plan.chunks_per_split)));
    return plan;
  }

  // CUDA-core path.
  plan.rows_per_warp = RowsPerWarp(batch);
  const int unroll = UnrollFor(batch);
  const int64_t groups = CeilDiv(out, plan.rows_per_warp);
  const int64_t k_steps = CeilDiv(chunks, 32);  // 32-lane steps along K.
  if (options.warps_per_row != 0) {
    const int f = options.warps_per_row;
    if (f != 1 && f != 2 && f != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("warps_per_row must be 1, 2 or 4, got ", f));
    }
    plan.warps_per_row = f;
  } else {
    // Measured on an H200: splitting K over more warps (more, shorter
    // blocks) wins as long as each warp keeps a full unrolled step.
    int f = 1;
    while (f < kWarps && k_steps >= int64_t{2} * f * unroll) f *= 2;
    plan.warps_per_row = f;
  }
  const int64_t warps = groups * plan.warps_per_row;
  // A fused norm needs every row group to see all of K (its statistics).
  // Gated pairs: both rows of a neuron must end in the same block.
  int64_t splits =
      options.norm.has_value() || options.gated_pairs ? 1 : options.k_splits;
  if (splits == 0) {
    splits = 1;
    if (2 * warps < plan.resident_warps) {
      // Too few rows even with 4 warps a row: split K across blocks, keeping
      // at least one unrolled step per warp per split.
      const int64_t by_fill = CeilDiv(plan.resident_warps, warps);
      const int64_t by_k = std::max<int64_t>(
          1, k_steps / (int64_t{plan.warps_per_row} * unroll));
      splits = std::clamp<int64_t>(std::min(by_fill, by_k), 1, 64);
    }
  }
  splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, k_steps));
  // Splits start on 32-chunk (512-byte) boundaries.
  const int64_t steps_per_split = CeilDiv(k_steps, splits);
  plan.chunks_per_split = std::max<int64_t>(1, steps_per_split) * 32;
  plan.k_splits = static_cast<int>(
      std::max<int64_t>(1, CeilDiv(chunks, plan.chunks_per_split)));
  plan.grid_blocks = CeilDiv(groups, kWarps / plan.warps_per_row);
  return plan;
}

}  // namespace

absl::StatusOr<GemvPlan> PlanGemv(const DeviceContext& ctx, const Tensor& x,
                                  const Tensor& w, const GemvOptions& options) {
  return PlanLaunch(ctx, x, w, options, nullptr);
}

namespace {

absl::Status CheckOutputs(const Tensor& x, const Tensor& w, const Tensor& bias,
                          const Tensor& y) {
  RETURN_IF_ERROR(CheckOnDevice(y, "Gemv y"));
  const int64_t batch = x.dim(0);
  const int64_t out = w.dim(0);
  if (y.dtype() != DType::kF32 || y.rank() != 2 || y.dim(0) != batch ||
      y.dim(1) != out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gemv y must be f32 [", batch, ",", out, "], got ", y.DebugString()));
  }
  if (!bias.empty()) {
    RETURN_IF_ERROR(CheckOnDevice(bias, "Gemv bias"));
    if (!IsFloating(bias.dtype()) || bias.numel() != out) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gemv bias must be a floating [", out, "] tensor, got ",
                       bias.DebugString()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNorm(const GemvNorm& norm, const Tensor& w) {
  const int64_t out = w.dim(0), in = w.dim(1);
  RETURN_IF_ERROR(CheckOnDevice(norm.weight, "Gemv norm weight"));
  if (norm.weight.dtype() != w.dtype() || norm.weight.numel() != in ||
      !IsAligned(norm.weight.raw_data(), 16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gemv norm weight must be an aligned [", in, "] tensor of w's dtype, ",
        "got ", norm.weight.DebugString()));
  }
  if (!norm.row_sums.empty()) {
    RETURN_IF_ERROR(CheckOnDevice(norm.row_sums, "Gemv norm row sums"));
    if (norm.row_sums.dtype() != DType::kF32 || norm.row_sums.numel() != out) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gemv norm row sums must be f32 [", out, "], got ",
                       norm.row_sums.DebugString()));
    }
  }
  return absl::OkStatus();
}

// Queues `kernel` (and the split-K reduce) for a validated plan.
absl::Status LaunchPlan(DeviceContext& ctx, const GemvPlan& plan,
                        KernelFn kernel, const Tensor& x, const Tensor& w,
                        const Tensor& bias, const float* gate,
                        const GemvOptions& options, Tensor* y) {
  const int64_t batch = x.dim(0);
  const int64_t out = w.dim(0);
  if (out == 0) return absl::OkStatus();
  if (plan.grid_blocks > 0x7fffffff || plan.k_splits > 65535) {
    return absl::InvalidArgumentError("Gemv grid too large");
  }

  GemvArgs args;
  args.w = w.raw_data();
  args.x = x.data<float>();
  args.bias = bias.empty() ? nullptr : bias.raw_data();
  args.bias_kind = bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype());
  args.y = y->data<float>();
  args.partial = nullptr;
  args.gate = gate;
  args.act = options.activation.has_value()
                 ? static_cast<int>(*options.activation)
                 : -1;
  args.act_from_row = options.activation_from_row;
  args.norm_weight =
      options.norm.has_value() ? options.norm->weight.raw_data() : nullptr;
  args.norm_row_sums =
      options.norm.has_value() && !options.norm->row_sums.empty()
          ? options.norm->row_sums.data<float>()
          : nullptr;
  args.norm_eps =
      options.norm.has_value() ? static_cast<float>(options.norm->eps) : 0.0f;
  args.layer_norm = args.norm_row_sums != nullptr;
  args.accumulate = options.accumulate;
  args.early_loads = ctx.gemv_early_loads();
  args.batch = static_cast<int>(batch);
  args.out = out;
  args.in = w.dim(1);
  args.warps_per_row = plan.warps_per_row;
  args.chunks_per_split = plan.chunks_per_split;
  if (plan.k_splits > 1) {
    ASSIGN_OR_RETURN(void* workspace,
                     ctx.Workspace(static_cast<size_t>(plan.k_splits) * batch *
                                   out * sizeof(float)));
    args.partial = static_cast<float*>(workspace);
  }

  RETURN_IF_ERROR(ctx.Activate());
  const dim3 grid(static_cast<unsigned>(plan.grid_blocks),
                  static_cast<unsigned>(plan.k_splits));
  LaunchKernel(ctx.programmatic_launch(), kernel, grid,
               dim3(ThreadsFor(plan.path)), 0, ctx.stream(), args);
  RETURN_IF_ERROR(LastLaunchStatus(GemvPathName(plan.path)));
  if (plan.k_splits > 1) {
    const int64_t total = batch * out;
    const int blocks = static_cast<int>(
        std::min<int64_t>(CeilDiv(total, kThreads), 4 * ctx.sm_count()));
    LaunchKernel(ctx.programmatic_launch(), GemvSplitReduceKernel, dim3(blocks),
                 dim3(kThreads), 0, ctx.stream(), args, static_cast<int>(batch),
                 plan.k_splits);
    RETURN_IF_ERROR(LastLaunchStatus("GemvSplitReduceKernel"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Gemv(DeviceContext& ctx, const Tensor& x, const Tensor& w,
                  const Tensor& bias, Tensor* y, const GemvOptions& options) {
  ASSIGN_OR_RETURN(const GemvPlan plan, PlanGemv(ctx, x, w, options));
  if (options.gated_pairs) {
    // y holds the products: [1, out / 2].
    if (y->dtype() != DType::kF32 || y->rank() != 2 || y->dim(0) != 1 ||
        y->dim(1) * 2 != w.dim(0) ||
        (!bias.empty() && bias.numel() != w.dim(0))) {
      return absl::InvalidArgumentError(
          absl::StrCat("gated pairs: y must be f32 [1, ", w.dim(0) / 2,
                       "] and bias empty or [", w.dim(0), "], got y ",
                       y->DebugString(), ", bias ", bias.DebugString()));
    }
    RETURN_IF_ERROR(CheckOnDevice(*y, "Gemv y"));
  } else {
    RETURN_IF_ERROR(CheckOutputs(x, w, bias, *y));
  }
  if (options.norm.has_value()) RETURN_IF_ERROR(CheckNorm(*options.norm, w));
  const KernelFn kernel =
      LaunchedKernel(ctx, w.dtype(), x.dim(0), plan.path,
                     options.norm.has_value(), options.gated_pairs, nullptr);
  return LaunchPlan(ctx, plan, kernel, x, w, bias, nullptr, options, y);
}

bool GatedGemvSupported(const Tensor& gate, const Tensor& x, const Tensor& w) {
  return x.rank() == 2 && x.dim(0) == 1 && x.dtype() == DType::kF32 &&
         w.rank() == 2 && w.dim(1) == x.dim(1) && x.dim(1) % kVec == 0 &&
         (w.dtype() == DType::kF16 || w.dtype() == DType::kBF16) &&
         gate.dtype() == DType::kF32 && gate.numel() == x.numel() &&
         IsAligned(x.raw_data(), 16) && IsAligned(w.raw_data(), 16) &&
         IsAligned(gate.raw_data(), 16);
}

absl::Status GatedGemv(DeviceContext& ctx, std::optional<Activation> activation,
                       const Tensor& gate, const Tensor& x, const Tensor& w,
                       const Tensor& bias, Tensor* y, bool accumulate) {
  RETURN_IF_ERROR(CheckOnDevice(gate, "GatedGemv gate"));
  RETURN_IF_ERROR(CheckOnDevice(x, "GatedGemv x"));
  RETURN_IF_ERROR(CheckOnDevice(w, "GatedGemv w"));
  if (!GatedGemvSupported(gate, x, w)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GatedGemv needs one f32 row of x, a 16-byte aligned f32 gate of x's "
        "size and aligned f16/bf16 weights, got gate ",
        gate.DebugString(), ", x ", x.DebugString(), ", w ", w.DebugString()));
  }
  GemvOptions options;
  options.path = GemvPath::kCudaCore;
  options.accumulate = accumulate;
  const KernelFn kernel = LaunchedKernel(ctx, w.dtype(), 1, GemvPath::kCudaCore,
                                         false, false, &activation);
  if (kernel == nullptr) {
    return absl::InvalidArgumentError("GatedGemv: unknown activation");
  }
  ASSIGN_OR_RETURN(const GemvPlan plan,
                   PlanLaunch(ctx, x, w, options, &activation));
  RETURN_IF_ERROR(CheckOutputs(x, w, bias, *y));
  return LaunchPlan(ctx, plan, kernel, x, w, bias, gate.data<float>(), options,
                    y);
}

}  // namespace dynsparse::cuda

namespace dynsparse::cuda {

absl::StatusOr<LayerNormFold> FoldLayerNorm(DeviceContext& ctx, const Tensor& w,
                                            const Tensor& gamma,
                                            const Tensor& beta,
                                            const Tensor& b) {
  const int64_t out = w.dim(0), in = w.dim(1);
  // gamma and beta as f32 rows, the GEMV's x.
  auto as_row = [&](const Tensor& v) -> absl::StatusOr<Tensor> {
    Tensor host = Tensor::Zeros(DType::kF32, {1, in});
    if (!v.empty()) {
      ASSIGN_OR_RETURN(Tensor h, ToHost(ctx, v));
      host = h.ConvertTo(DType::kF32).Reshape({1, in});
    }
    return ToDevice(ctx, host);
  };
  ASSIGN_OR_RETURN(const Tensor g, as_row(gamma));
  ASSIGN_OR_RETURN(const Tensor be, as_row(beta));
  ASSIGN_OR_RETURN(Tensor row_sums, AllocateDevice(ctx, DType::kF32, {1, out}));
  ASSIGN_OR_RETURN(Tensor bias, AllocateDevice(ctx, DType::kF32, {1, out}));
  RETURN_IF_ERROR(Gemv(ctx, g, w, Tensor(), &row_sums));
  RETURN_IF_ERROR(Gemv(ctx, be, w, b, &bias));
  RETURN_IF_ERROR(ctx.Synchronize());  // g and be go out of scope.
  return LayerNormFold{row_sums.Reshape({out}), bias.Reshape({out})};
}

}  // namespace dynsparse::cuda
