// PipelinedSplitAttention (pipelined_attention.h): one block of 4 warps per
// (query tile, head, key split) on mma.sync m16n8k16 (f16 operands, f32
// accumulate), as in attention.cu's tensor-core prefill. The difference is
// the staging: stages of K and V arrive by cp.async in a three-stage ring
// (two stages in flight while one is computed), and the cache rows of the
// keys after next are loaded into registers one stage ahead, so a key list
// never stalls the copies. The stages hold the cache's elements as they
// are: an f32 cache's are packed to f16 fragments by the warps, an f16
// cache's are the fragments already and come from ldmatrix. A stage holds
// 32 keys, or 64 for an f16 cache with 64-row tiles (StageKeys). A
// six-stage f16 ring of 32 keys timed as the three-stage one (16 / 64 / 200
// rows over 16k keys: 109 / 159 / 531 against 108 / 155 / 530 us;
// h200_run86, h200_run87).
//
// A warp owns 16 query rows and 1 / kKeyParts of each stage's keys: with 16
// rows or fewer the four warps split every stage's keys four ways (tile of
// 16 rows), with 17-32 two ways (tile of 32), else they split the rows (64).
// One warp computing a whole stage alone was the kernel's critical path:
// Nsight Compute (h200_run74) saw the three idle warps of a 16-row block
// waiting at the stage barrier for half of all cycles. The warps of a row
// group merge their online-softmax states through shared memory at the end.
// Causality per warp: a warp skips the stages past its last row and masks
// only the stages that straddle its rows, as the flash prefill does.
#include <algorithm>
#include <climits>
#include <cmath>
#include <mutex>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/mma_f16.cuh"
#include "kernels/cuda/pipelined_attention.h"

namespace dynsparse::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kStages = 3;

// Keys per pipeline stage: 64 for an f16 cache whose warps split the rows
// (each warp then runs twice the tensor-core work per barrier and softmax
// rescale), else 32 (a 64-key f32 ring would not fit two blocks an SM).
template <int kKeyParts, typename KvT>
constexpr int StageKeys() {
  return !std::is_same_v<KvT, float> && kKeyParts == 1
             ? kPipelinedStageKeys
             : kPipelinedStageKeys / 2;
}

// Row strides in elements of the cache type KvT. f32: K is read as float2
// at (key 8j + g, column 16s + 2t): with D + 8 the 16 lanes of each half warp
// hit 32 distinct banks; V is read as single floats at (key 16i + 2t (+1,
// +8, +9), column 8n + g): with D + 4 the 32 lanes do. f16: both are read by
// ldmatrix, eight 16-byte rows a phase; D + 8 halves shift consecutive rows
// 4 banks apart, so the eight rows cover 32 banks. All keep rows 16-byte
// aligned for cp.async.
template <int D, int kKeyParts, typename KvT>
struct RingLayout {
  static constexpr int kStageKeys = StageKeys<kKeyParts, KvT>();
  static constexpr int kKStride = D + 8;
  static constexpr int kVStride = std::is_same_v<KvT, float> ? D + 4 : D + 8;
  static constexpr int kStageElems = kStageKeys * (kKStride + kVStride);
  static constexpr int kRingBytes =
      kStages * kStageElems * static_cast<int>(sizeof(KvT));
  static constexpr int kSmemBytes =
      kRingBytes + kStages * kStageKeys * static_cast<int>(sizeof(int));
};

// This thread's share of a stage's copies: kPieces 16-byte pieces (of
// kPieceElems elements) per key row, kThreads / kPieces rows per pass.
template <int D, typename KvT, int kStageKeys>
struct StageShare {
  static constexpr int kPieceElems = 16 / static_cast<int>(sizeof(KvT));
  static constexpr int kPieces = D / kPieceElems;
  static constexpr int kRowsPerPass = kThreads / kPieces;
  static constexpr int kRows = kStageKeys / kRowsPerPass;
};

template <int kKeyParts>
constexpr int BlockRows() {
  return 16 * kWarps / kKeyParts;
}

