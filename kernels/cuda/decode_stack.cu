// The persistent decode kernel (decode_stack.h). One block per SM, 512
// threads. Each GEMV phase splits its output units (rows; for SwiGLU an up
// row with its gate row) into one contiguous range per block; thread t reads
// 16-byte chunks t, t + 512, ... of every row of its block's range, so its
// share of x sits in registers for the whole phase.
//
// The weight stream: every thread walks the same fixed order of its chunks
// over all layers and phases (Cursor) and keeps kStages of them in flight
// with cp.async into its own shared-memory slots. A thread reads back only
// slots it filled, so no barrier guards them, and the walk does not stop at
// phase ends: while the grid waits at a barrier or runs the attention, the
// next phase's first weights are already on their way.
//
// Phases of a layer, each followed by a grid barrier: norm + q/k/v GEMV;
// attention over the cache in items of a few key batches (RoPE and the
// cache write of the new row inside; the warp finishing a head's last item
// merges the head); o-projection into the residual; norm + up[/gate] GEMV
// with its activation; down projection into the residual.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/decode_stack.h"
#include "kernels/cuda/sparse_loads.cuh"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
// 16-byte chunks in flight a thread (64 KB an SM); 16 (128 KB) was no
// faster (results/bench/h200_run64).
constexpr int kStages = 8;
constexpr int kMaxChunks = 4;  // Chunks of one row a thread: widths <= 16K.
constexpr int kMaxWidth = kThreads * 8 * kMaxChunks;
constexpr int kGroupRows = 8;        // Rows a warp reduces together.
constexpr int kMaxBlockUnits = 512;  // Units of one phase a block owns.
constexpr int kMaxBlockRows = 2 * kMaxBlockUnits;
constexpr int kMaxGrid = 160;    // Blocks (SMs) the unit table covers.
constexpr int kMinItemKeys = 8;  // Keys of an attention work item (a warp).
constexpr int kKeyBatch = 8;     // Keys loaded together inside an item.
constexpr int kD = kDecodeStackHeadDim;
constexpr int kPartialStride = kD + 4;  // acc[kD], max, sum; 16-byte rows.
// Dynamic shared memory: the stages, then each warp's row sums of a phase.
constexpr size_t kStageBytes = size_t{kStages} * kThreads * sizeof(uint4);
constexpr size_t kSmemBytes =
    kStageBytes + size_t{kWarps} * kMaxBlockRows * sizeof(float);

enum Phase : int { kQkv = 0, kOut, kUp, kDown, kPhases };

struct Params {
  // Block b owns units [unit_begin[phase][b], unit_begin[phase][b + 1]) of a
  // phase: filled on the host, so the weight stream's cursor divides
  // nothing.
  int unit_begin[kPhases][kMaxGrid + 1];
  DecodeStackLayer layers[kDecodeStackMaxLayers];
  int num_layers;
  int hidden, q_dim, kv_dim, inter, heads, kv_heads;
  int items_per_head;  // Attention items a head aims at (warps / heads).
  int max_items;       // Partial slots a head has.
  int activation;
  bool rms_norm;
  float norm_eps, scale;
  const int32_t* position;
  const float* inv_freq;
  float* x;
  float* qkv;          // [q_dim + 2 kv_dim]
  float* context;      // [q_dim]
  float* h;            // [inter]
  float* partials;     // [heads][max_items][kPartialStride]
  unsigned* barrier;   // [2 + heads]: count, generation, per-head counters
  uint64_t* timeline;  // Null, or [layers][kDecodeStackEvents][grid] (ns).
};

struct PhaseShape {
  int units;
  int rows_per_unit;
  int width;  // Weights per row.
};

template <bool kGated>
__device__ __forceinline__ PhaseShape ShapeOf(const Params& p, int phase) {
  switch (phase) {
    case kQkv:
      return {p.q_dim + 2 * p.kv_dim, 1, p.hidden};
    case kOut:
      return {p.hidden, 1, p.q_dim};
    case kUp:
      return {p.inter, kGated ? 2 : 1, p.hidden};
    default:
      return {p.hidden, 1, p.inter};
  }
}

__device__ __forceinline__ int UnitBegin(const Params& p, int phase,
                                         int block) {
  return p.unit_begin[phase][block];
}

