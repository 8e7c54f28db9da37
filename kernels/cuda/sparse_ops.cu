// Gather GEMVs of sparse execution (sparse_ops.h; TopK in topk.cu, lazy K/V
// in lazy_kv.cu). Weights are read with
// 16-byte non-allocating loads (8 f16/bf16 or 2 x 4 f32) when rows are
// 16-byte aligned, element by element otherwise (tiny test shapes).
#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/sparse_loads.cuh"
#include "kernels/cuda/sparse_ops.h"

namespace dynsparse::cuda {
namespace {

constexpr int kNoActivation = -1;

template <int A>
__device__ __forceinline__ float MaybeAct(float v) {
  if constexpr (A == kNoActivation) {
    return v;
  } else {
    return Act<static_cast<Activation>(A)>(v);
  }
}

// ---- Gather GEMV (kept rows of W, optional gate) --------------------------

constexpr int kGatherWarps = 4;  // Rows per block: small blocks balance SMs.
// 16-byte weight loads a lane keeps in flight (kLoads: split between up and
// gate rows when gated): 8 for rows of up to kDeepGatherMaxIn weights, else
// 4. With 8, DejaVu decode of OPT-13B/30B and Llama-2-7B went 2-3% faster
// and OPT-66B's (9216-wide rows) 3% slower (results/bench/h200_run41).
constexpr int64_t kDeepGatherMaxIn = 8192;

template <typename T, int A, bool kGated, bool kVec, int kLoads>
__global__ void __launch_bounds__(kGatherWarps * 32)
    GatherGemvKernel(const float* __restrict__ x, int64_t in,
                     const T* __restrict__ w, const void* bias, FloatKind bk,
                     const T* __restrict__ wg, const void* bias_g, FloatKind gk,
                     const int32_t* __restrict__ ids, int k, int uw,
                     int64_t cols, float* __restrict__ y) {
  PdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t c =
      static_cast<int64_t>(blockIdx.x) * kGatherWarps + (threadIdx.x >> 5);
  const int r = blockIdx.y;
  if (c >= cols) return;
  const int64_t row =
      static_cast<int64_t>(ids[static_cast<int64_t>(r) * k + c / uw]) * uw +
      c % uw;
  const T* wr = w + row * in;
  const T* gr = kGated ? wg + row * in : nullptr;
  const float* xr = x + static_cast<int64_t>(r) * in;
  float acc = 0.f, accg = 0.f;
  if constexpr (kVec) {
    // Each lane adds its 8-wide chunks lane, lane + 32, ... in order; the
    // weight loads of a batch of chunks go out before any is used.
    const auto step = [&](const Raw8<T>& rw, const Raw8<T>* rg, int64_t at) {
      float wv[8], xv[8];
      Convert8(rw, wv);
      LoadX8(xr + at, xv);
      float gv[8];
      if constexpr (kGated) Convert8(*rg, gv);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        acc = fmaf(wv[e], xv[e], acc);
        if constexpr (kGated) accg = fmaf(gv[e], xv[e], accg);
      }
    };
    // Every batch issues kU chunks' loads (kLoads uint4 a lane in all), the
    // last one masked past the row's end, so no row size leaves a tail of
    // one-load batches.
    constexpr int kU = kLoads / (kGated ? 2 : 1) / (sizeof(T) == 4 ? 2 : 1);
    for (int64_t i = lane * 8; i < in; i += 256 * kU) {
      Raw8<T> rw[kU], rg[kGated ? kU : 1];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (i + u * 256 < in) {
          LoadRaw8(wr + i + u * 256, rw[u]);
          if constexpr (kGated) LoadRaw8(gr + i + u * 256, rg[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (i + u * 256 >= in) break;
        if constexpr (kGated) {
          step(rw[u], &rg[u], i + u * 256);
        } else {
          step(rw[u], nullptr, i + u * 256);
        }
      }
    }
  } else {
    for (int64_t i = lane; i < in; i += 32) {
      acc = fmaf(ToFloat(wr[i]), xr[i], acc);
      if constexpr (kGated) accg = fmaf(ToFloat(gr[i]), xr[i], accg);
    }
  }
  acc = WarpSum(acc);
  if constexpr (kGated) accg = WarpSum(accg);
  if (lane != 0) return;
  const float v = acc + LoadAsFloat(bias, bk, row, 0.f);
  float out;
  if constexpr (kGated) {
    out = MaybeAct<A>(accg + LoadAsFloat(bias_g, gk, row, 0.f)) * v;
  } else {
    out = MaybeAct<A>(v);
  }
  y[static_cast<int64_t>(r) * cols + c] = out;
}

template <typename T, int A, bool kGated>
absl::Status LaunchGather(DeviceContext& ctx, bool vec, const Tensor& x,
                          const Tensor& w, const Tensor& bias,
                          const Tensor* w_gate, const Tensor* b_gate,
                          const int32_t* ids, int64_t k, int64_t uw,
                          Tensor* y) {
  const int64_t rows = x.dim(0), cols = k * uw;
  const dim3 grid(static_cast<unsigned>(CeilDiv(cols, kGatherWarps)),
                  static_cast<unsigned>(rows));
  auto kernel = !vec ? GatherGemvKernel<T, A, kGated, false, 4>
                : x.dim(1) <= kDeepGatherMaxIn
                    ? GatherGemvKernel<T, A, kGated, true, 8>
                    : GatherGemvKernel<T, A, kGated, true, 4>;
  const T* wg = kGated ? static_cast<const T*>(w_gate->raw_data()) : nullptr;
  const void* bg = kGated && !b_gate->empty() ? b_gate->raw_data() : nullptr;
  const FloatKind gk = bg ? ToFloatKind(b_gate->dtype()) : FloatKind::kNone;
  LaunchKernel(ctx.programmatic_launch(), kernel, grid, dim3(kGatherWarps * 32),
               0, ctx.stream(), x.data<float>(), x.dim(1),
               static_cast<const T*>(w.raw_data()),
               bias.empty() ? nullptr : bias.raw_data(),
               bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype()), wg,
               bg, gk, ids, static_cast<int>(k), static_cast<int>(uw), cols,
               y->data<float>());
  return LastLaunchStatus("GatherGemvKernel");
}

template <typename T, bool kGated>
absl::Status DispatchActivation(DeviceContext& ctx, bool vec, bool activate,
                                Activation act, const Tensor& x,
                                const Tensor& w, const Tensor& bias,
                                const Tensor* w_gate, const Tensor* b_gate,
                                const int32_t* ids, int64_t k, int64_t uw,
                                Tensor* y) {
  if (!activate) {
    return LaunchGather<T, kNoActivation, kGated>(ctx, vec, x, w, bias, w_gate,
                                                  b_gate, ids, k, uw, y);
  }
  switch (act) {
    case Activation::kRelu:
      return LaunchGather<T, static_cast<int>(Activation::kRelu), kGated>(
          ctx, vec, x, w, bias, w_gate, b_gate, ids, k, uw, y);
    case Activation::kSilu:
      return LaunchGather<T, static_cast<int>(Activation::kSilu), kGated>(
          ctx, vec, x, w, bias, w_gate, b_gate, ids, k, uw, y);
    case Activation::kGelu:
      return LaunchGather<T, static_cast<int>(Activation::kGelu), kGated>(
          ctx, vec, x, w, bias, w_gate, b_gate, ids, k, uw, y);
    case Activation::kGeluTanh:
      return LaunchGather<T, static_cast<int>(Activation::kGeluTanh), kGated>(
          ctx, vec, x, w, bias, w_gate, b_gate, ids, k, uw, y);
  }
  return absl::InvalidArgumentError("GatherGemv: unknown activation");
}

// ---- Gather transposed GEMV (kept rows of W^T) ----------------------------

constexpr int kTThreads = 128;  // Column threads, x 8 columns each.
// Rows of x a block serves per weight read when every row takes all units
// (ids null: the down projection of a dense layer whose W2 is transposed,
// in prefill): 8 rows cut the weight traffic 8x.
constexpr int kTSharedRows = 8;
// Decode (one row): kTGroups groups of kTThreads threads split a block's
// kept units and add up in shared memory at the end, so an SM holds 4x the
// loads in flight without 4x the partial sums.
constexpr int kTGroups = 4;
// The block's kept units and their activations are staged in shared memory
// a chunk at a time, so the weight loads do not wait on dependent id loads.
constexpr int kTChunk = 256;

template <int kRows>
constexpr int TGroups() {
  return kRows == 1 ? kTGroups : 1;
}

template <typename T, bool kVec, int kRows>
__global__ void __launch_bounds__(kTThreads* TGroups<kRows>())
    GatherGemvTPartialKernel(const float* __restrict__ x, int rows,
                             const T* __restrict__ wt, int64_t out,
                             const int32_t* __restrict__ ids, int k, int splits,
                             float* __restrict__ partial) {
  PdlWait();
  constexpr int kGroups = TGroups<kRows>();
  constexpr int kCols = kVec ? 8 : 1;
  constexpr int kUnroll = 4;  // Weight loads issued together.
  __shared__ int32_t s_units[kTChunk];
  __shared__ float s_x[kRows][kTChunk];
  __shared__ float s_sum[kGroups > 1 ? kGroups - 1 : 1][kTThreads * kCols];
  const int col = threadIdx.x % kTThreads, group = threadIdx.x / kTThreads;
  const int r0 = blockIdx.z * kRows, s = blockIdx.y;
  const int j0 = static_cast<int>(static_cast<int64_t>(s) * k / splits);
  const int j1 = static_cast<int>(static_cast<int64_t>(s + 1) * k / splits);
  // kRows > 1 only with ids null (every row reads the same units).
  const int32_t* ir = ids ? ids + static_cast<int64_t>(r0) * k : nullptr;
  const float* xr[kRows];
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    xr[t] = x + static_cast<int64_t>(min(r0 + t, rows - 1)) * k;
  }
  const int64_t c0 =
      (static_cast<int64_t>(blockIdx.x) * kTThreads + col) * kCols;
  const bool active = c0 < out;
  float acc[kRows][kCols];
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
#pragma unroll
    for (int e = 0; e < kCols; ++e) acc[t][e] = 0.f;
  }
  for (int base = j0; base < j1; base += kTChunk) {
    const int len = min(kTChunk, j1 - base);
    __syncthreads();  // The previous chunk is consumed.
    for (int q = threadIdx.x; q < len; q += kTThreads * kGroups) {
      s_units[q] = ir ? __ldg(ir + base + q) : base + q;
#pragma unroll
      for (int t = 0; t < kRows; ++t) s_x[t][q] = __ldg(xr[t] + base + q);
    }
    __syncthreads();
    if (!active) continue;
    int q = group;
    if constexpr (kVec) {
      // Batches of kUnroll units: every load issued before the first use.
      for (; q + (kUnroll - 1) * kGroups < len; q += kUnroll * kGroups) {
        Raw8<T> raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          LoadRaw8(
              wt + static_cast<int64_t>(s_units[q + u * kGroups]) * out + c0,
              raw[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          float wv[8];
          Convert8(raw[u], wv);
#pragma unroll
          for (int t = 0; t < kRows; ++t) {
            const float a = s_x[t][q + u * kGroups];
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[t][e] = fmaf(a, wv[e], acc[t][e]);
          }
        }
      }
    }
    for (; q < len; q += kGroups) {
      const T* wrow = wt + static_cast<int64_t>(s_units[q]) * out + c0;
      if constexpr (kVec) {
        float wv[8];
        Load8(wrow, wv);
#pragma unroll
        for (int t = 0; t < kRows; ++t) {
          const float a = s_x[t][q];
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[t][e] = fmaf(a, wv[e], acc[t][e]);
        }
      } else {
        const float w = ToFloat(*wrow);
#pragma unroll
        for (int t = 0; t < kRows; ++t)
          acc[t][0] = fmaf(s_x[t][q], w, acc[t][0]);
      }
    }
  }
  if constexpr (kGroups > 1) {
    // kRows == 1: groups 1.. hand their sums to group 0.
    if (group > 0 && active) {
#pragma unroll
      for (int e = 0; e < kCols; ++e)
        s_sum[group - 1][col * kCols + e] = acc[0][e];
    }
    __syncthreads();
    if (group > 0 || !active) return;
#pragma unroll
    for (int g = 0; g < kGroups - 1; ++g) {
#pragma unroll
      for (int e = 0; e < kCols; ++e) acc[0][e] += s_sum[g][col * kCols + e];
    }
  }
  if (!active) return;
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (r0 + t >= rows) break;
    float* pr = partial + (static_cast<int64_t>(r0 + t) * splits + s) * out;
    if constexpr (kVec) {
      float4* dst = reinterpret_cast<float4*>(pr + c0);
      dst[0] = make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]);
      dst[1] = make_float4(acc[t][4], acc[t][5], acc[t][6], acc[t][7]);
    } else {
      pr[c0] = acc[t][0];
    }
  }
}