template <int D, int kKeyParts, typename KvT>
__global__ void __launch_bounds__(kThreads, 2)
    PipelinedSplitKernel(const PipelinedSplitArgs a) {
  using Layout = RingLayout<D, kKeyParts, KvT>;
  constexpr int kStageKeys = Layout::kStageKeys;
  constexpr int kStageElems = Layout::kStageElems;
  using Share = StageShare<D, KvT, kStageKeys>;
  constexpr int kBlockRows = BlockRows<kKeyParts>();
  constexpr int kWarpKeys = kStageKeys / kKeyParts;  // of each stage
  constexpr int kKStride = Layout::kKStride;
  constexpr int kVStride = Layout::kVStride;
  constexpr bool kF32 = std::is_same_v<KvT, float>;
  // One extern array for every instantiation (its type must not vary); an
  // f16 ring views it as halves.
  extern __shared__ __align__(16) float smem[];
  KvT* const ring = reinterpret_cast<KvT*>(smem);
  int* stage_pos = reinterpret_cast<int*>(ring + kStages * kStageElems);
  __shared__ int block_max_pos;
  const KvT* const k_cache = static_cast<const KvT*>(a.k);
  const KvT* const v_cache = static_cast<const KvT*>(a.v);

  const int h = blockIdx.y;
  const int kvh = h / a.group;
  const int q0 = blockIdx.x * kBlockRows;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int g = lane >> 2;             // fragment row group
  const int t = lane & 3;              // fragment column pair
  const int group = warp / kKeyParts;  // the warp's 16 rows of the tile
  const int part = warp % kKeyParts;   // its keys of each stage
  const int key0 = part * kWarpKeys;
  const int64_t q_stride = static_cast<int64_t>(a.heads) * D;
  const int64_t kv_stride = static_cast<int64_t>(a.heads / a.group) * D;

  if (threadIdx.x == 0) block_max_pos = -1;
  __syncthreads();
  if (threadIdx.x < kBlockRows && q0 + static_cast<int>(threadIdx.x) < a.n) {
    atomicMax(&block_max_pos, a.positions[q0 + threadIdx.x]);
  }
  const bool active = q0 + group * 16 < a.n;  // the warp has query rows
  const int row_a = q0 + group * 16 + g;      // this thread's two rows
  const int row_b = row_a + 8;
  const int pos_a = row_a < a.n ? a.positions[row_a] : -1;
  const int pos_b = row_b < a.n ? a.positions[row_b] : -1;
  // The warp's position range: a stage whose first key lies past every row
  // is skipped, and one whose last key lies at or before every row needs no
  // mask. Rows arrive by ascending position, so a tile's first warps skip
  // most of the causal tail.
  const WarpPositions warp_pos = WarpPositionRange(pos_a, pos_b);
  const int warp_max = warp_pos.max, warp_min = warp_pos.min;

  // Q fragments (f16) for the D/16 k-steps, scaled by scale * log2(e) so
  // that the softmax runs on exp2.
  uint32_t qf[D / 16][4];
  LoadQueryFragments<D>(
      qf, a.q + row_a * q_stride + static_cast<int64_t>(h) * D, q_stride,
      row_a < a.n, row_b < a.n, t, a.scale * static_cast<float>(M_LOG2E));
  __syncthreads();
  const int visible =
      block_max_pos < 0
          ? 0
          : VisibleKeyCount(a.key_rows, a.max_keys, block_max_pos);
  const int begin = static_cast<int>(blockIdx.z) * a.split_keys;
  const int end = min(visible, begin + a.split_keys);
  const int tiles =
      end > begin ? (end - begin + kStageKeys - 1) / kStageKeys : 0;

  // Cache rows of this thread's keys of `tile` (-1: past the split).
  const int piece = (threadIdx.x % Share::kPieces) * Share::kPieceElems;
  const int first_row = threadIdx.x / Share::kPieces;
  int rows[Share::kRows];
  const auto fetch_rows = [&](int tile) {
    const int k0 = begin + tile * kStageKeys;
#pragma unroll
    for (int i = 0; i < Share::kRows; ++i) {
      const int j = k0 + first_row + i * Share::kRowsPerPass;
      rows[i] = j >= end ? -1 : (a.key_rows == nullptr ? j : a.key_rows[j]);
    }
  };
  // Starts the copies of `tile` (rows fetched) into its stage; rows past the
  // split are zero-filled (the cache past the sequence may hold NaN).
  const auto issue = [&](int tile) {
    const int stage = tile % kStages;
    KvT* ks = ring + stage * kStageElems;
    KvT* vs = ks + kStageKeys * kKStride;
#pragma unroll
    for (int i = 0; i < Share::kRows; ++i) {
      const int r = first_row + i * Share::kRowsPerPass;
      const int64_t off = static_cast<int64_t>(max(rows[i], 0)) * kv_stride +
                          static_cast<int64_t>(kvh) * D + piece;
      CpAsync16(ks + r * kKStride + piece, k_cache + off, rows[i] >= 0);
      CpAsync16(vs + r * kVStride + piece, v_cache + off, rows[i] >= 0);
      if (piece == 0) {
        stage_pos[stage * kStageKeys + r] = rows[i] >= 0 ? rows[i] : INT_MAX;
      }
    }
  };

  if (tiles > 0) fetch_rows(0);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) {
      issue(s);
      if (s + 1 < tiles) fetch_rows(s + 1);
    }
    CpAsyncCommit();
  }

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.f, l_b = 0.f;
  // f16 stages: this lane's ldmatrix row. K (x4): key (lane & 7) of an 8-key
  // block, columns 16s + 8 (lane >> 3), so matrices 0, 1 are step s's B
  // fragment and 2, 3 step s + 1's. V (x4, transposed): key (lane & 15),
  // columns 8 (lane >> 4) of a 16-key block; key (lane & 7), columns
  // 8 (lane >> 3) with 8 keys a warp.
  const int k_lane = (key0 + (lane & 7)) * kKStride + 8 * (lane >> 3);
  const int v_lane = kWarpKeys == 8
                         ? (key0 + (lane & 7)) * kVStride + 8 * (lane >> 3)
                         : (key0 + (lane & 15)) * kVStride + 8 * (lane >> 4);

  for (int tile = 0; tile < tiles; ++tile) {
    CpAsyncWait<kStages - 2>();
    __syncthreads();  // `tile` landed; every warp is done with tile - 1.
    const int next = tile + kStages - 1;
    if (next < tiles) {
      issue(next);  // into tile - 1's stage
      if (next + 1 < tiles) fetch_rows(next + 1);
    }
    CpAsyncCommit();
    if (!active) continue;

    const int stage = tile % kStages;
    const KvT* ks = ring + stage * kStageElems;
    const KvT* vs = ks + kStageKeys * kKStride;
    const int* kpos = stage_pos + stage * kStageKeys;
    if (kpos[key0] > warp_max) continue;  // No row sees these keys.
    const bool masked = kpos[key0 + kWarpKeys - 1] > warp_min;

    float sc[kWarpKeys / 8][4];
#pragma unroll
    for (int j = 0; j < kWarpKeys / 8; ++j) {
      sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
    }
    if constexpr (kF32) {
#pragma unroll
      for (int s = 0; s < D / 16; ++s) {
#pragma unroll
        for (int j = 0; j < kWarpKeys / 8; ++j) {
          const float* kr = ks + (key0 + 8 * j + g) * kKStride + 16 * s + 2 * t;
          const float2 lo = *reinterpret_cast<const float2*>(kr);
          const float2 hi = *reinterpret_cast<const float2*>(kr + 8);
          MmaF16(sc[j], qf[s], PackHalf2(lo.x, lo.y), PackHalf2(hi.x, hi.y));
        }
      }
    } else {
#pragma unroll
      for (int s = 0; s < D / 16; s += 2) {
#pragma unroll
        for (int j = 0; j < kWarpKeys / 8; ++j) {
          uint32_t b[4];
          LdMatrixX4(b, ks + k_lane + 8 * j * kKStride + 16 * s);
          MmaF16(sc[j], qf[s], b[0], b[1]);
          MmaF16(sc[j], qf[s + 1], b[2], b[3]);
        }
      }
    }
    if (masked) {
#pragma unroll
      for (int j = 0; j < kWarpKeys / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key_pos = kpos[key0 + 8 * j + 2 * t + e];
          if (key_pos > pos_a) sc[j][e] = -INFINITY;
          if (key_pos > pos_b) sc[j][2 + e] = -INFINITY;
        }
      }
    }
    OnlineSoftmaxUpdate(sc, o, m_a, m_b, l_a, l_b);
    if constexpr (kWarpKeys == 8) {
      // Eight keys: the upper half of the k = 16 step is zero.
      const uint32_t p[4] = {PackHalf2(sc[0][0], sc[0][1]),
                             PackHalf2(sc[0][2], sc[0][3]), 0u, 0u};
      if constexpr (kF32) {
        const float* v0 = vs + (key0 + 2 * t) * kVStride + g;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          const float* vc = v0 + 8 * n;
          MmaF16(o[n], p, PackHalf2(vc[0], vc[kVStride]), 0u);
        }
      } else {
        // Matrix m of an ldmatrix: the 8 keys x columns 32nn + 8m.
#pragma unroll
        for (int nn = 0; nn < D / 32; ++nn) {
          uint32_t b[4];
          LdMatrixX4Trans(b, vs + v_lane + 32 * nn);
#pragma unroll
          for (int m = 0; m < 4; ++m) MmaF16(o[4 * nn + m], p, b[m], 0u);
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < kWarpKeys / 16; ++i) {
        // The probabilities of keys 16i..16i+15: S's C fragments are P's A.
        const uint32_t p[4] = {PackHalf2(sc[2 * i][0], sc[2 * i][1]),
                               PackHalf2(sc[2 * i][2], sc[2 * i][3]),
                               PackHalf2(sc[2 * i + 1][0], sc[2 * i + 1][1]),
                               PackHalf2(sc[2 * i + 1][2], sc[2 * i + 1][3])};
        if constexpr (kF32) {
          // V's B fragment (k = key, n = dim): keys 16i + 2t, +1 and +8, +9
          // of column 8n + g, packed from the f32 stage.
          const float* v0 = vs + (key0 + 16 * i + 2 * t) * kVStride + g;
#pragma unroll
          for (int n = 0; n < D / 8; ++n) {
            const float* vc = v0 + 8 * n;
            MmaF16(o[n], p, PackHalf2(vc[0], vc[kVStride]),
                   PackHalf2(vc[8 * kVStride], vc[9 * kVStride]));
          }
        } else {
          // Matrices (keys 0-7 | 8-15) x (columns 16nn | 16nn + 8): the
          // B fragments of output blocks 2nn and 2nn + 1.
#pragma unroll
          for (int nn = 0; nn < D / 16; ++nn) {
            uint32_t b[4];
            LdMatrixX4Trans(b, vs + v_lane + 16 * i * kVStride + 16 * nn);
            MmaF16(o[2 * nn], p, b[0], b[1]);
            MmaF16(o[2 * nn + 1], p, b[2], b[3]);
          }
        }
      }
    }
  }
  CpAsyncWait<0>();

