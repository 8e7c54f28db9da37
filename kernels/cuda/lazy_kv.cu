// Lazy K/V completion for skipped heads (sparse_ops.h, METHODS.md §1.8).
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/kv_access.cuh"
#include "kernels/cuda/lazy_kv.cuh"
#include "kernels/cuda/sparse_loads.cuh"
#include "kernels/cuda/sparse_ops.h"

namespace dynsparse::cuda {
namespace {

// ---- Lazy K/V -------------------------------------------------------------

constexpr int kLazyWarps = 8;  // Per block.

// Rows per warp (2, or 4 when fixed: LaunchLazyKvCudaCores) and tokens per
// pass (1, 2 or 4)
// set the loop steps whose weight loads a warp issues before it uses any (8
// loads of 16 bytes per lane in flight, 4 in 4-token passes, which hold more
// activations) and the blocks an SM must hold (registers).
template <int kRows, int NP>
constexpr int LazyUnroll() {
  return (NP == 4 ? 4 : 8) / kRows;
}
template <int kRows>
constexpr int LazyMinBlocks() {
  return kRows == 2 ? 4 : 3;
}

// Offset of a warp's weight row t from its row 0: t rows on, or with kPaired
// (f16 caches, LazyKvComputeKernel) the first kRows / 2 rows adjacent and
// the others pair_off further.
template <int kRows, bool kPaired>
__device__ __forceinline__ int64_t RowOffset(int t, int64_t hidden,
                                             int64_t pair_off) {
  if constexpr (kPaired) {
    return (t % (kRows / 2)) * hidden + (t / (kRows / 2)) * pair_off;
  } else {
    return t * hidden;
  }
}

// acc[t][p] += w[t] . xs[p] over the hidden size, for a warp's kRows weight
// rows from w0 (RowOffset). One pointer and no bounds test in the unrolled
// loop: the kernel was issue-bound (results/bench/h200_run14_kernels: ~15
// cycles between a warp's instructions), and per-row pointers with in-loop
// tests cost more instructions than the loads and FMAs themselves.
template <typename T, int kRows, int NP, bool kPaired>
__device__ __forceinline__ void LazyRowsDot(const T* __restrict__ w0,
                                            int64_t hidden, int64_t pair_off,
                                            const float* const (&xs)[NP],
                                            float (&acc)[kRows][NP]) {
  constexpr int kStep = 256;  // 32 lanes x 8 elements
  constexpr int kUnroll = LazyUnroll<kRows, NP>();
  const int64_t whole = hidden - hidden % (kStep * kUnroll);
  int64_t i = (threadIdx.x & 31) * 8;
  // Each row's weights are converted once and used for every token.
  const auto step = [&](const Raw8<T>(&raw)[kRows], int64_t at) {
    float wv[kRows][8];
#pragma unroll
    for (int t = 0; t < kRows; ++t) Convert8(raw[t], wv[t]);
#pragma unroll
    for (int p = 0; p < NP; ++p) {
      float xv[8];
      LoadX8(xs[p] + at, xv);
#pragma unroll
      for (int t = 0; t < kRows; ++t) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[t][p] = fmaf(wv[t][e], xv[e], acc[t][p]);
      }
    }
  };
  for (; i < whole; i += kStep * kUnroll) {
    Raw8<T> raw[kUnroll][kRows];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int t = 0; t < kRows; ++t) {
        LoadRaw8(
            w0 + RowOffset<kRows, kPaired>(t, hidden, pair_off) + i + u * kStep,
            raw[u][t]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) step(raw[u], i + u * kStep);
  }
  for (; i < hidden; i += kStep) {
    Raw8<T> raw[kRows];
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      LoadRaw8(w0 + RowOffset<kRows, kPaired>(t, hidden, pair_off) + i, raw[t]);
    }
    step(raw, i);
  }
}