// Sums the splits' partials of 32 columns a block: warp w adds splits w,
// w + kReduceWarps, ... of lane's column (coalesced rows of 32 floats), and
// the warps' sums meet in shared memory in warp order, so the result does
// not depend on timing. One thread a column summing all splits in turn took
// 11-12 us on OPT-66B's 58 splits over 9216 columns (36 blocks;
// results/bench/h200_run37 timelines).
constexpr int kReduceWarps = 8;

__global__ void __launch_bounds__(kReduceWarps * 32)
    ReduceSplitsKernel(const float* __restrict__ partial, int splits,
                       int64_t out, int rows, const void* bias, FloatKind bk,
                       float* __restrict__ y) {
  PdlWait();
  __shared__ float sums[kReduceWarps][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + lane;
  // Rows beyond the grid's y extent (65535) come round again.
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    float sum = 0.f;
    if (c < out) {
      const float* p = partial + static_cast<int64_t>(r) * splits * out + c;
      for (int s = warp; s < splits; s += kReduceWarps) sum += p[s * out];
    }
    sums[warp][lane] = sum;
    __syncthreads();
    if (warp == 0 && c < out) {
      float total = sums[0][lane];
#pragma unroll
      for (int w = 1; w < kReduceWarps; ++w) total += sums[w][lane];
      y[static_cast<int64_t>(r) * out + c] =
          total + LoadAsFloat(bias, bk, c, 0.f);
    }
    __syncthreads();  // sums is reused by the next row.
  }
}