#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    l_a += __shfl_xor_sync(0xffffffffu, l_a, off);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, off);
  }
  if constexpr (kKeyParts > 1) {
    // The row group's other warps hand their states to its first warp
    // through the idle ring, lane for lane (same fragment layout):
    // [warp][value][lane], value 0-3 m_a, m_b, l_a, l_b, then o.
    constexpr int kValues = 4 + D / 2;
    static_assert(kWarps * kValues * 32 * static_cast<int>(sizeof(float)) <=
                  Layout::kRingBytes);
    __syncthreads();  // every warp is done with the ring
    float* mine = smem + warp * kValues * 32 + lane;
    if (part != 0) {
      mine[0] = m_a;
      mine[32] = m_b;
      mine[64] = l_a;
      mine[96] = l_b;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) mine[(4 + 4 * n + e) * 32] = o[n][e];
      }
    }
    __syncthreads();
    if (part != 0) return;
#pragma unroll
    for (int other = 1; other < kKeyParts; ++other) {
      const float* theirs = mine + other * kValues * 32;
      const float om_a = theirs[0], om_b = theirs[32];
      const float top_a = fmaxf(m_a, om_a), top_b = fmaxf(m_b, om_b);
      const float sa = m_a == -INFINITY ? 0.f : exp2f(m_a - top_a);
      const float sb = m_b == -INFINITY ? 0.f : exp2f(m_b - top_b);
      const float osa = om_a == -INFINITY ? 0.f : exp2f(om_a - top_a);
      const float osb = om_b == -INFINITY ? 0.f : exp2f(om_b - top_b);
      m_a = top_a;
      m_b = top_b;
      l_a = l_a * sa + theirs[64] * osa;
      l_b = l_b * sb + theirs[96] * osb;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] = o[n][0] * sa + theirs[(4 + 4 * n) * 32] * osa;
        o[n][1] = o[n][1] * sa + theirs[(5 + 4 * n) * 32] * osa;
        o[n][2] = o[n][2] * sb + theirs[(6 + 4 * n) * 32] * osb;
        o[n][3] = o[n][3] * sb + theirs[(7 + 4 * n) * 32] * osb;
      }
    }
  }
  const auto write = [&](int row, float m, float l, int first) {
    if (row >= a.n) return;
    WriteSplitPartial<D>(
        a.partials + ((static_cast<int64_t>(row) * a.heads + h) * a.splits +
                      blockIdx.z) *
                         (D + 2),
        t, SplitPartialMax(m), l, o, first);
  };
  write(row_a, m_a, l_a, 0);
  write(row_b, m_b, l_b, 2);
}

