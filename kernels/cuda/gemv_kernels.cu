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
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "kernels/cuda/act.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv_kernels.cuh"

namespace dynsparse::cuda::gemv_internal {
namespace {

// 16 bytes through the read-only path without allocating in L1.
__device__ __forceinline__ uint4 LoadStreaming(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// The same load with an L2 eviction policy (EvictFirstPolicy()): a decode
// step streams every weight through L2 once, so they can be the first lines
// to leave, and the K/V, activations and code the next kernels read stay.
__device__ __forceinline__ uint4 LoadStreaming(const uint4* p,
                                               uint64_t policy) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 "
      "{%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(policy));
  return v;
}

__device__ __forceinline__ uint64_t EvictFirstPolicy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
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

// Where y[b, row] lives: in its segment's own [batch, rows] matrix
// (GemvOptions::segment_ends); with no segments, y + b * out + row.
__device__ __forceinline__ float* YAt(const GemvArgs& a, int b, int64_t row) {
  const int64_t begin = row < a.segment_end0   ? 0
                        : row < a.segment_end1 ? a.segment_end0
                                               : a.segment_end1;
  const int64_t end = row < a.segment_end0   ? a.segment_end0
                      : row < a.segment_end1 ? a.segment_end1
                                             : a.out;
  return a.y + a.batch * begin + b * (end - begin) + (row - begin);
}

// Asks L2 for what the store of `row` (batch b) reads besides its sum: the
// bias, LayerNorm's row sum and an accumulating store's old y. By the time
// a block stores, the weight stream has pushed those lines out of L2, so
// its epilogue would wait on HBM after its reduction; a prefetch issued
// before the block's weight loads returns no data (no register held
// through the loop) and needs no PDL ordering (L2 is the point of
// coherence: a later write of y by the previous kernel lands there).
// `old_y`: the store may accumulate (a pair's product never does).
__device__ __forceinline__ void PrefetchStoreInputs(const GemvArgs& a, int b,
                                                    int64_t row, bool old_y) {
  auto prefetch = [](const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
  };
  if (a.bias != nullptr && a.bias_kind != FloatKind::kNone) {
    const int bytes = a.bias_kind == FloatKind::kF32 ? 4 : 2;
    prefetch(static_cast<const char*>(a.bias) + row * bytes);
  }
  if (a.norm_weight != nullptr && a.norm_row_sums != nullptr) {
    prefetch(a.norm_row_sums + row);
  }
  if (old_y && a.accumulate) prefetch(YAt(a, b, row));
}

// Writes one finished dot product: to y (+ bias) or, when K is split across
// blocks, to this split's slice of the partials.
__device__ __forceinline__ void StoreResult(const GemvArgs& a, int batch, int b,
                                            int64_t row, float sum,
                                            XStats stats = {}) {
  if (gridDim.y == 1) {
    float* y = YAt(a, b, row);
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
// blocks an SM (OccupancyBound). kEvictFirst: the weight loads carry an L2
// evict_first policy (DeviceContext::gemv_weights_evict_first).
template <typename T, int B, typename XIn = PlainInput, bool kPairs = false,
          int kMinBlocks = 1, bool kEvictFirst = false>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    GemvVectorKernel(const GemvArgs a) {
  // PdlWait comes after the first step's weight loads: weights are never
  // written during a forward step, so with programmatic dependent launch
  // those loads overlap the tail of the previous kernel (a norm, attention)
  // instead of starting only once it has finished.
  bool waited =
      a.early_loads_every == 0 || blockIdx.x % a.early_loads_every != 0;
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
  // The thread that stores a value at the end (the epilogue below: lane i
  // of a one-warp row group stores its value i, else thread t the block's
  // value t; a pair is stored by one thread) prefetches what that store
  // reads.
  if (a.prefetch_store_inputs && gridDim.y == 1) {
    constexpr int kValues = kPairs ? 1 : R * B;  // A row group's stores.
    const int t = wpr == 1 ? lane : threadIdx.x;
    if (t < (wpr == 1 ? 1 : groups_per_block) * kValues) {
      const int64_t group =
          wpr == 1 ? group_id
                   : static_cast<int64_t>(blockIdx.x) * groups_per_block +
                         t / kValues;
      const int i = t % kValues;
      const int64_t row = kPairs ? group : group * R + i / B;
      if (row < live_rows) {
        PrefetchStoreInputs(a, i % B, row, !kPairs);
        if constexpr (kPairs) {
          PrefetchStoreInputs(a, 0, live_rows + row, false);
        }
      }
    }
  }
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
    [[maybe_unused]] uint64_t policy = 0;
    if constexpr (kEvictFirst) policy = EvictFirstPolicy();
    for (int64_t c0 = chunk_begin + wk * 32 + lane; c0 < chunk_end;
         c0 += step * U) {
      // All weight loads of this step first: kRows x kUnroll in flight.
      uint4 wv[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t c = c0 + u * step;
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (c >= chunk_end) {
            wv[u][r] = make_uint4(0u, 0u, 0u, 0u);
          } else if constexpr (kEvictFirst) {
            wv[u][r] = LoadStreaming(w_rows[r] + c, policy);
          } else {
            wv[u][r] = LoadStreaming(w_rows[r] + c);
          }
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

// x, read after the PDL wait. __ldg (ld.global.nc) promises that x does not
// change while the kernel runs, and with the deep build's weight loads ahead
// of the wait ptxas used that promise to hoist x's loads above
// griddepcontrol.wait (run 175's wrong results; its SASS; now checked by
// tools/sass_check/pdl_load_order.py), so the deep build reads x with
// coherent loads.
template <bool kCoherent>
__device__ __forceinline__ float4 LoadMmaX(const float4* p) {
  if constexpr (kCoherent) return __ldca(p);
  return __ldg(p);
}

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
// kDeep: a grid that fits the GPU in one wave (o-projection, down: 256
// blocks, ~2 an SM) gains nothing from occupancy, so each warp issues
// kMmaDeepU units at once instead (twice the bytes in flight, half the
// round trips) and, with a.early_loads_every, its first units before the PDL
// wait, as the CUDA-core kernel does. Same units in the same order, so the
// same bits; it reads x through LoadMmaX's coherent loads.
template <typename T, int B, bool kDeep = false>
__global__ void __launch_bounds__(kMmaThreads) GemvMmaKernel(const GemvArgs a) {
  constexpr int kU = kDeep ? kMmaDeepU : kMmaU;
  bool waited = !(kDeep && a.early_loads_every != 0);
  if (waited) PdlWait();
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
       u0 += kStep * kU) {
    uint4 wv[kU][kMmaV][2];
#pragma unroll
    for (int uu = 0; uu < kU; ++uu) {
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
    if (!waited) {
      PdlWait();
      waited = true;
    }
#pragma unroll
    for (int uu = 0; uu < kU; ++uu) {
#pragma unroll
      for (int v = 0; v < kMmaV; ++v) {
        const int64_t chunk = u0 + uu * kStep + t * kMmaV + v;
        float xs[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        if (has_x && chunk < chunk_end) {
          const float4 p = LoadMmaX<kDeep>(x4 + 2 * chunk);
          const float4 q = LoadMmaX<kDeep>(x4 + 2 * chunk + 1);
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

  if (!waited) PdlWait();  // A warp with no units in this split.
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
      float* y = YAt(a, b, row);
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
    float* y = YAt(a, static_cast<int>(i / a.out), row);
    *y = a.accumulate ? *y + Finish(a, row, sum) : Finish(a, row, sum);
  }
}

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

// The one-row kernel reading x through XIn, with or without OccupancyBound
// (and, bounded, with or without evict_first weight loads).
template <typename T, typename XIn, bool kPairs = false>
KernelFn OneRowKernel(OneRowBuild build) {
  constexpr int kBound = OccupancyBound<XIn>();
  if (!build.bounded) return GemvVectorKernel<T, 1, XIn, kPairs>;
  return build.evict_first ? GemvVectorKernel<T, 1, XIn, kPairs, kBound, true>
                           : GemvVectorKernel<T, 1, XIn, kPairs, kBound>;
}

// The one-row CUDA-core kernel with a fused norm and/or gated pairs.
template <typename T>
KernelFn VectorVariant(bool norm, bool pairs, OneRowBuild one_row) {
  if (norm) {
    return pairs ? OneRowKernel<T, NormInput<T>, true>(one_row)
                 : OneRowKernel<T, NormInput<T>>(one_row);
  }
  return pairs ? OneRowKernel<T, PlainInput, true>(one_row)
               : OneRowKernel<T, PlainInput>(one_row);
}

// The gated down projection: x * gate (ProductInput, bounded like the
// others), or x * act(gate) computed in the load (GatedInput, off the default
// route: at 7 blocks an SM two of them spill, so they keep ptxas's counts).
template <typename T>
KernelFn GatedKernelFor(std::optional<Activation> activation,
                        OneRowBuild one_row) {
  if (!activation.has_value()) return OneRowKernel<T, ProductInput>(one_row);
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

// make(std::integral_constant<int, B>()) for B = batch in 1..kGemvMaxBatch,
// null outside: the kernel instantiated for that batch.
template <typename Make, int... kIndex>
KernelFn ForBatch(int64_t batch, Make make,
                  std::integer_sequence<int, kIndex...>) {
  const KernelFn kernels[] = {
      make(std::integral_constant<int, kIndex + 1>())...};
  return batch >= 1 && batch <= static_cast<int64_t>(sizeof...(kIndex))
             ? kernels[batch - 1]
             : nullptr;
}
template <typename Make>
KernelFn ForBatch(int64_t batch, Make make) {
  return ForBatch(batch, make,
                  std::make_integer_sequence<int, kGemvMaxBatch>());
}

template <typename T>
KernelFn VectorKernelFor(int64_t batch, OneRowBuild one_row) {
  return ForBatch(batch, [one_row](auto b) -> KernelFn {
    if constexpr (decltype(b)::value == 1) {
      return OneRowKernel<T, PlainInput>(one_row);
    } else {
      return GemvVectorKernel<T, decltype(b)::value>;
    }
  });
}

template <typename T>
KernelFn ScalarKernelFor(int64_t batch) {
  return ForBatch(batch, [](auto b) -> KernelFn {
    return GemvScalarKernel<T, decltype(b)::value>;
  });
}

template <typename T>
KernelFn MmaKernelFor(int64_t batch, bool deep) {
  return ForBatch(batch, [deep](auto b) -> KernelFn {
    return deep ? GemvMmaKernel<T, decltype(b)::value, true>
                : GemvMmaKernel<T, decltype(b)::value>;
  });
}

template <typename T>
KernelFn KernelFor(GemvPath path, int64_t batch, OneRowBuild one_row,
                   bool deep) {
  switch (path) {
    case GemvPath::kCudaCore:
      return VectorKernelFor<T>(batch, one_row);
    case GemvPath::kTensorCore:
      return MmaKernelFor<T>(batch, deep);
    case GemvPath::kScalar:
      return ScalarKernelFor<T>(batch);
    case GemvPath::kAuto:
      break;
  }
  return nullptr;
}

// The kernel a plain GEMV (no fused norm, pairs or gate) runs.
KernelFn SelectKernel(DType dtype, int64_t batch, GemvPath path,
                      OneRowBuild one_row, bool deep) {
  switch (dtype) {
    case DType::kBF16:
      return KernelFor<__nv_bfloat16>(path, batch, one_row, deep);
    case DType::kF16:
      return KernelFor<__half>(path, batch, one_row, deep);
    case DType::kF32:
      return path == GemvPath::kScalar ? ScalarKernelFor<float>(batch)
                                       : nullptr;
    case DType::kI32:
      break;
  }
  return nullptr;
}

}  // namespace

KernelFn LaunchedKernel(DType dtype, int64_t batch, GemvPath path, bool norm,
                        bool pairs, const std::optional<Activation>* gate,
                        OneRowBuild one_row, bool deep_mma) {
  if (gate != nullptr) {
    return dtype == DType::kF16 ? GatedKernelFor<__half>(*gate, one_row)
                                : GatedKernelFor<__nv_bfloat16>(*gate, one_row);
  }
  if (!norm && !pairs) {
    return SelectKernel(dtype, batch, path, one_row, deep_mma);
  }
  return dtype == DType::kF16
             ? VectorVariant<__half>(norm, pairs, one_row)
             : VectorVariant<__nv_bfloat16>(norm, pairs, one_row);
}

absl::Status LaunchSplitReduce(DeviceContext& ctx, const GemvArgs& args,
                               int64_t batch, int k_splits) {
  const int64_t total = batch * args.out;
  const int blocks = static_cast<int>(
      std::min<int64_t>(CeilDiv(total, kThreads), 4 * ctx.sm_count()));
  LaunchKernel(ctx.programmatic_launch(), GemvSplitReduceKernel, dim3(blocks),
               dim3(kThreads), 0, ctx.stream(), args, static_cast<int>(batch),
               k_splits);
  return LastLaunchStatus("GemvSplitReduceKernel");
}

}  // namespace dynsparse::cuda::gemv_internal