int RowsPerBlock(bool shared_ids, int64_t rows) {
  return shared_ids && rows > 1 ? kTSharedRows : 1;
}

// Splits over the kept units so that the grid fills the SMs in one wave of
// 4 blocks per SM (32 registers a thread allow 4 x 512 threads), and no more:
// rounding the splits up left a few blocks for a second wave (OPT-66B's 9
// column blocks x 59 splits = 531 > 528), whose time the step then waited
// for.
int SplitsFor(int sm_count, int64_t rows, int rows_per_block, int64_t k,
              int64_t out) {
  const int64_t col_blocks = CeilDiv(CeilDiv(out, 8), kTThreads);
  const int64_t row_blocks = CeilDiv(rows, rows_per_block);
  const int64_t target = 4 * static_cast<int64_t>(sm_count);
  const int64_t splits = target / (col_blocks * row_blocks);
  return static_cast<int>(
      std::max<int64_t>(1, std::min(splits, std::max<int64_t>(1, k / 4))));
}

// ---- Head-subset output projection (kept column blocks of W) --------------

// Kept columns a block can hold in shared memory (k * uw <= this, e.g. 72
// heads of 128); wider selections take the unstaged loop.
constexpr int kStagedColumns = 16384;
constexpr int kColumnsWarps = 8;  // Per block.
// Output rows per warp (1, 2 or 4; GatherColumnsGemv picks) set the loop
// steps whose weight loads a warp issues before it uses any and the blocks
// an SM must hold (registers). At one row a warp, OPT-66B's 9216 rows made
// 1.75 waves of blocks and left the SMs idle 17% of the time
// (results/bench/h200_run17).
template <int kRows>
constexpr int ColumnsUnroll() {
  return kRows == 1 ? 4 : 2;
}
template <int kRows>
constexpr int ColumnsMinBlocks() {
  return kRows == 4 ? 4 : 5;
}