// The element-wise fallback (unaligned or tiny test shapes): any rows.
template <typename T, int kRows, int NP>
__device__ __forceinline__ void LazyRowsDotScalar(const T* const (&wr)[kRows],
                                                  int64_t hidden,
                                                  const float* const (&xs)[NP],
                                                  float (&acc)[kRows][NP]) {
  for (int64_t i = threadIdx.x & 31; i < hidden; i += 32) {
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      const float w = ToFloat(wr[t][i]);
#pragma unroll
      for (int p = 0; p < NP; ++p) acc[t][p] = fmaf(w, xs[p][i], acc[t][p]);
    }
  }
}

// A warp's rows: where they are and which cache they go to.
template <typename T, int R>
struct LazyRows {
  static constexpr int kRows = R;
  const T* w[kRows];
  int64_t row[kRows];  // Row of W_K / W_V (and column of the cache).
  bool store[kRows];   // False past the head's 2 x head_dim rows.
  bool is_v[kRows];
  int64_t pair_off;  // RowOffset's, f16 caches only.
};

// One pass: the rows' sums over tokens p0 .. p0 + np - 1 (np <= NP; the
// padding repeats token p0 and is not stored), stored to the caches with the
// bias; an f16 cache's K rows rotated first (LazyKvComputeKernel).
template <typename T, bool kVec, int R, int NP, typename KvT>
__device__ __forceinline__ void LazyPass(const LazyArgs& a,
                                         const LazyRows<T, R>& rows,
                                         const int* slot_list,
                                         const int* pos_list, int p0, int np) {
  const float* xs[NP];
#pragma unroll
  for (int p = 0; p < NP; ++p) {
    const int slot = slot_list[p0 + (p < np ? p : 0)];
    xs[p] = slot < 0 ? a.h : a.ring_x + slot * a.hidden;
  }
  constexpr bool kHalf = std::is_same_v<KvT, __half>;
  float acc[R][NP] = {};
  if constexpr (kVec) {
    LazyRowsDot<T, R, NP, kHalf>(rows.w[0], a.hidden, rows.pair_off, xs, acc);
  } else {
    LazyRowsDotScalar<T, R, NP>(rows.w, a.hidden, xs, acc);
  }
  const int64_t stride = static_cast<int64_t>(a.kv_heads) * a.head_dim;
  if constexpr (!kHalf) {
#pragma unroll
    for (int t = 0; t < R; ++t) {
      if (!rows.store[t]) continue;
      const bool v = rows.is_v[t];
      KvT* cache = static_cast<KvT*>(v ? a.v_cache : a.k_cache);
      const float b = LoadAsFloat(v ? a.bv : a.bk, v ? a.bv_kind : a.bk_kind,
                                  rows.row[t], 0.f);
#pragma unroll
      for (int p = 0; p < NP; ++p) {
        if (p >= np) break;
        const float sum = WarpSum(acc[t][p]);
        if ((threadIdx.x & 31) == 0)
          KvStore(cache + pos_list[p0 + p] * stride + rows.row[t], sum + b);
      }
    }
  } else {
    // Lane t * NP + p stores (row t, token p): after WarpSum every lane
    // holds every sum, so the stores, and the RoPE's sincosf, run once a
    // lane (a copy per row and token on lane 0 spilled). With RoPE, K rows
    // t and t + R / 2 are a pair (LazyKvComputeKernel): row t's lane rotates
    // both as LazyKvCommitKernel rotates an f32 cache's rows.
    static_assert(R * NP <= 32);
    constexpr int kPair = R / 2;
    const int lane = threadIdx.x & 31;
    float x = 0.f, y = 0.f;
    int64_t row_x = 0, row_y = 0;
    bool mine = false, is_v = false;
#pragma unroll
    for (int t = 0; t < R; ++t) {
#pragma unroll
      for (int p = 0; p < NP; ++p) {
        if (p >= np) break;
        const float sum = WarpSum(acc[t][p]);
        if (lane == t * NP + p) {
          x = sum;
          row_x = rows.row[t];
          mine = rows.store[t];
          is_v = rows.is_v[t];
        }
        if (t >= kPair && lane == (t - kPair) * NP + p) {
          y = sum;
          row_y = rows.row[t];
        }
      }
    }
    const bool pair = a.inv_freq != nullptr && !is_v;
    // A pair's second row is stored by the lane of its first.
    if (mine && !(pair && lane >= kPair * NP)) {
      const int pos = pos_list[p0 + lane % NP];
      KvT* out = static_cast<KvT*>(is_v ? a.v_cache : a.k_cache) + pos * stride;
      x += LoadAsFloat(is_v ? a.bv : a.bk, is_v ? a.bv_kind : a.bk_kind, row_x,
                       0.f);
      if (pair) {
        y += LoadAsFloat(a.bk, a.bk_kind, row_y, 0.f);
        const float angle = __fmul_rn(
            static_cast<float>(pos),
            a.inv_freq[row_x - static_cast<int64_t>(blockIdx.x) * a.head_dim]);
        float sn, cs;
        sincosf(angle, &sn, &cs);
        const float2 r = RotatePair(x, y, cs, sn);
        KvStore(out + row_y, r.y);
        x = r.x;
      }
      KvStore(out + row_x, x);
    }
  }
}