template <int D, int kKeyParts, typename KvT>
absl::Status Launch(DeviceContext& ctx, const PipelinedSplitArgs& a) {
  constexpr int kSmem = RingLayout<D, kKeyParts, KvT>::kSmemBytes;
  static std::once_flag once;
  static cudaError_t attr_error = cudaSuccess;
  std::call_once(once, [] {
    attr_error = cudaFuncSetAttribute(
        PipelinedSplitKernel<D, kKeyParts, KvT>,
        cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  });
  DS_CUDA_RETURN_IF_ERROR(attr_error);
  const dim3 grid(static_cast<unsigned>(CeilDiv(a.n, BlockRows<kKeyParts>())),
                  static_cast<unsigned>(a.heads),
                  static_cast<unsigned>(a.splits));
  PipelinedSplitKernel<D, kKeyParts, KvT>
      <<<grid, kThreads, kSmem, ctx.stream()>>>(a);
  return LastLaunchStatus("PipelinedSplitKernel");
}

// The key parts for n rows (tiles of 16, 32 or 64 rows): every warp gets
// rows to compute.
int KeyParts(int64_t n) {
  return static_cast<int>(16 * kWarps / PipelinedTileRows(n));
}

template <int D, typename KvT>
absl::Status LaunchForRows(DeviceContext& ctx, const PipelinedSplitArgs& a) {
  switch (KeyParts(a.n)) {
    case 4:
      return Launch<D, 4, KvT>(ctx, a);
    case 2:
      return Launch<D, 2, KvT>(ctx, a);
    default:
      return Launch<D, 1, KvT>(ctx, a);
  }
}

template <typename KvT>
absl::Status LaunchForHeadDim(DeviceContext& ctx, const PipelinedSplitArgs& a) {
  return a.head_dim == 64 ? LaunchForRows<64, KvT>(ctx, a)
                          : LaunchForRows<128, KvT>(ctx, a);
}

}  // namespace