// Each warp computes kRows output rows, so each activation load feeds all
// of them. The block first turns the row's kept unit ids into column offsets
// in shared memory, so no weight load waits on an id load; each warp then
// issues ColumnsUnroll steps of weight loads at once. Each lane adds its
// 8-wide chunks in ascending order (lane, lane + 32, ...).
template <typename T, bool kVec, int kRows>
__global__ void __launch_bounds__(kColumnsWarps * 32, ColumnsMinBlocks<kRows>())
    GatherColumnsGemvKernel(const float* __restrict__ x,
                            const T* __restrict__ w, int64_t in, int64_t out,
                            const void* bias, FloatKind bk,
                            const int32_t* __restrict__ ids, int k, int uw,
                            float* __restrict__ y) {
  constexpr int R = kRows;
  constexpr int kUnroll = ColumnsUnroll<kRows>();
  __shared__ int columns[kVec ? kStagedColumns / 8 : 1];
  PdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t o0 =
      (static_cast<int64_t>(blockIdx.x) * kColumnsWarps + (threadIdx.x >> 5)) *
      R;
  const int r = blockIdx.y;
  const int64_t width = static_cast<int64_t>(k) * uw;
  const float* xr = x + r * width;
  const int32_t* ir = ids + static_cast<int64_t>(r) * k;
  // Rows past the end read the last row (in bounds) and are not stored.
  const T* wr[R];
#pragma unroll
  for (int t = 0; t < R; ++t) wr[t] = w + min(o0 + t, out - 1) * in;
  float acc[R] = {};
  if constexpr (kVec) {
    // Column of each 8-wide chunk c / 8 (uw % 8 == 0: a chunk stays in one
    // unit).
    const int chunks = static_cast<int>(width / 8);
    for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
      const int j = i * 8 / uw;
      columns[i] = ir[j] * uw + (i * 8 - j * uw);
    }
    __syncthreads();
    if (o0 >= out) return;
    for (int c0 = lane; c0 < chunks; c0 += 32 * kUnroll) {
      Raw8<T> raw[kUnroll][R];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + 32 * u;
        if (c < chunks) {
          const int column = columns[c];
#pragma unroll
          for (int t = 0; t < R; ++t) LoadRaw8(wr[t] + column, raw[u][t]);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + 32 * u;
        if (c >= chunks) break;
        float xv[8];
        LoadX8(xr + 8 * c, xv);
#pragma unroll
        for (int t = 0; t < R; ++t) {
          float wv[8];
          Convert8(raw[u][t], wv);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[t] = fmaf(wv[e], xv[e], acc[t]);
        }
      }
    }
  } else {
    if (o0 >= out) return;
    for (int64_t c = lane; c < width; c += 32) {
      const int64_t j = c / uw;
      const int64_t column = static_cast<int64_t>(ir[j]) * uw + (c - j * uw);
      const float xc = xr[c];
#pragma unroll
      for (int t = 0; t < R; ++t) {
        acc[t] = fmaf(ToFloat(wr[t][column]), xc, acc[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < R; ++t) {
    const float sum = WarpSum(acc[t]);
    if (lane == 0 && o0 + t < out) {
      y[r * out + o0 + t] = sum + LoadAsFloat(bias, bk, o0 + t, 0.f);
    }
  }
}

__global__ void GatherColumnsCopyKernel(const float* x, int64_t width,
                                        const int32_t* ids, int k, int uw,
                                        int rows, float* y) {
  PdlWait();
  const int64_t cols = static_cast<int64_t>(k) * uw;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= cols * rows) return;
  const int64_t r = i / cols, c = i - r * cols, j = c / uw;
  y[i] =
      x[r * width + static_cast<int64_t>(ids[r * k + j]) * uw + (c - j * uw)];
}

template <typename T>
__global__ void TransposeKernel(const T* w, int64_t rows, int64_t cols, T* wt) {
  __shared__ T tile[32][33];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * 32;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = w[r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int64_t c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) wt[c * rows + r] = tile[threadIdx.x][i];
  }
}

}  // namespace