// This thread's chunks of a row `width` wide.
__device__ __forceinline__ int ChunksOfThread(int width) {
  const int chunks = width / 8;
  const int t = static_cast<int>(threadIdx.x);
  return t < chunks ? (chunks - 1 - t) / kThreads + 1 : 0;
}

// Where this thread's weight stream stands. Inside a segment (a run of
// units whose rows lie in one matrix, or two for SwiGLU's up/gate pairs)
// the next chunk is a pointer step; NextSegment, out of line, finds the
// next segment (q -> k -> v, the next phase, the next layer).
struct Cursor {
  const uint4* row = nullptr;  // This unit's row (the up row of a pair)
  const uint4* alt = nullptr;  // ... and its gate row (pairs only).
  int stride = 0;              // 16-byte chunks a row.
  int chunk = 0, chunks = 0;   // Of this thread in the row.
  int rr = 0, rows = 1;        // Row of the unit; 2 for pairs.
  int left = 0;                // Units left in the segment, this one too.
  int layer = 0, phase = 0;
  int unit_end = 0;  // Where the segment ends (a unit index).
  bool valid = false;
};

// Matrix segment of a phase that holds `unit`: its first unit's row (and
// gate row, for pairs) and its unit range [first, end).
struct Segment {
  const void* w;
  const void* gate;
  int first, end;
};

__device__ __forceinline__ Segment SegmentOf(const Params& p, int layer,
                                             int phase, int unit) {
  const DecodeStackLayer& l = p.layers[layer];
  switch (phase) {
    case kQkv:
      if (unit < p.q_dim) return {l.w_qkv[0], nullptr, 0, p.q_dim};
      if (unit < p.q_dim + p.kv_dim) {
        return {l.w_qkv[1], nullptr, p.q_dim, p.q_dim + p.kv_dim};
      }
      return {l.w_qkv[2], nullptr, p.q_dim + p.kv_dim, p.q_dim + 2 * p.kv_dim};
    case kOut:
      return {l.w_o, nullptr, 0, p.hidden};
    case kUp:
      return {l.w_up, l.w_gate, 0, p.inter};
    default:
      return {l.w_down, nullptr, 0, p.hidden};
  }
}

// c moves to the segment that starts at unit `from` of (c.layer, c.phase),
// or to the first one of a later phase that has work for this thread.
// By value in and out, so the cursor stays in registers at its call sites.
template <bool kGated>
__device__ __noinline__ Cursor NextSegment(const Params& p, Cursor c,
                                           int from) {
  while (c.layer < p.num_layers) {
    const PhaseShape shape = ShapeOf<kGated>(p, c.phase);
    const int u1 = UnitBegin(p, c.phase, blockIdx.x + 1);
    const int u = max(from, UnitBegin(p, c.phase, blockIdx.x));
    const int n = ChunksOfThread(shape.width);
    if (u < u1 && n > 0) {
      const Segment seg = SegmentOf(p, c.layer, c.phase, u);
      c.stride = shape.width / 8;
      const int64_t offset =
          static_cast<int64_t>(u - seg.first) * c.stride + threadIdx.x;
      c.row = static_cast<const uint4*>(seg.w) + offset;
      c.rows = shape.rows_per_unit;
      c.alt =
          c.rows == 2 ? static_cast<const uint4*>(seg.gate) + offset : nullptr;
      c.chunk = 0;
      c.chunks = n;
      c.rr = 0;
      c.unit_end = min(u1, seg.end);
      c.left = c.unit_end - u;
      c.valid = true;
      return c;
    }
    from = 0;
    if (++c.phase == kPhases) {
      c.phase = 0;
      ++c.layer;
    }
  }
  c.valid = false;
  return c;
}

__device__ __forceinline__ const uint4* Address(const Cursor& c) {
  return (c.rr == 0 ? c.row : c.alt) + c.chunk * kThreads;
}

template <bool kGated>
__device__ __forceinline__ void Advance(const Params& p, Cursor& c) {
  if (++c.chunk < c.chunks) return;
  c.chunk = 0;
  if (kGated && ++c.rr < c.rows) return;
  c.rr = 0;
  if (--c.left > 0) {
    c.row += c.stride;
    if (kGated) c.alt += c.stride;
    return;
  }
  c = NextSegment<kGated>(p, c, c.unit_end);
}

