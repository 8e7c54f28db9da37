// Kernels of sparse execution; see sparse_ops.h. Weights are read with
// 16-byte non-allocating loads (8 f16/bf16 or 2 x 4 f32) when rows are
// 16-byte aligned, element by element otherwise (tiny test shapes).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/sparse_ops.h"

namespace dynsparse::cuda {
namespace {

constexpr int kNoActivation = -1;

// volatile: the loads sit under bounds checks, and a non-volatile asm counts
// as pure, so the compiler could hoist it past them.
__device__ __forceinline__ uint4 LoadNoAlloc(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Eight consecutive weights as f32.
__device__ __forceinline__ void Load8(const float* p, float (&f)[8]) {
  const uint4 a = LoadNoAlloc(p), b = LoadNoAlloc(p + 4);
  f[0] = __uint_as_float(a.x), f[1] = __uint_as_float(a.y);
  f[2] = __uint_as_float(a.z), f[3] = __uint_as_float(a.w);
  f[4] = __uint_as_float(b.x), f[5] = __uint_as_float(b.y);
  f[6] = __uint_as_float(b.z), f[7] = __uint_as_float(b.w);
}
__device__ __forceinline__ void Load8(const __half* p, float (&f)[8]) {
  const uint4 v = LoadNoAlloc(p);
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t =
        __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}
__device__ __forceinline__ void Load8(const __nv_bfloat16* p, float (&f)[8]) {
  const uint4 v = LoadNoAlloc(p);
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(words[i] << 16);
    f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}
// Eight activations (written by an earlier kernel of the step).
__device__ __forceinline__ void LoadX8(const float* p, float (&f)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p));
  const float4 b = __ldg(reinterpret_cast<const float4*>(p + 4));
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
  f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

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

template <typename T, int A, bool kGated, bool kVec>
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
#pragma unroll 8
    for (int64_t i = lane * 8; i < in; i += 256) {
      float wv[8], xv[8];
      Load8(wr + i, wv);
      float gv[8];
      if constexpr (kGated) Load8(gr + i, gv);
      LoadX8(xr + i, xv);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        acc = fmaf(wv[e], xv[e], acc);
        if constexpr (kGated) accg = fmaf(gv[e], xv[e], accg);
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
  auto kernel = vec ? GatherGemvKernel<T, A, kGated, true>
                    : GatherGemvKernel<T, A, kGated, false>;
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

constexpr int kTThreads = 128;  // x 8 columns per thread
template <typename T, bool kVec>
__global__ void __launch_bounds__(kTThreads)
    GatherGemvTPartialKernel(const float* __restrict__ x,
                             const T* __restrict__ wt, int64_t out,
                             const int32_t* __restrict__ ids, int k, int splits,
                             float* __restrict__ partial) {
  PdlWait();
  const int r = blockIdx.z, s = blockIdx.y;
  const int j0 = static_cast<int>(static_cast<int64_t>(s) * k / splits);
  const int j1 = static_cast<int>(static_cast<int64_t>(s + 1) * k / splits);
  const float* xr = x + static_cast<int64_t>(r) * k;
  const int32_t* ir = ids ? ids + static_cast<int64_t>(r) * k : nullptr;
  float* pr = partial + (static_cast<int64_t>(r) * splits + s) * out;
  if constexpr (kVec) {
    const int64_t c0 =
        (static_cast<int64_t>(blockIdx.x) * kTThreads + threadIdx.x) * 8;
    if (c0 >= out) return;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll 8
    for (int j = j0; j < j1; ++j) {
      const int64_t u = ir ? __ldg(ir + j) : j;
      const float a = __ldg(xr + j);
      float wv[8];
      Load8(wt + u * out + c0, wv);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = fmaf(a, wv[e], acc[e]);
    }
    float4* dst = reinterpret_cast<float4*>(pr + c0);
    dst[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    dst[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  } else {
    const int64_t c =
        static_cast<int64_t>(blockIdx.x) * kTThreads + threadIdx.x;
    if (c >= out) return;
    float acc = 0.f;
    for (int j = j0; j < j1; ++j) {
      const int64_t u = ir ? ir[j] : j;
      acc = fmaf(xr[j], ToFloat(wt[u * out + c]), acc);
    }
    pr[c] = acc;
  }
}

__global__ void ReduceSplitsKernel(const float* __restrict__ partial,
                                   int splits, int64_t out, int rows,
                                   const void* bias, FloatKind bk,
                                   float* __restrict__ y) {
  PdlWait();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= out * rows) return;
  const int64_t r = i / out, c = i - r * out;
  float sum = 0.f;
  for (int s = 0; s < splits; ++s) sum += partial[(r * splits + s) * out + c];
  y[i] = sum + LoadAsFloat(bias, bk, c, 0.f);
}

int SplitsFor(int sm_count, int64_t rows, int64_t k, int64_t out) {
  const int64_t col_blocks = CeilDiv(CeilDiv(out, 8), kTThreads);
  const int64_t target = 4 * static_cast<int64_t>(sm_count);
  const int64_t splits = CeilDiv(target, col_blocks * rows);
  return static_cast<int>(
      std::max<int64_t>(1, std::min(splits, std::max<int64_t>(1, k / 4))));
}

// ---- Head-subset output projection (kept column blocks of W) --------------

template <typename T, bool kVec>
__global__ void __launch_bounds__(256)
    GatherColumnsGemvKernel(const float* __restrict__ x,
                            const T* __restrict__ w, int64_t in, int64_t out,
                            const void* bias, FloatKind bk,
                            const int32_t* __restrict__ ids, int k, int uw,
                            float* __restrict__ y) {
  PdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);
  const int r = blockIdx.y;
  if (o >= out) return;
  const int64_t width = static_cast<int64_t>(k) * uw;
  const float* xr = x + r * width;
  const int32_t* ir = ids + static_cast<int64_t>(r) * k;
  const T* wr = w + o * in;
  float acc = 0.f;
  if constexpr (kVec) {
#pragma unroll 4
    for (int64_t c = lane * 8; c < width; c += 256) {
      const int64_t j = c / uw;
      const int64_t col =
          static_cast<int64_t>(__ldg(ir + j)) * uw + (c - j * uw);
      float wv[8], xv[8];
      Load8(wr + col, wv);
      LoadX8(xr + c, xv);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc = fmaf(wv[e], xv[e], acc);
    }
  } else {
    for (int64_t c = lane; c < width; c += 32) {
      const int64_t j = c / uw;
      acc = fmaf(ToFloat(wr[static_cast<int64_t>(ir[j]) * uw + (c - j * uw)]),
                 xr[c], acc);
    }
  }
  acc = WarpSum(acc);
  if (lane == 0) y[r * out + o] = acc + LoadAsFloat(bias, bk, o, 0.f);
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

// ---- Top-K ----------------------------------------------------------------

constexpr int kTopKThreads = 1024;

// Unsigned keys ordered as the floats (-0 reads as +0, as the CPU compares).
__device__ __forceinline__ uint32_t OrderedKey(float f) {
  const uint32_t u = __float_as_uint(f == 0.f ? 0.f : f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__global__ void __launch_bounds__(kTopKThreads)
    TopKKernel(const float* scores, int n, int k, bool staged, int32_t* ids) {
  PdlWait();
  extern __shared__ uint32_t keys[];
  __shared__ int hist[256];
  __shared__ uint32_t s_prefix;
  __shared__ int s_remaining;
  const int tid = threadIdx.x, lane = tid & 31;
  const float* row = scores + static_cast<int64_t>(blockIdx.x) * n;
  if (staged) {
    for (int i = tid; i < n; i += blockDim.x) keys[i] = OrderedKey(row[i]);
  }
  if (tid == 0) {
    s_prefix = 0;
    s_remaining = k;
  }
  uint32_t mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = tid; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    const uint32_t prefix = s_prefix;
    for (int base = 0; base < n; base += blockDim.x) {
      const int i = base + tid;
      const uint32_t key = i < n ? (staged ? keys[i] : OrderedKey(row[i])) : 0u;
      const bool in = i < n && (key & mask) == prefix;
      const int bin = in ? static_cast<int>((key >> shift) & 255u) : -1;
      // Lanes with the same bin add once (scores often share a top byte).
      // A ballot-per-bin variant measured slower on the H200 (86 vs 57 us
      // for 36864 scores, results/dejavu_speed).
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      if (in && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], __popc(peers));
    }
    __syncthreads();
    if (tid < 32) {
      // Lane l owns bins [8l, 8l + 8); find, from the top, the bin where the
      // count reaches the number still needed.
      int local[8], sum = 0;
#pragma unroll
      for (int b = 0; b < 8; ++b) sum += (local[b] = hist[lane * 8 + b]);
      int incl = sum;  // Sum over this and higher lanes.
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const int t = __shfl_down_sync(0xffffffffu, incl, off);
        if (lane + off < 32) incl += t;
      }
      const int above = incl - sum, need = s_remaining;
      __syncwarp();
      if (above < need && need <= incl) {
        int cum = above;
        for (int b = 7; b >= 0; --b) {
          if (cum + local[b] >= need) {
            s_prefix = prefix | (static_cast<uint32_t>(lane * 8 + b) << shift);
            s_remaining = need - cum;
            break;
          }
          cum += local[b];
        }
      }
    }
    mask |= 255u << shift;
    __syncthreads();
  }
  // Keys above the threshold, then the lowest ids among those equal to it,
  // written in id order: each warp owns a contiguous segment of the row,
  // counts its picks with ballots, and writes them after those of the
  // warps before it (one barrier instead of a block scan per element).
  const uint32_t threshold = s_prefix;
  const int need_eq = s_remaining;
  const int warp = tid >> 5, warps = blockDim.x >> 5;
  const int seg = ((n + warps - 1) / warps + 31) & ~31;
  const int s0 = warp * seg, s1 = min(n, s0 + seg);
  const unsigned below = (1u << lane) - 1u;
  int gt_count = 0, eq_count = 0;
  for (int i = s0 + lane; i < s0 + seg; i += 32) {
    const uint32_t key = i < s1 ? (staged ? keys[i] : OrderedKey(row[i])) : 0u;
    gt_count += __popc(__ballot_sync(0xffffffffu, i < s1 && key > threshold));
    eq_count += __popc(__ballot_sync(0xffffffffu, i < s1 && key == threshold));
  }
  int* warp_gt = hist;  // The histogram is no longer needed.
  int* warp_eq = hist + 32;
  if (lane == 0) {
    warp_gt[warp] = gt_count;
    warp_eq[warp] = eq_count;
  }
  __syncthreads();
  int eq_seen = 0, at = 0;
  for (int w = 0; w < warp; ++w) {
    const int take_eq = max(0, min(warp_eq[w], need_eq - eq_seen));
    at += warp_gt[w] + take_eq;
    eq_seen += warp_eq[w];
  }
  int32_t* out = ids + static_cast<int64_t>(blockIdx.x) * k;
  for (int i = s0 + lane; i < s0 + seg; i += 32) {
    const uint32_t key = i < s1 ? (staged ? keys[i] : OrderedKey(row[i])) : 0u;
    const bool gt = i < s1 && key > threshold;
    const bool eq = i < s1 && key == threshold;
    const unsigned eq_mask = __ballot_sync(0xffffffffu, eq);
    const bool sel = gt || (eq && eq_seen + __popc(eq_mask & below) < need_eq);
    const unsigned sel_mask = __ballot_sync(0xffffffffu, sel);
    if (sel) out[at + __popc(sel_mask & below)] = i;
    eq_seen += __popc(eq_mask);
    at += __popc(sel_mask);
  }
}

__global__ void UnitNormsKernel(const float* x, int64_t width, int uw,
                                int64_t total, float* norms) {
  PdlWait();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t units = width / uw;
  const int64_t r = i / units, u = i - r * units;
  const float* p = x + r * width + u * uw;
  double sum = 0.0;
  for (int j = 0; j < uw; ++j) sum += static_cast<double>(p[j]) * p[j];
  norms[i] = static_cast<float>(sqrt(sum));
}

// ---- Lazy K/V -------------------------------------------------------------

constexpr int kMaxRing = 16;
constexpr int kLazyRowsPerBlock = 16;  // K/V output rows per block (8 warps)

struct LazyArgs {
  const float* h;
  const int32_t* head_ids;
  int k;
  const int32_t* step;
  float* ring_x;
  int32_t* ring_pos;
  int32_t* pending;
  int slots;
  const void* wk;
  const void* wv;
  const void* bk;
  const void* bv;
  FloatKind bk_kind, bv_kind;
  const float* inv_freq;
  int group, kv_heads, head_dim;
  int64_t hidden;
  float* k_cache;
  float* v_cache;
};

// The work of kv head g this step: its missing (slot, position) pairs, and
// the new token (slot -1) last. Returns whether the head is active. Thread
// 0 only; both kernels compute the same list (pending changes only after).
__device__ bool LazyWork(const LazyArgs& a, int g, int* slot_list,
                         int* pos_list, int* count) {
  const int pos = a.step[0], slot = a.step[1];
  bool active = a.step[2] != 0 || a.h == nullptr;
  for (int j = 0; !active && j < a.k; ++j)
    active = a.head_ids[j] / a.group == g;
  int c = 0;
  if (active) {
    for (int s = 0; s < a.slots; ++s) {
      if (a.pending[s * a.kv_heads + g] && !(a.h != nullptr && s == slot)) {
        slot_list[c] = s;
        pos_list[c] = a.ring_pos[s];
        ++c;
      }
    }
    if (a.h != nullptr) {
      slot_list[c] = -1;
      pos_list[c] = pos;
      ++c;
    }
  }
  *count = c;
  return active;
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(256) LazyKvComputeKernel(const LazyArgs a) {
  PdlWait();
  __shared__ int slot_list[kMaxRing + 1], pos_list[kMaxRing + 1], count;
  const int g = blockIdx.x;
  if (threadIdx.x == 0) LazyWork(a, g, slot_list, pos_list, &count);
  __syncthreads();
  const int n = count;
  if (n == 0) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float* xs[kMaxRing + 1];
#pragma unroll
  for (int p = 0; p <= kMaxRing; ++p) {
    xs[p] = p < n
                ? (slot_list[p] < 0 ? a.h : a.ring_x + slot_list[p] * a.hidden)
                : nullptr;
  }
  for (int t = 0; t < kLazyRowsPerBlock / 8; ++t) {
    const int r =
        blockIdx.y * kLazyRowsPerBlock + warp * (kLazyRowsPerBlock / 8) + t;
    if (r >= 2 * a.head_dim) break;
    const bool is_v = r >= a.head_dim;
    const int64_t row =
        static_cast<int64_t>(g) * a.head_dim + (is_v ? r - a.head_dim : r);
    const T* wr = static_cast<const T*>(is_v ? a.wv : a.wk) + row * a.hidden;
    float acc[kMaxRing + 1];
#pragma unroll
    for (int p = 0; p <= kMaxRing; ++p) acc[p] = 0.f;
    if constexpr (kVec) {
      for (int64_t i = lane * 8; i < a.hidden; i += 256) {
        float wv[8];
        Load8(wr + i, wv);
#pragma unroll
        for (int p = 0; p <= kMaxRing; ++p) {
          if (p < n) {
            float xv[8];
            LoadX8(xs[p] + i, xv);
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[p] = fmaf(wv[e], xv[e], acc[p]);
          }
        }
      }
    } else {
      for (int64_t i = lane; i < a.hidden; i += 32) {
        const float wv = ToFloat(wr[i]);
#pragma unroll
        for (int p = 0; p <= kMaxRing; ++p) {
          if (p < n) acc[p] = fmaf(wv, xs[p][i], acc[p]);
        }
      }
    }
    const float b =
        LoadAsFloat(is_v ? a.bv : a.bk, is_v ? a.bv_kind : a.bk_kind, row, 0.f);
    float* cache = is_v ? a.v_cache : a.k_cache;
    const int64_t stride = static_cast<int64_t>(a.kv_heads) * a.head_dim;
#pragma unroll
    for (int p = 0; p <= kMaxRing; ++p) {
      if (p < n) {
        const float v = WarpSum(acc[p]);
        if (lane == 0) cache[pos_list[p] * stride + row] = v + b;
      }
    }
  }
}

__global__ void LazyKvCommitKernel(const LazyArgs a) {
  PdlWait();
  __shared__ int slot_list[kMaxRing + 1], pos_list[kMaxRing + 1], count;
  __shared__ bool active;
  const int g = blockIdx.x;
  if (threadIdx.x == 0) active = LazyWork(a, g, slot_list, pos_list, &count);
  __syncthreads();
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
      float* kp = a.k_cache + pos_list[p] * stride +
                  static_cast<int64_t>(g) * a.head_dim;
      const float x0 = kp[i], x1 = kp[i + half];
      kp[i] = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
      kp[i + half] = __fadd_rn(__fmul_rn(x1, cs), __fmul_rn(x0, sn));
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

template <typename F>
absl::Status ByWeightType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f(float{});
    case DType::kF16:
      return f(__half{});
    case DType::kBF16:
      return f(__nv_bfloat16{});
    case DType::kI32:
      break;
  }
  return absl::InvalidArgumentError("sparse ops: integer weights");
}

bool Vec8(const Tensor& w, int64_t row_elements) {
  return row_elements % 8 == 0 && IsAligned(w.raw_data(), 16);
}

}  // namespace

absl::Status TopKRows(DeviceContext& ctx, const Tensor& scores, int64_t k,
                      Tensor* ids) {
  const int64_t rows = scores.dim(0), n = scores.dim(1);
  if (k <= 0 || k > n || ids->dim(0) != rows || ids->dim(1) != k) {
    return absl::InvalidArgumentError(
        absl::StrCat("TopK: k ", k, " of ", n, " into ", ids->DebugString()));
  }
  const int64_t smem = n * 4;
  const bool staged = smem <= ctx.info().shared_memory_per_block_optin - 4096;
  const size_t dyn = staged ? static_cast<size_t>(smem) : 0;
  if (dyn > 48 * 1024) {
    DS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        TopKKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(dyn)));
  }
  LaunchKernel(ctx.programmatic_launch(), TopKKernel,
               dim3(static_cast<unsigned>(rows)), dim3(kTopKThreads), dyn,
               ctx.stream(), scores.data<float>(), static_cast<int>(n),
               static_cast<int>(k), staged, ids->data<int32_t>());
  return LastLaunchStatus("TopKKernel");
}