// A warp computes kRows K/V rows at once, so each activation it loads feeds
// all of them; a head's tokens go up to 4 at a time (three in four heads owe
// at most one token besides the new one when heads are kept at random; a
// further pass re-reads the rows, mostly from L2, and the head with the most
// owed tokens sets the kernel's length). Each (row, token) sum runs over the
// same elements in the same order whatever the pass.
// The vector path takes head_dim % 4 == 0, so a warp's rows are adjacent
// rows of W_K or of W_V (LazyKvDevice); the scalar path reads each row
// through its own pointer. An f16 cache with RoPE pairs the rows instead: a
// warp's rows t and t + kRows / 2 are dimensions i and i + head_dim / 2 of
// one head's K (or V), which RoPE rotates together, so K is rotated in f32
// and rounded to f16 once.
template <typename T, bool kVec, int kRows, typename KvT>
__global__ void __launch_bounds__(kLazyWarps * 32, LazyMinBlocks<kRows>())
    LazyKvComputeKernel(const LazyArgs a) {
  PdlWait();
  __shared__ int slot_list[kMaxRing + 1], pos_list[kMaxRing + 1], count;
  const int g = blockIdx.x;
  if (threadIdx.x < 32) LazyWork(a, g, slot_list, pos_list, &count);
  __syncthreads();
  const int n = count;
  if (n == 0) return;
  const int warp = threadIdx.x >> 5;
  const int r0 = (blockIdx.y * kLazyWarps + warp) * kRows;
  if (r0 >= 2 * a.head_dim) return;
  constexpr int kPair = kRows / 2;
  constexpr bool kHalf = std::is_same_v<KvT, __half>;
  const bool paired = kHalf && a.inv_freq != nullptr;
  LazyRows<T, kRows> rows;
  if constexpr (kHalf) {
    rows.pair_off = (paired ? a.head_dim / 2 : kPair) * a.hidden;
  }
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    int r = r0 + t;  // Row of [W_K; W_V] in the head.
    rows.store[t] = r < 2 * a.head_dim;
    if (paired) {
      // Pairs [0, half) of K, then [half, head_dim) of V.
      const int half = a.head_dim / 2;
      const int q = r0 / 2 + t % kPair;
      r = q + (t / kPair) * half + (q >= half ? half : 0);
      rows.store[t] = q < a.head_dim;
    }
    rows.is_v[t] = r >= a.head_dim;
    rows.row[t] = static_cast<int64_t>(g) * a.head_dim +
                  (rows.is_v[t] ? r - a.head_dim : r);
    // A row past the end reads row r0's weights (in bounds), not stored.
    rows.w[t] = static_cast<const T*>(rows.is_v[t] ? a.wv : a.wk) +
                (rows.store[t] ? rows.row[t] : rows.row[0]) * a.hidden;
  }
  for (int p0 = 0; p0 < n;) {
    const int left = n - p0;
    if (left >= 3) {
      LazyPass<T, kVec, kRows, 4, KvT>(a, rows, slot_list, pos_list, p0,
                                       min(left, 4));
      p0 += 4;
    } else if (left == 2) {
      LazyPass<T, kVec, kRows, 2, KvT>(a, rows, slot_list, pos_list, p0, 2);
      p0 += 2;
    } else {
      LazyPass<T, kVec, kRows, 1, KvT>(a, rows, slot_list, pos_list, p0, 1);
      p0 += 1;
    }
  }
}