// Issues the producer's next chunk into `dst` (an empty group past the end,
// so the wait count below stays fixed).
template <bool kGated>
__device__ __forceinline__ void Issue(const Params& p, Cursor& producer,
                                      uint4* dst) {
  if (producer.valid) {
    CpAsync16(dst, Address(producer));
    Advance<kGated>(p, producer);
  }
  CpAsyncCommit();
}

// The next chunk of this thread's stream, refilling its slot.
template <bool kGated>
__device__ __forceinline__ uint4 Consume(const Params& p, uint4* stage,
                                         Cursor& producer, int& slot) {
  CpAsyncWait<kStages - 1>();
  uint4* mine = stage + slot * kThreads + threadIdx.x;
  const uint4 w = *mine;
  asm volatile("" ::: "memory");  // Read the slot before it is refilled.
  Issue<kGated>(p, producer, mine);
  slot = slot + 1 == kStages ? 0 : slot + 1;
  return w;
}

// The global timer at `event` of `layer`, by thread 0 (timeline runs only).
__device__ __forceinline__ void Mark(const Params& p, int layer, int event) {
  if (p.timeline == nullptr || threadIdx.x != 0) return;
  p.timeline[(static_cast<int64_t>(layer) * kDecodeStackEvents + event) *
                 gridDim.x +
             blockIdx.x] = GlobalTimerNs();
}

__device__ __forceinline__ float4 LoadCoherent4(const float* p) {
  return __ldcg(reinterpret_cast<const float4*>(p));
}

// All blocks meet here. The last to arrive resets the count and bumps the
// generation the others wait on, so the words end as they began.
__device__ void GridSync(unsigned* barrier) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* count = barrier;
    unsigned* generation = barrier + 1;
    unsigned seen;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                 : "=r"(seen)
                 : "l"(generation)
                 : "memory");
    __threadfence();
    if (atomicAdd(count, 1u) == gridDim.x - 1) {
      atomicExch(count, 0u);
      __threadfence();
      atomicAdd(generation, 1u);
    } else {
      unsigned now = seen;
      while (now == seen) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                     : "=r"(now)
                     : "l"(generation)
                     : "memory");
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// xr <- this thread's chunks of the block's input: x normalised (norm_w not
// null) or `src` as it is.
template <typename T>
__device__ void LoadInput(const Params& p, const float* src, int width,
                          const void* norm_w, const void* norm_b,
                          float (&xr)[kMaxChunks][8], float* scratch) {
  const int n = ChunksOfThread(width);
  // The norm weights load beside x, not after the statistics: one memory
  // round trip on the phase's critical path instead of two.
  Raw8<T> gamma[kMaxChunks];
  if (norm_w != nullptr) {
#pragma unroll
    for (int i = 0; i < kMaxChunks; ++i) {
      if (i < n) {
        LoadRaw8(static_cast<const T*>(norm_w) +
                     8 * (static_cast<int>(threadIdx.x) + i * kThreads),
                 gamma[i]);
      }
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kMaxChunks; ++i) {
    const int at = 8 * (static_cast<int>(threadIdx.x) + i * kThreads);
    const float4 a =
        i < n ? LoadCoherent4(src + at) : make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 b =
        i < n ? LoadCoherent4(src + at + 4) : make_float4(0.f, 0.f, 0.f, 0.f);
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      xr[i][j] = v[j];
      sum += v[j];
    }
  }
  if (norm_w == nullptr) return;
  float mean = 0.0f;
  if (!p.rms_norm) mean = BlockSum(sum, scratch) / static_cast<float>(width);
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kMaxChunks; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float d = i < n ? xr[i][j] - mean : 0.0f;
      sq = fmaf(d, d, sq);
    }
  }
  const float rstd =
      rsqrtf(BlockSum(sq, scratch) / static_cast<float>(width) + p.norm_eps);
#pragma unroll
  for (int i = 0; i < kMaxChunks; ++i) {
    if (i < n) {
      const int at = 8 * (static_cast<int>(threadIdx.x) + i * kThreads);
      float g[8];
      Convert8(gamma[i], g);
      float b[8] = {};
      if (norm_b != nullptr) Load8(static_cast<const T*>(norm_b) + at, b);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        xr[i][j] = (xr[i][j] - mean) * rstd * g[j] + b[j];
      }
    }
  }
}

// What a unit's epilogue adds besides its sums, staged in shared memory at
// the start of a phase so the epilogues wait on no global load: the bias of
// its first row, of its gate row, and the residual it adds into (x).
struct UnitExtras {
  float bias[kMaxBlockUnits];
  float gate_bias[kMaxBlockUnits];
  float residual[kMaxBlockUnits];
};