absl::Status UnitNormsRows(DeviceContext& ctx, const Tensor& x,
                           int64_t unit_width, Tensor* norms) {
  const int64_t total = norms->numel();
  LaunchKernel(ctx.programmatic_launch(), UnitNormsKernel,
               dim3(static_cast<unsigned>(CeilDiv(total, 256))), dim3(256), 0,
               ctx.stream(), x.data<float>(), x.dim(1),
               static_cast<int>(unit_width), total, norms->data<float>());
  return LastLaunchStatus("UnitNormsKernel");
}

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
                                 int64_t k, int64_t out) {
  return rows * SplitsFor(ctx.sm_count(), rows, k, out) * out;
}

absl::Status GatherGemvT(DeviceContext& ctx, const Tensor& x, const Tensor& w_t,
                         const Tensor& bias, const int32_t* ids, int64_t k,
                         float* scratch, Tensor* y) {
  const int64_t rows = x.dim(0), out = w_t.dim(1);
  const int splits = SplitsFor(ctx.sm_count(), rows, k, out);
  const bool vec = Vec8(w_t, out) && IsAligned(scratch, 16);
  absl::Status status = ByWeightType(w_t.dtype(), [&](auto t) {
    using T = decltype(t);
    const dim3 grid(
        static_cast<unsigned>(CeilDiv(vec ? CeilDiv(out, 8) : out, kTThreads)),
        static_cast<unsigned>(splits), static_cast<unsigned>(rows));
    LaunchKernel(ctx.programmatic_launch(),
                 vec ? GatherGemvTPartialKernel<T, true>
                     : GatherGemvTPartialKernel<T, false>,
                 grid, dim3(kTThreads), 0, ctx.stream(), x.data<float>(),
                 static_cast<const T*>(w_t.raw_data()), out, ids,
                 static_cast<int>(k), splits, scratch);
    return LastLaunchStatus("GatherGemvTPartialKernel");
  });
  if (!status.ok()) return status;
  LaunchKernel(ctx.programmatic_launch(), ReduceSplitsKernel,
               dim3(static_cast<unsigned>(CeilDiv(rows * out, 256))), dim3(256),
               0, ctx.stream(), static_cast<const float*>(scratch), splits, out,
               static_cast<int>(rows), bias.empty() ? nullptr : bias.raw_data(),
               bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype()),
               y->data<float>());
  return LastLaunchStatus("ReduceSplitsKernel");
}