// The f16 kernel leaves out the RoPE: the compute kernel rotated K.
template <typename KvT>
__global__ void LazyKvCommitKernel(const LazyArgs a) {
  PdlWait();
  __shared__ int slot_list[kMaxRing + 1], pos_list[kMaxRing + 1], count;
  __shared__ bool active;
  const int g = blockIdx.x;
  if (threadIdx.x < 32) {
    const bool head_active = LazyWork(a, g, slot_list, pos_list, &count);
    if (threadIdx.x == 0) active = head_active;
  }
  __syncthreads();
  if constexpr (std::is_same_v<KvT, float>) {
    const int n = count, half = a.head_dim / 2;
    const int64_t stride = static_cast<int64_t>(a.kv_heads) * a.head_dim;
    if (a.inv_freq != nullptr) {
      // RoPE of the K rows just written, as RopeWriteKvKernel rotates them.
      for (int idx = threadIdx.x; idx < n * half; idx += blockDim.x) {
        const int p = idx / half, i = idx - p * half;
        const float angle =
            __fmul_rn(static_cast<float>(pos_list[p]), a.inv_freq[i]);
        float sn, cs;
        sincosf(angle, &sn, &cs);
        float* kp = static_cast<float*>(a.k_cache) + pos_list[p] * stride +
                    static_cast<int64_t>(g) * a.head_dim;
        const float2 r = RotatePair(kp[i], kp[i + half], cs, sn);
        kp[i] = r.x;
        kp[i + half] = r.y;
      }
    }
  }
  const int slot = a.step[1];
  if (active) {
    for (int s = threadIdx.x; s < a.slots; s += blockDim.x) {
      a.pending[s * a.kv_heads + g] = 0;
    }
  }
  __syncthreads();
  if (a.h == nullptr) return;
  if (threadIdx.x == 0) a.pending[slot * a.kv_heads + g] = active ? 0 : 1;
  if (g == 0 && threadIdx.x == 0) a.ring_pos[slot] = a.step[0];
  // Block g copies its share of the token's input into the ring.
  const int64_t share = (a.hidden + a.kv_heads - 1) / a.kv_heads;
  const int64_t end = min(a.hidden, (g + 1) * share);
  for (int64_t i = g * share + threadIdx.x; i < end; i += blockDim.x) {
    a.ring_x[slot * a.hidden + i] = a.h[i];
  }
}

// Two rows a warp unless fixed at four. Four fits OPT-66B's 36 active
// heads on the GPU in one wave (ncu: 48 vs 58 us alone); in the decode step
// it was slower with 2-token passes (21.97 vs 21.26 ms, results/bench/
// h200_run19) and faster with 4-token ones (20.04 vs 20.68 ms, run 20), and
// on Llama-2-7B's 16 heads it lengthened each warp's chain of loads (run
// 18). f16 weights take the tensor-core kernel now; this one serves bf16,
// f32 and shapes that kernel does not take.
absl::Status LaunchLazyKvCudaCores(DeviceContext& ctx, const LazyArgs& a,
                                   const DeviceLazyKvArgs& d, bool vec) {
  const bool four = d.rows_per_warp == 4;
  const int rows_per_warp = four ? 4 : 2;
  const dim3 grid(static_cast<unsigned>(d.num_kv_heads),
                  static_cast<unsigned>(CeilDiv(
                      2 * d.head_dim, int64_t{kLazyWarps} * rows_per_warp)));
  return ByWeightType(d.wk->dtype(), [&](auto t) {
    using T = decltype(t);
    DispatchKv(*d.k_cache, [&](auto kv) {
      using KvT = decltype(kv);
      auto kernel = four ? (vec ? LazyKvComputeKernel<T, true, 4, KvT>
                                : LazyKvComputeKernel<T, false, 4, KvT>)
                         : (vec ? LazyKvComputeKernel<T, true, 2, KvT>
                                : LazyKvComputeKernel<T, false, 2, KvT>);
      LaunchKernel(ctx.programmatic_launch(), kernel, grid,
                   dim3(kLazyWarps * 32), 0, ctx.stream(), a);
    });
    return LastLaunchStatus("LazyKvComputeKernel");
  });
}

}  // namespace