absl::Status GatherGemv(DeviceContext& ctx, const Tensor& x, const Tensor& w,
                        const Tensor& bias, const Tensor* w_gate,
                        const Tensor* b_gate, const int32_t* ids, int64_t k,
                        int64_t unit_width, bool activate,
                        Activation activation, Tensor* y) {
  const bool gated = w_gate != nullptr;
  const bool vec = Vec8(w, x.dim(1)) && IsAligned(x.raw_data(), 16) &&
                   (!gated || IsAligned(w_gate->raw_data(), 16));
  if (gated && w_gate->dtype() != w.dtype()) {
    return absl::InvalidArgumentError("GatherGemv: up and gate dtypes differ");
  }
  return ByWeightType(w.dtype(), [&](auto t) {
    using T = decltype(t);
    return gated ? DispatchActivation<T, true>(ctx, vec, true, activation, x, w,
                                               bias, w_gate, b_gate, ids, k,
                                               unit_width, y)
                 : DispatchActivation<T, false>(ctx, vec, activate, activation,
                                                x, w, bias, nullptr, nullptr,
                                                ids, k, unit_width, y);
  });
}

int64_t GatherGemvTScratchFloats(const DeviceContext& ctx, int64_t rows,
                                 int64_t k, int64_t out, bool shared_ids) {
  return rows *
         SplitsFor(ctx.sm_count(), rows, RowsPerBlock(shared_ids, rows), k,
                   out) *
         out;
}