absl::Status GatherColumnsGemv(DeviceContext& ctx, const Tensor& x,
                               const Tensor& w, const Tensor& bias,
                               const int32_t* ids, int64_t k,
                               int64_t unit_width, Tensor* y) {
  const int64_t rows = x.dim(0), in = w.dim(1), out = w.dim(0);
  const bool vec =
      unit_width % 8 == 0 && Vec8(w, in) && IsAligned(x.raw_data(), 16);
  return ByWeightType(w.dtype(), [&](auto t) {
    using T = decltype(t);
    const dim3 grid(static_cast<unsigned>(CeilDiv(out, 8)),
                    static_cast<unsigned>(rows));
    LaunchKernel(ctx.programmatic_launch(),
                 vec ? GatherColumnsGemvKernel<T, true>
                     : GatherColumnsGemvKernel<T, false>,
                 grid, dim3(256), 0, ctx.stream(), x.data<float>(),
                 static_cast<const T*>(w.raw_data()), in, out,
                 bias.empty() ? nullptr : bias.raw_data(),
                 bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype()),
                 ids, static_cast<int>(k), static_cast<int>(unit_width),
                 y->data<float>());
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

absl::Status LazyKvDevice(DeviceContext& ctx, const DeviceLazyKvArgs& d) {
  if (d.slots > kMaxRing || d.num_kv_heads <= 0 ||
      d.num_heads % d.num_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LazyKv: ", d.slots, " ring slots (max ", kMaxRing,
                     "), heads ", d.num_heads, "/", d.num_kv_heads));
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
  a.k_cache = d.k_cache;
  a.v_cache = d.v_cache;
  const bool vec = Vec8(*d.wk, d.hidden) && IsAligned(d.wv->raw_data(), 16) &&
                   (d.h == nullptr || IsAligned(d.h, 16)) &&
                   IsAligned(d.ring_x, 16);
  const dim3 grid(
      static_cast<unsigned>(d.num_kv_heads),
      static_cast<unsigned>(CeilDiv(2 * d.head_dim, kLazyRowsPerBlock)));
  absl::Status status = ByWeightType(d.wk->dtype(), [&](auto t) {
    using T = decltype(t);
    LaunchKernel(
        ctx.programmatic_launch(),
        vec ? LazyKvComputeKernel<T, true> : LazyKvComputeKernel<T, false>,
        grid, dim3(256), 0, ctx.stream(), a);
    return LastLaunchStatus("LazyKvComputeKernel");
  });
  if (!status.ok()) return status;
  LaunchKernel(ctx.programmatic_launch(), LazyKvCommitKernel,
               dim3(static_cast<unsigned>(d.num_kv_heads)), dim3(128), 0,
               ctx.stream(), a);
  return LastLaunchStatus("LazyKvCommitKernel");
}

}  // namespace dynsparse::cuda