template <typename T>
__device__ __forceinline__ float BiasAt(const void* bias, int i) {
  return bias == nullptr ? 0.0f : ToFloat(static_cast<const T*>(bias)[i]);
}

template <typename T>
__device__ void LoadExtras(const Params& p, int layer, int phase, int u0,
                           int u1, UnitExtras& e) {
  const DecodeStackLayer& l = p.layers[layer];
  for (int i = threadIdx.x; i < u1 - u0; i += kThreads) {
    const int u = u0 + i;
    float bias = 0.0f, gate_bias = 0.0f, residual = 0.0f;
    switch (phase) {
      case kQkv: {
        const int m = u < p.q_dim ? 0 : (u < p.q_dim + p.kv_dim ? 1 : 2);
        bias = BiasAt<T>(l.b_qkv[m],
                         m == 0 ? u : u - p.q_dim - (m - 1) * p.kv_dim);
        break;
      }
      case kOut:
        bias = BiasAt<T>(l.b_o, u);
        residual = __ldcg(p.x + u);
        break;
      case kUp:
        bias = BiasAt<T>(l.b_up, u);
        gate_bias = BiasAt<T>(l.b_gate, u);
        break;
      default:
        bias = BiasAt<T>(l.b_down, u);
        residual = __ldcg(p.x + u);
        break;
    }
    e.bias[i] = bias;
    e.gate_bias[i] = gate_bias;
    e.residual[i] = residual;
  }
}

// Unit u (the block's i-th) done: its row sums over the block.
template <bool kGated>
__device__ void Epilogue(const Params& p, int phase, int u, int i,
                         const UnitExtras& e, float a0, float a1) {
  const float y = a0 + e.bias[i];
  switch (phase) {
    case kQkv:
      __stcg(p.qkv + u, y);
      break;
    case kUp:
      __stcg(p.h + u, kGated ? ActByCode(p.activation, a1 + e.gate_bias[i]) * y
                             : ActByCode(p.activation, y));
      break;
    default:  // kOut, kDown: into the residual stream.
      __stcg(p.x + u, e.residual[i] + y);
      break;
  }
}

// One halving exchange of ReduceMany per stage: lanes whose bit
// (16 >> kStage) is set keep the upper half of the values, the others the
// lower, each adding its partner's copy.
template <int N, int kStage = 0>
__device__ __forceinline__ void HalveMany(float (&v)[N], int lane) {
  if constexpr ((N >> kStage) > 1) {
    constexpr int kHalf = N >> (kStage + 1);
    constexpr int kOffset = 16 >> kStage;
    const bool upper = (lane & kOffset) != 0;
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
      const float send = upper ? v[i] : v[i + kHalf];
      const float keep = upper ? v[i + kHalf] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, kOffset);
    }
    HalveMany<N, kStage + 1>(v, lane);
  }
}

// Sums each of v[0..N) over the warp in log2(N) halving exchanges plus
// log2(32 / N) plain ones (N + log2(32 / N) - 1 shuffles instead of
// 5 N). Lane l ends with the sum of value ReducedIndex<N>(l), complete in
// the lanes where l % (32 / N) == 0.
template <int N>
__device__ __forceinline__ float ReduceMany(float (&v)[N]) {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0);
  HalveMany<N>(v, threadIdx.x & 31);
  float total = v[0];
#pragma unroll
  for (int offset = 16 / N; offset > 0; offset /= 2) {
    total += __shfl_xor_sync(0xffffffffu, total, offset);
  }
  return total;
}

template <int N>
__device__ __forceinline__ int ReducedIndex(int lane) {
  int index = 0;
#pragma unroll
  for (int stage = 0; (N >> stage) > 1; ++stage) {
    if (lane & (16 >> stage)) index += N >> (stage + 1);
  }
  return index;
}