absl::Status LazyKvDevice(DeviceContext& ctx, const DeviceLazyKvArgs& d) {
  if (d.slots > kMaxRing || d.num_kv_heads <= 0 ||
      d.num_heads % d.num_kv_heads != 0 ||
      (d.rows_per_warp != 0 && d.rows_per_warp != 2 && d.rows_per_warp != 4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("LazyKv: ", d.slots, " ring slots (max ", kMaxRing,
                     "), heads ", d.num_heads, "/", d.num_kv_heads, ", ",
                     d.rows_per_warp, " rows a warp (0, 2 or 4)"));
  }
  if (d.inv_freq != nullptr && d.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LazyKv: RoPE needs an even head_dim, got ", d.head_dim));
  }
  // An f16 cache is written once a row (the compute kernel rotates K), so it
  // holds the f32 results rounded to nearest, as RopeWriteKv writes the
  // dense path's rows; rotating the stored f16 K would round twice.
  if (d.k_cache == nullptr || d.v_cache == nullptr) {
    return absl::InvalidArgumentError("LazyKv: a KV cache is missing");
  }
  if (absl::Status s = CheckKvPair(*d.k_cache, *d.v_cache, "LazyKv"); !s.ok()) {
    return s;
  }
  for (const Tensor* cache : {d.k_cache, d.v_cache}) {
    if (cache->rank() != 2 || cache->dim(1) != d.num_kv_heads * d.head_dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LazyKv: caches must be [capacity, ", d.num_kv_heads * d.head_dim,
          "], got ", cache->DebugString()));
    }
  }
  LazyArgs a;
  a.h = d.h;
  a.head_ids = d.head_ids;
  a.k = static_cast<int>(d.k);
  a.step = d.step;
  a.ring_x = d.ring_x;
  a.ring_pos = d.ring_pos;
  a.pending = d.pending;
  a.slots = static_cast<int>(d.slots);
  a.wk = d.wk->raw_data();
  a.wv = d.wv->raw_data();
  a.bk = d.bk && !d.bk->empty() ? d.bk->raw_data() : nullptr;
  a.bv = d.bv && !d.bv->empty() ? d.bv->raw_data() : nullptr;
  a.bk_kind = a.bk ? ToFloatKind(d.bk->dtype()) : FloatKind::kNone;
  a.bv_kind = a.bv ? ToFloatKind(d.bv->dtype()) : FloatKind::kNone;
  a.inv_freq = d.inv_freq;
  a.group = static_cast<int>(d.num_heads / d.num_kv_heads);
  a.kv_heads = static_cast<int>(d.num_kv_heads);
  a.head_dim = static_cast<int>(d.head_dim);
  a.hidden = d.hidden;
  a.k_cache = d.k_cache->raw_data();
  a.v_cache = d.v_cache->raw_data();
  a.kv_half = d.k_cache->dtype() == DType::kF16;
  const bool vec = d.head_dim % 4 == 0 && Vec8(*d.wk, d.hidden) &&
                   IsAligned(d.wv->raw_data(), 16) &&
                   (d.h == nullptr || IsAligned(d.h, 16)) &&
                   IsAligned(d.ring_x, 16);
  const bool tensor_cores = d.tensor_cores && d.wk->dtype() == DType::kF16 &&
                            vec && LazyKvMmaTakes(d.head_dim, d.hidden);
  absl::Status status = tensor_cores
                            ? LaunchLazyKvMma(ctx, a, d.mma_blocks_per_sm)
                            : LaunchLazyKvCudaCores(ctx, a, d, vec);
  if (!status.ok()) return status;
  LaunchKernel(
      ctx.programmatic_launch(),
      a.kv_half ? LazyKvCommitKernel<__half> : LazyKvCommitKernel<float>,
      dim3(static_cast<unsigned>(d.num_kv_heads)), dim3(128), 0, ctx.stream(),
      a);
  return LastLaunchStatus("LazyKvCommitKernel");
}

}  // namespace dynsparse::cuda