absl::Status GatherGemvT(DeviceContext& ctx, const Tensor& x, const Tensor& w_t,
                         const Tensor& bias, const int32_t* ids, int64_t k,
                         float* scratch, Tensor* y) {
  const int64_t rows = x.dim(0), out = w_t.dim(1);
  const int rows_per_block = RowsPerBlock(ids == nullptr, rows);
  const int64_t row_blocks = CeilDiv(rows, rows_per_block);
  const int splits = SplitsFor(ctx.sm_count(), rows, rows_per_block, k, out);
  const bool vec = Vec8(w_t, out) && IsAligned(scratch, 16);
  absl::Status status = ByWeightType(w_t.dtype(), [&](auto t) {
    using T = decltype(t);
    const dim3 grid(
        static_cast<unsigned>(CeilDiv(vec ? CeilDiv(out, 8) : out, kTThreads)),
        static_cast<unsigned>(splits), static_cast<unsigned>(row_blocks));
    auto kernel =
        rows_per_block == 1
            ? (vec ? GatherGemvTPartialKernel<T, true, 1>
                   : GatherGemvTPartialKernel<T, false, 1>)
            : (vec ? GatherGemvTPartialKernel<T, true, kTSharedRows>
                   : GatherGemvTPartialKernel<T, false, kTSharedRows>);
    const int threads = kTThreads * (rows_per_block == 1 ? kTGroups : 1);
    LaunchKernel(ctx.programmatic_launch(), kernel, grid, dim3(threads), 0,
                 ctx.stream(), x.data<float>(), static_cast<int>(rows),
                 static_cast<const T*>(w_t.raw_data()), out, ids,
                 static_cast<int>(k), splits, scratch);
    return LastLaunchStatus("GatherGemvTPartialKernel");
  });
  if (!status.ok()) return status;
  return ReduceSplits(ctx, scratch, splits, out, rows, bias, y);
}

absl::Status ReduceSplits(DeviceContext& ctx, const float* partial, int splits,
                          int64_t out, int64_t rows, const Tensor& bias,
                          Tensor* y) {
  LaunchKernel(ctx.programmatic_launch(), ReduceSplitsKernel,
               dim3(static_cast<unsigned>(CeilDiv(out, 32)),
                    static_cast<unsigned>(std::min<int64_t>(rows, 65535))),
               dim3(kReduceWarps * 32), 0, ctx.stream(), partial, splits, out,
               static_cast<int>(rows), bias.empty() ? nullptr : bias.raw_data(),
               bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype()),
               y->data<float>());
  return LastLaunchStatus("ReduceSplitsKernel");
}