absl::Status PipelinedSplitAttention(DeviceContext& ctx,
                                     const PipelinedSplitArgs& args) {
  if (!PipelinedSplitSupported(args.head_dim) || args.n < 0 ||
      args.heads <= 0 || args.group <= 0 || args.heads % args.group != 0 ||
      args.splits <= 0 || args.split_keys % kPipelinedStageKeys != 0 ||
      static_cast<int64_t>(args.splits) * args.split_keys < args.max_keys) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pipelined attention: unsupported ", args.heads, "/", args.group,
        " heads x ", args.head_dim, ", ", args.splits, " splits of ",
        args.split_keys, " keys for ", args.max_keys));
  }
  for (const void* p :
       {static_cast<const void*>(args.q), static_cast<const void*>(args.k),
        static_cast<const void*>(args.v),
        static_cast<const void*>(args.partials)}) {
    if (p == nullptr || !IsAligned(p, 16)) {
      return absl::InvalidArgumentError(
          "pipelined attention: q, k, v and partials must be 16-byte "
          "aligned device pointers");
    }
  }
  if (args.n == 0) return absl::OkStatus();
  return args.kv_half ? LaunchForHeadDim<__half>(ctx, args)
                      : LaunchForHeadDim<float>(ctx, args);
}

}  // namespace dynsparse::cuda