// One GEMV phase of this block: its units in groups of kGroupRows rows,
// every row of a group dotted with xr (independent chains) and summed over
// the warp; each warp keeps its row sums in `sums`, and after one barrier at
// the end of the phase the epilogues add them up in warp order.
template <typename T, bool kGated>
__device__ void GemvPhase(const Params& p, int layer, int phase, uint4* stage,
                          Cursor& producer, int& slot,
                          const float (&xr)[kMaxChunks][8],
                          float (*sums)[kMaxBlockRows], UnitExtras& extras) {
  const PhaseShape s = ShapeOf<kGated>(p, phase);
  const int rows = s.rows_per_unit;  // 2 for an up/gate pair.
  const int group = kGroupRows / rows;
  const int u0 = UnitBegin(p, phase, blockIdx.x);
  const int u1 = UnitBegin(p, phase, blockIdx.x + 1);
  const int n = ChunksOfThread(s.width);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  LoadExtras<T>(p, layer, phase, u0, u1, extras);
  for (int g0 = u0; g0 < u1; g0 += group) {
    const int gn = min(group, u1 - g0);
    // Row r of the group is row r % rows of unit r / rows: the order the
    // cursor walks.
    float acc[kGroupRows];
#pragma unroll
    for (int r = 0; r < kGroupRows; ++r) {
      acc[r] = 0.0f;
#pragma unroll
      for (int i = 0; i < kMaxChunks; ++i) {
        if (r < gn * rows && i < n) {
          Raw8<T> raw;
          raw.v[0] = Consume<kGated>(p, stage, producer, slot);
          float w[8];
          Convert8(raw, w);
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[r] = fmaf(w[j], xr[i][j], acc[r]);
        }
      }
    }
    const float total = ReduceMany<kGroupRows>(acc);
    const int r = ReducedIndex<kGroupRows>(lane);
    if ((lane & (32 / kGroupRows - 1)) == 0 && r < gn * rows) {
      sums[warp][(g0 - u0) * rows + r] = total;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < u1 - u0; i += kThreads) {
    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      a0 += sums[w][i * rows];
      if (kGated && rows == 2) a1 += sums[w][i * 2 + 1];
    }
    Epilogue<kGated>(p, phase, u0 + i, i, extras, a0, a1);
  }
}

// RoPE of this lane's 4 dimensions (4 lane .. 4 lane + 3 of a 128-wide head;
// dimension i pairs with i + 64, held by lane ^ 16), as RopeKernel rounds.
__device__ __forceinline__ float4 Rotate(float4 v, const float* inv_freq,
                                         float position) {
  const int lane = threadIdx.x & 31;
  const float4 other = make_float4(__shfl_xor_sync(0xffffffffu, v.x, 16),
                                   __shfl_xor_sync(0xffffffffu, v.y, 16),
                                   __shfl_xor_sync(0xffffffffu, v.z, 16),
                                   __shfl_xor_sync(0xffffffffu, v.w, 16));
  const bool low = lane < 16;
  const int i0 = (4 * lane) & (kD / 2 - 1);
  float in[4] = {v.x, v.y, v.z, v.w};
  const float partner[4] = {other.x, other.y, other.z, other.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float s, c;
    sincosf(__fmul_rn(position, inv_freq[i0 + j]), &s, &c);
    // This lane holds x[i] (low) or x[i + half]; its partner the other.
    in[j] = low ? RotatePair(in[j], partner[j], c, s).x
                : RotatePair(partner[j], in[j], c, s).y;
  }
  return make_float4(in[0], in[1], in[2], in[3]);
}

__device__ __forceinline__ float Dot4(float4 a, float4 b) {
  return fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, a.w * b.w)));
}

// context[head] <- the head's `items` partials merged, by one warp.
__device__ void MergeHead(const Params& p, int h, int items) {
  const int lane = threadIdx.x & 31;
  const float* base =
      p.partials + static_cast<int64_t>(h) * p.max_items * kPartialStride;
  float m = -INFINITY;
  for (int c = lane; c < items; c += 32) {
    m = fmaxf(m, __ldcg(base + c * kPartialStride + kD));
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  float sum = 0.0f;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int c = 0; c < items; ++c) {
    const float* part = base + c * kPartialStride;
    const float w = expf(__ldcg(part + kD) - m);
    sum = fmaf(w, __ldcg(part + kD + 1), sum);
    const float4 a = LoadCoherent4(part + 4 * lane);
    acc = make_float4(fmaf(w, a.x, acc.x), fmaf(w, a.y, acc.y),
                      fmaf(w, a.z, acc.z), fmaf(w, a.w, acc.w));
  }
  const float inv = 1.0f / sum;
  __stcg(reinterpret_cast<float4*>(p.context + h * kD + 4 * lane),
         make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv));
}