absl::Status GatherColumnsGemv(DeviceContext& ctx, const Tensor& x,
                               const Tensor& w, const Tensor& bias,
                               const int32_t* ids, int64_t k,
                               int64_t unit_width, Tensor* y,
                               int rows_per_warp) {
  const int64_t rows = x.dim(0), in = w.dim(1), out = w.dim(0);
  const bool vec = unit_width % 8 == 0 && Vec8(w, in) &&
                   IsAligned(x.raw_data(), 16) &&
                   k * unit_width <= kStagedColumns;
  if (rows_per_warp == 0) {
    // The fewest rows a warp whose blocks all fit at once (else 4).
    rows_per_warp = 4;
    for (int r : {2, 1}) {
      const int64_t blocks = CeilDiv(out, int64_t{kColumnsWarps} * r) * rows;
      const int per_sm = r == 2 ? ColumnsMinBlocks<2>() : ColumnsMinBlocks<1>();
      if (blocks <= static_cast<int64_t>(ctx.sm_count()) * per_sm) {
        rows_per_warp = r;
      }
    }
  }
  if (rows_per_warp != 1 && rows_per_warp != 2 && rows_per_warp != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GatherColumnsGemv: ", rows_per_warp, " rows a warp (1, 2 or 4)"));
  }
  return ByWeightType(w.dtype(), [&](auto t) {
    using T = decltype(t);
    const dim3 grid(static_cast<unsigned>(
                        CeilDiv(out, int64_t{kColumnsWarps} * rows_per_warp)),
                    static_cast<unsigned>(rows));
    auto pick = [&](auto rows_tag) {
      constexpr int R = decltype(rows_tag)::value;
      return vec ? GatherColumnsGemvKernel<T, true, R>
                 : GatherColumnsGemvKernel<T, false, R>;
    };
    auto kernel = rows_per_warp == 4   ? pick(std::integral_constant<int, 4>{})
                  : rows_per_warp == 2 ? pick(std::integral_constant<int, 2>{})
                                       : pick(std::integral_constant<int, 1>{});
    LaunchKernel(
        ctx.programmatic_launch(), kernel, grid, dim3(kColumnsWarps * 32), 0,
        ctx.stream(), x.data<float>(), static_cast<const T*>(w.raw_data()), in,
        out, bias.empty() ? nullptr : bias.raw_data(),
        bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype()), ids,
        static_cast<int>(k), static_cast<int>(unit_width), y->data<float>());
    return LastLaunchStatus("GatherColumnsGemvKernel");
  });
}

absl::Status GatherColumnsCopy(DeviceContext& ctx, const Tensor& x,
                               const int32_t* ids, int64_t k,
                               int64_t unit_width, Tensor* y) {
  const int64_t rows = x.dim(0), total = rows * k * unit_width;
  LaunchKernel(ctx.programmatic_launch(), GatherColumnsCopyKernel,
               dim3(static_cast<unsigned>(CeilDiv(total, 256))), dim3(256), 0,
               ctx.stream(), x.data<float>(), x.dim(1), ids,
               static_cast<int>(k), static_cast<int>(unit_width),
               static_cast<int>(rows), y->data<float>());
  return LastLaunchStatus("GatherColumnsCopyKernel");
}

absl::Status TransposeMatrix(DeviceContext& ctx, const Tensor& w, Tensor* w_t) {
  const int64_t rows = w.dim(0), cols = w.dim(1);
  const dim3 grid(static_cast<unsigned>(CeilDiv(cols, 32)),
                  static_cast<unsigned>(CeilDiv(rows, 32)));
  return ByWeightType(w.dtype(), [&](auto t) {
    using T = decltype(t);
    TransposeKernel<T><<<grid, dim3(32, 8), 0, ctx.stream()>>>(
        static_cast<const T*>(w.raw_data()), rows, cols,
        static_cast<T*>(w_t->raw_data()));
    return LastLaunchStatus("TransposeKernel");
  });
}

}  // namespace dynsparse::cuda