// Attention items (query head, 32 keys) over all warps of the grid; each
// writes its softmax partial (acc, max, sum), and the warp that finishes a
// head's last item merges the head (a counter per head, which it resets),
// so no grid barrier separates the items from the merge. The new row's K/V
// come from the q/k/v output (rotated here); one warp per kv head writes
// them to the cache, which no other item of this launch reads.
__device__ void AttentionPhase(const Params& p, int layer) {
  const DecodeStackLayer& l = p.layers[layer];
  const int lane = threadIdx.x & 31;
  const int pos = *p.position;
  const int keys = pos + 1;
  // Keys an item takes: about items_per_head items a head, so every warp of
  // the grid has one (fewer serial key batches), in whole batches.
  const int per_item = (keys + p.items_per_head - 1) / p.items_per_head;
  const int item_keys =
      max(kMinItemKeys, (per_item + kKeyBatch - 1) / kKeyBatch * kKeyBatch);
  const int items = (keys + item_keys - 1) / item_keys;
  const int group = p.heads / p.kv_heads;
  const float fpos = static_cast<float>(pos);
  const int warps = gridDim.x * kWarps;
  unsigned* head_counts = p.barrier + 2;
  for (int item = blockIdx.x * kWarps + (threadIdx.x >> 5);
       item < p.heads * items; item += warps) {
    const int h = item / items;
    const int c = item - h * items;
    const int kvh = h / group;
    const int dim = kvh * kD + 4 * lane;
    float4 q = LoadCoherent4(p.qkv + h * kD + 4 * lane);
    float4 k_new = LoadCoherent4(p.qkv + p.q_dim + dim);
    const float4 v_new = LoadCoherent4(p.qkv + p.q_dim + p.kv_dim + dim);
    if (p.inv_freq != nullptr) {
      q = Rotate(q, p.inv_freq, fpos);
      k_new = Rotate(k_new, p.inv_freq, fpos);
    }
    if (c == items - 1 && h % group == 0) {
      const int64_t at = static_cast<int64_t>(pos) * p.kv_dim + dim;
      __stcg(reinterpret_cast<float4*>(l.k_cache + at), k_new);
      __stcg(reinterpret_cast<float4*>(l.v_cache + at), v_new);
    }
    float m = -INFINITY, sum = 0.0f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const int j1 = min(keys, (c + 1) * item_keys);
    for (int j0 = c * item_keys; j0 < j1; j0 += kKeyBatch) {
      float4 kv[kKeyBatch], vv[kKeyBatch];
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u) {
        const int j = j0 + u;
        const int64_t at = static_cast<int64_t>(j) * p.kv_dim + dim;
        kv[u] = j < pos ? LoadCoherent4(l.k_cache + at) : k_new;
        vv[u] = j < pos ? LoadCoherent4(l.v_cache + at) : v_new;
      }
      float s[kKeyBatch];
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u) s[u] = Dot4(q, kv[u]);
      const float total = ReduceMany<kKeyBatch>(s);
      // Every lane needs every score: lane 4 u holds key ReducedIndex(4 u).
      float batch_max = -INFINITY;
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u) {
        const int idx = ReducedIndex<kKeyBatch>(4 * u);
        const float score = __shfl_sync(0xffffffffu, total, 4 * u) * p.scale;
        s[idx] = j0 + idx < j1 ? score : -INFINITY;
      }
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u) batch_max = fmaxf(batch_max, s[u]);
      const float m_new = fmaxf(m, batch_max);
      const float keep = expf(m - m_new);
      sum *= keep;
      acc = make_float4(acc.x * keep, acc.y * keep, acc.z * keep, acc.w * keep);
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u) {
        const float e = j0 + u < j1 ? expf(s[u] - m_new) : 0.0f;
        sum += e;
        acc = make_float4(fmaf(e, vv[u].x, acc.x), fmaf(e, vv[u].y, acc.y),
                          fmaf(e, vv[u].z, acc.z), fmaf(e, vv[u].w, acc.w));
      }
      m = m_new;
    }
    float* out = p.partials +
                 (static_cast<int64_t>(h) * p.max_items + c) * kPartialStride;
    __stcg(reinterpret_cast<float4*>(out + 4 * lane), acc);
    if (lane == 0) {
      __stcg(out + kD, m);
      __stcg(out + kD + 1, sum);
    }
    __threadfence();  // The partial is visible before the count says so.
    __syncwarp();
    unsigned done = 0;
    if (lane == 0) done = atomicAdd(head_counts + h, 1u) + 1;
    done = __shfl_sync(0xffffffffu, done, 0);
    if (done == static_cast<unsigned>(items)) {
      __threadfence();
      MergeHead(p, h, items);
      if (lane == 0) head_counts[h] = 0;
    }
  }
}

template <typename T, bool kGated>
__global__ void __launch_bounds__(kThreads, 1)
    DecodeStackKernel(const __grid_constant__ Params p) {
  extern __shared__ uint4 stage[];  // [kStages][kThreads], then sums
  auto sums =
      reinterpret_cast<float(*)[kMaxBlockRows]>(stage + kStages * kThreads);
  __shared__ float scratch[32];
  __shared__ UnitExtras extras;
  Cursor producer = NextSegment<kGated>(p, Cursor{}, 0);
  for (int i = 0; i < kStages; ++i) {
    Issue<kGated>(p, producer, stage + i * kThreads + threadIdx.x);
  }
  int slot = 0;
  float xr[kMaxChunks][8];
  // One call site for each phase kind keeps the kernel's code small.
  for (int layer = 0; layer < p.num_layers; ++layer) {
    const DecodeStackLayer& l = p.layers[layer];
    Mark(p, layer, 0);
    for (int phase = 0; phase < kPhases; ++phase) {
      const float* src = phase == kOut ? p.context : phase == kDown ? p.h : p.x;
      const int width = phase == kOut    ? p.q_dim
                        : phase == kDown ? p.inter
                                         : p.hidden;
      const void* norm_w = phase == kQkv  ? l.attn_norm_w
                           : phase == kUp ? l.mlp_norm_w
                                          : nullptr;
      const void* norm_b = phase == kQkv  ? l.attn_norm_b
                           : phase == kUp ? l.mlp_norm_b
                                          : nullptr;
      LoadInput<T>(p, src, width, norm_w, norm_b, xr, scratch);
      Mark(p, layer, 1 + 3 * phase);
      GemvPhase<T, kGated>(p, layer, phase, stage, producer, slot, xr, sums,
                           extras);
      Mark(p, layer, 2 + 3 * phase);
      GridSync(p.barrier);
      Mark(p, layer, 3 + 3 * phase);
      if (phase == kQkv) {
        AttentionPhase(p, layer);
        Mark(p, layer, 1 + 3 * kPhases);
        GridSync(p.barrier);
        Mark(p, layer, 2 + 3 * kPhases);
      }
    }
  }
  CpAsyncWait<0>();
}

// Calls f(kernel) with the build for this dtype and MLP.
template <typename F>
absl::Status WithKernel(const DecodeStackShape& shape, F&& f) {
  auto by_mlp = [&](auto type) -> absl::Status {
    using T = decltype(type);
    return shape.gated ? f(DecodeStackKernel<T, true>)
                       : f(DecodeStackKernel<T, false>);
  };
  if (shape.dtype == DType::kF16) return by_mlp(__half{});
  if (shape.dtype == DType::kBF16) return by_mlp(__nv_bfloat16{});
  return absl::InvalidArgumentError("DecodeStack: f16 or bf16 weights only");
}

// Attention items a head aims at: one per warp of the largest grid.
int ItemsPerHead(int64_t heads, int grid) {
  return static_cast<int>(std::max<int64_t>(1, grid * kWarps / heads));
}

int64_t MaxItems(const DecodeStackShape& shape) {
  return std::min<int64_t>(CeilDiv(shape.capacity, kMinItemKeys),
                           ItemsPerHead(shape.heads, kMaxGrid) + 1);
}

}  // namespace

std::string DecodeStackUnsupported(const DeviceContext& ctx,
                                   const DecodeStackShape& shape,
                                   int64_t layers) {
  if (shape.head_dim != kD) return absl::StrCat("head_dim ", shape.head_dim);
  if (shape.dtype != DType::kF16 && shape.dtype != DType::kBF16) {
    return "weights neither f16 nor bf16";
  }
  if (layers < 1 || layers > kDecodeStackMaxLayers) {
    return absl::StrCat(layers, " layers");
  }
  if (shape.kv_heads < 1 || shape.heads % shape.kv_heads != 0) {
    return "heads not a multiple of kv heads";
  }
  for (int64_t width : {shape.hidden, shape.heads * kD, shape.inter}) {
    if (width % 8 != 0 || width > kMaxWidth) {
      return absl::StrCat("width ", width);
    }
  }
  if (ctx.sm_count() > kMaxGrid) return absl::StrCat(ctx.sm_count(), " SMs");
  if (shape.heads > kDecodeStackMaxHeads) {
    return absl::StrCat(shape.heads, " heads");
  }
  const int64_t most_units = std::max(
      {shape.hidden, (shape.heads + 2 * shape.kv_heads) * kD, shape.inter});
  if (CeilDiv(most_units, ctx.sm_count()) > kMaxBlockUnits) {
    return absl::StrCat(most_units, " rows over ", ctx.sm_count(), " SMs");
  }
  int cooperative = 0;
  cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch,
                         ctx.info().device);
  if (cooperative == 0) return "no cooperative launch";
  int blocks = 0;
  // The opt-in into the kernel's shared memory, once, before the launches.
  const absl::Status s = WithKernel(shape, [&](auto kernel) {
    return cudaFuncSetAttribute(kernel,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(kSmemBytes)) == cudaSuccess &&
                   cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                       &blocks, kernel, kThreads, kSmemBytes) == cudaSuccess
               ? absl::OkStatus()
               : absl::InternalError("shared memory opt-in or occupancy");
  });
  if (!s.ok() || blocks < 1) return "no room for a block on an SM";
  return "";
}

int64_t DecodeStackScratchFloats(const DecodeStackShape& shape) {
  const int64_t q_dim = shape.heads * kD, kv_dim = shape.kv_heads * kD;
  return (q_dim + 2 * kv_dim) + q_dim + shape.inter +
         shape.heads * MaxItems(shape) * kPartialStride;
}

absl::Status DecodeStack(DeviceContext& ctx, const DecodeStackShape& shape,
                         absl::Span<const DecodeStackLayer> layers,
                         const int32_t* position, const float* inv_freq,
                         float* x, float* scratch, unsigned* barrier,
                         uint64_t* timeline) {
  // DecodeStackUnsupported (device queries and the shared memory opt-in,
  // cached by the caller) has accepted the shape; only the layer count is
  // checked again here.
  if (layers.empty() || layers.size() > kDecodeStackMaxLayers) {
    return absl::InvalidArgumentError(
        absl::StrCat("DecodeStack: ", layers.size(), " layers"));
  }
  Params p = {};
  std::copy(layers.begin(), layers.end(), p.layers);
  p.num_layers = static_cast<int>(layers.size());
  p.hidden = static_cast<int>(shape.hidden);
  p.q_dim = static_cast<int>(shape.heads * kD);
  p.kv_dim = static_cast<int>(shape.kv_heads * kD);
  p.inter = static_cast<int>(shape.inter);
  p.heads = static_cast<int>(shape.heads);
  p.kv_heads = static_cast<int>(shape.kv_heads);
  p.max_items = static_cast<int>(MaxItems(shape));
  p.items_per_head = ItemsPerHead(shape.heads, ctx.sm_count());
  p.activation = static_cast<int>(shape.activation);
  p.rms_norm = shape.rms_norm;
  p.norm_eps = shape.norm_eps;
  p.scale = 1.0f / std::sqrt(static_cast<float>(kD));
  p.position = position;
  p.inv_freq = inv_freq;
  p.x = x;
  p.qkv = scratch;
  p.context = p.qkv + p.q_dim + 2 * p.kv_dim;
  p.h = p.context + p.q_dim;
  p.partials = p.h + p.inter;
  p.barrier = barrier;
  p.timeline = timeline;
  const int grid = ctx.sm_count();
  const int64_t units[kPhases] = {shape.heads * kD + 2 * shape.kv_heads * kD,
                                  shape.hidden, shape.inter, shape.hidden};
  for (int phase = 0; phase < kPhases; ++phase) {
    for (int b = 0; b <= grid; ++b) {
      p.unit_begin[phase][b] = static_cast<int>(units[phase] * b / grid);
    }
  }
  return WithKernel(shape, [&](auto kernel) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(ctx.sm_count()));
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = kSmemBytes;
    config.stream = ctx.stream();
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeCooperative;
    attribute[0].val.cooperative = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    (void)cudaLaunchKernelEx(&config, kernel, p);
    return LastLaunchStatus("DecodeStackKernel");
  });
}

}  // namespace dynsparse::cuda
