// FlashAttention-2-style causal prefill (flash_prefill.h says what and why).
//
// Block: kWarps warps x 16 query rows of one head; grid (heads, query tiles),
// heaviest (last) tiles first so the causal tail is made of short blocks, and
// the heads of one GQA group side by side so their K/V tiles share L2. Each
// warp keeps its Q fragments (f16) and output accumulators (f32) in registers
// for the whole kernel; S = Q K^T and O += P V run on mma.sync m16n8k16 with
// K and V fragments from ldmatrix (V transposed by .trans), and the C
// fragment of S is the A fragment of P, so P never leaves registers. K/V
// tiles of 64 keys are double-buffered with cp.async: the copy of tile i+1
// runs while tile i is multiplied. Masks are applied only on tiles that hold
// a key some row of the warp must not see; tiles no row of the warp sees are
// skipped by that warp.
#include <cuda_fp16.h>

#include <climits>
#include <cmath>
#include <mutex>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/flash_prefill.h"
#include "kernels/cuda/kv_access.cuh"
#include "kernels/cuda/mma_f16.cuh"

namespace dynsparse::cuda {
namespace {

constexpr int kKeys = 64;  // keys per tile

struct FlashArgs {
  const float* q;            // f32 [n, heads * D]
  const __half* k;           // f16 [max_keys, kv_heads * D], compacted keys
  const __half* v;           // same
  const int32_t* positions;  // [n] query positions
  const int32_t* key_pos;    // [max_keys] key positions, ascending; null: j
  float* out;                // f32 [n, heads * D]
  int n;
  int group;  // query heads per kv head
  int max_keys;
  int64_t q_stride;   // floats per q / out row
  int64_t kv_stride;  // halves per K / V row
  float scale_log2;   // softmax scale * log2(e): scores go through exp2
};

__device__ __forceinline__ int KeyPos(const FlashArgs& a, int j) {
  return a.key_pos == nullptr ? j : __ldg(a.key_pos + j);
}

// Keys visible to a query at `pos`: a prefix of the (ascending) keys.
__device__ __forceinline__ int VisiblePrefix(const FlashArgs& a, int pos) {
  return VisibleKeyCount(a.key_pos, a.max_keys, pos);
}

template <int D>
constexpr int TileStride() {
  return D + 8;  // halves per staged row: 16-byte rows shifted 4 banks apart
}

template <int D>
constexpr int SmemBytes() {
  return 2 * 2 * kKeys * TileStride<D>() * static_cast<int>(sizeof(__half));
}

// kMinBlocks caps the registers (launch bounds): 4 warps x 2 blocks per SM
// need ~200 registers and do not spill; 3 blocks cap them at 168 and spill a
// few bytes.
template <int D, int kWarps, int kMinBlocks>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks)
    FlashPrefillKernel(const FlashArgs a) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kStride = TileStride<D>();
  constexpr int kTileHalves = kKeys * kStride;
  extern __shared__ uint4 smem_raw[];
  __half* smem = reinterpret_cast<__half*>(smem_raw);  // [stage][K, V]
  __shared__ int block_max_pos;

  const int h = blockIdx.x;
  const int kvh = h / a.group;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * (16 * kWarps);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int g = lane >> 2;  // fragment row group
  const int t = lane & 3;   // fragment column pair

  if (threadIdx.x == 0) block_max_pos = -1;
  const int row_a = q0 + warp * 16 + g;  // this thread's two query rows
  const int row_b = row_a + 8;
  const int pos_a = row_a < a.n ? a.positions[row_a] : -1;
  const int pos_b = row_b < a.n ? a.positions[row_b] : -1;
  const WarpPositions warp_pos = WarpPositionRange(pos_a, pos_b);
  const int warp_max = warp_pos.max, warp_min = warp_pos.min;

  // Q fragments (f16, unscaled) for all D/16 k-steps, read once from f32.
  uint32_t qf[D / 16][4];
  {
    const float* qa = a.q + static_cast<int64_t>(row_a) * a.q_stride +
                      static_cast<int64_t>(h) * D + 2 * t;
    const float* qb = qa + 8 * a.q_stride;
    const bool ok_a = row_a < a.n, ok_b = row_b < a.n;
#pragma unroll
    for (int s = 0; s < D / 16; ++s) {
      const float2 a0 = ok_a ? *reinterpret_cast<const float2*>(qa + 16 * s)
                             : make_float2(0.f, 0.f);
      const float2 a1 = ok_a ? *reinterpret_cast<const float2*>(qa + 16 * s + 8)
                             : make_float2(0.f, 0.f);
      const float2 b0 = ok_b ? *reinterpret_cast<const float2*>(qb + 16 * s)
                             : make_float2(0.f, 0.f);
      const float2 b1 = ok_b ? *reinterpret_cast<const float2*>(qb + 16 * s + 8)
                             : make_float2(0.f, 0.f);
      qf[s][0] = PackHalf2(a0.x, a0.y);
      qf[s][1] = PackHalf2(b0.x, b0.y);
      qf[s][2] = PackHalf2(a1.x, a1.y);
      qf[s][3] = PackHalf2(b1.x, b1.y);
    }
  }
  __syncthreads();
  if (lane == 0) atomicMax(&block_max_pos, warp_max);
  __syncthreads();
  const int kend = block_max_pos < 0 ? 0 : VisiblePrefix(a, block_max_pos);
  const int tiles = (kend + kKeys - 1) / kKeys;

  // Stages one 64-key tile of K and V; rows at or past kend read as zero.
  // Thread i copies column chunk i % (D / 8) of rows i / (D / 8) + k *
  // kRowStep: one base address per thread, constant steps (few registers).
  constexpr int kChunksPerRow = D / 8;
  constexpr int kRowStep = kThreads / kChunksPerRow;
  static_assert(kThreads % kChunksPerRow == 0 && kKeys % kRowStep == 0);
  const int load_row = static_cast<int>(threadIdx.x) / kChunksPerRow;
  const int load_col = (static_cast<int>(threadIdx.x) % kChunksPerRow) * 8;
  const int64_t load_offset = static_cast<int64_t>(load_row) * a.kv_stride +
                              static_cast<int64_t>(kvh) * D + load_col;
  const int smem_offset = load_row * kStride + load_col;
  const auto load_tile = [&](int k0, int stage) {
    __half* ks = smem + stage * 2 * kTileHalves + smem_offset;
    const int64_t tile = load_offset + static_cast<int64_t>(k0) * a.kv_stride;
#pragma unroll
    for (int i = 0; i < kKeys / kRowStep; ++i) {
      const bool ok = k0 + load_row + i * kRowStep < kend;
      const int64_t off = ok ? tile + i * kRowStep * a.kv_stride : 0;
      CpAsync16(ks + i * kRowStep * kStride, a.k + off, ok);
      CpAsync16(ks + kTileHalves + i * kRowStep * kStride, a.v + off, ok);
    }
    CpAsyncCommit();
  };

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.f, l_b = 0.f;
  // Per-lane ldmatrix offsets. K (x4): matrices (keys 0-7 | 8-15) x (dims
  // 0-7 | 8-15) give the B fragments of two 8-key column blocks. V (x4,
  // transposed): keys 0-15 x (dims 0-7 | 8-15) give two 8-dim blocks.
  const int k_lane =
      ((lane & 7) + 8 * (lane >> 4)) * kStride + 8 * ((lane >> 3) & 1);
  const int v_lane = (lane & 15) * kStride + 8 * (lane >> 4);

  if (tiles > 0) load_tile(0, 0);
  for (int it = 0; it < tiles; ++it) {
    const int k0 = it * kKeys;
    if (it + 1 < tiles) {
      load_tile(k0 + kKeys, (it + 1) & 1);
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    const __half* ks = smem + (it & 1) * 2 * kTileHalves;
    const __half* vs = ks + kTileHalves;
    const int last = min(k0 + kKeys, kend) - 1;
    if (KeyPos(a, k0) <= warp_max) {  // some row of this warp sees a key
      const bool masked = k0 + kKeys > kend || KeyPos(a, last) > warp_min;
      float sc[kKeys / 8][4];
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j) {
        sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
      }
#pragma unroll
      for (int s = 0; s < D / 16; ++s) {
#pragma unroll
        for (int jj = 0; jj < kKeys / 16; ++jj) {
          uint32_t b[4];
          LdMatrixX4(b, ks + k_lane + 16 * jj * kStride + 16 * s);
          MmaF16(sc[2 * jj], qf[s], b[0], b[1]);
          MmaF16(sc[2 * jj + 1], qf[s], b[2], b[3]);
        }
      }
      if (masked) {
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int key = k0 + 8 * j + 2 * t + e;
            const int kp = key < kend ? KeyPos(a, key) : INT_MAX;
            if (kp > pos_a) sc[j][e] = -INFINITY;
            if (kp > pos_b) sc[j][2 + e] = -INFINITY;
          }
        }
      }
      float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j) {
        mx_a = fmaxf(mx_a, fmaxf(sc[j][0], sc[j][1]));
        mx_b = fmaxf(mx_b, fmaxf(sc[j][2], sc[j][3]));
      }
#pragma unroll
      for (int off = 1; off <= 2; off <<= 1) {
        mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, off));
        mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, off));
      }
      const float new_a = fmaxf(m_a, mx_a), new_b = fmaxf(m_b, mx_b);
      // exp2 arguments relative to the scaled running max; a row with no
      // visible key yet (max -inf) uses 0 so that every weight is 0, not NaN.
      const float base_a = new_a == -INFINITY ? 0.f : new_a * a.scale_log2;
      const float base_b = new_b == -INFINITY ? 0.f : new_b * a.scale_log2;
      const float alpha_a = exp2f(m_a * a.scale_log2 - base_a);
      const float alpha_b = exp2f(m_b * a.scale_log2 - base_b);
      m_a = new_a;
      m_b = new_b;
      float sum_a = 0.f, sum_b = 0.f;
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          sc[j][e] = exp2f(fmaf(sc[j][e], a.scale_log2, -base_a));
          sc[j][2 + e] = exp2f(fmaf(sc[j][2 + e], a.scale_log2, -base_b));
          sum_a += sc[j][e];
          sum_b += sc[j][2 + e];
        }
      }
      l_a = l_a * alpha_a + sum_a;
      l_b = l_b * alpha_b + sum_b;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] *= alpha_a;
        o[n][1] *= alpha_a;
        o[n][2] *= alpha_b;
        o[n][3] *= alpha_b;
      }
#pragma unroll
      for (int i = 0; i < kKeys / 16; ++i) {
        const uint32_t p[4] = {PackHalf2(sc[2 * i][0], sc[2 * i][1]),
                               PackHalf2(sc[2 * i][2], sc[2 * i][3]),
                               PackHalf2(sc[2 * i + 1][0], sc[2 * i + 1][1]),
                               PackHalf2(sc[2 * i + 1][2], sc[2 * i + 1][3])};
#pragma unroll
        for (int nn = 0; nn < D / 16; ++nn) {
          uint32_t b[4];
          LdMatrixX4Trans(b, vs + v_lane + 16 * i * kStride + 16 * nn);
          MmaF16(o[2 * nn], p, b[0], b[1]);
          MmaF16(o[2 * nn + 1], p, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // This stage is consumed before it is refilled.
  }

#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    l_a += __shfl_xor_sync(0xffffffffu, l_a, off);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, off);
  }
  const float inv_a = l_a > 0.f ? 1.f / l_a : 0.f;
  const float inv_b = l_b > 0.f ? 1.f / l_b : 0.f;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int64_t col = static_cast<int64_t>(h) * D + 8 * n + 2 * t;
    if (row_a < a.n) {
      *reinterpret_cast<float2*>(
          a.out + static_cast<int64_t>(row_a) * a.q_stride + col) =
          make_float2(o[n][0] * inv_a, o[n][1] * inv_a);
    }
    if (row_b < a.n) {
      *reinterpret_cast<float2*>(
          a.out + static_cast<int64_t>(row_b) * a.q_stride + col) =
          make_float2(o[n][2] * inv_b, o[n][3] * inv_b);
    }
  }
}

// K and V rows (cache row key_rows[j], or j) -> f16 row j of kh / vh; 8
// values per thread and step (width is a multiple of 8). An f32 cache is
// rounded; an f16 cache's listed rows are gathered as they are.
template <typename KvT>
__global__ void KvToHalfKernel(const KvT* k, const KvT* v,
                               const int32_t* key_rows, int64_t keys,
                               int64_t width, __half* kh, __half* vh) {
  const int64_t units = keys * (width / 8);
  for (int64_t u = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       u < units; u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = u / (width / 8);
    const int64_t col = (u % (width / 8)) * 8;
    const int64_t src =
        (key_rows == nullptr ? j : static_cast<int64_t>(key_rows[j])) * width +
        col;
    const int64_t dst = j * width + col;
    if constexpr (std::is_same_v<KvT, float>) {
      const float4 k0 = *reinterpret_cast<const float4*>(k + src);
      const float4 k1 = *reinterpret_cast<const float4*>(k + src + 4);
      const float4 v0 = *reinterpret_cast<const float4*>(v + src);
      const float4 v1 = *reinterpret_cast<const float4*>(v + src + 4);
      *reinterpret_cast<uint4*>(kh + dst) =
          make_uint4(PackHalf2(k0.x, k0.y), PackHalf2(k0.z, k0.w),
                     PackHalf2(k1.x, k1.y), PackHalf2(k1.z, k1.w));
      *reinterpret_cast<uint4*>(vh + dst) =
          make_uint4(PackHalf2(v0.x, v0.y), PackHalf2(v0.z, v0.w),
                     PackHalf2(v1.x, v1.y), PackHalf2(v1.z, v1.w));
    } else {
      *reinterpret_cast<uint4*>(kh + dst) =
          *reinterpret_cast<const uint4*>(k + src);
      *reinterpret_cast<uint4*>(vh + dst) =
          *reinterpret_cast<const uint4*>(v + src);
    }
  }
}

int64_t AlignUp(int64_t bytes) { return (bytes + 255) / 256 * 256; }

int64_t HalfCopyBytes(const DeviceAttentionArgs& args, int64_t max_keys) {
  return AlignUp(max_keys * args.num_kv_heads * args.head_dim *
                 static_cast<int64_t>(sizeof(__half)));
}

template <int D, int kWarps, int kMinBlocks>
absl::Status LaunchFlash(DeviceContext& ctx, const FlashArgs& a, int heads) {
  constexpr int kSmem = SmemBytes<D>();
  static std::once_flag once;
  static cudaError_t attr_error = cudaSuccess;
  std::call_once(once, [] {
    attr_error = cudaFuncSetAttribute(
        FlashPrefillKernel<D, kWarps, kMinBlocks>,
        cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  });
  DS_CUDA_RETURN_IF_ERROR(attr_error);
  const dim3 grid(static_cast<unsigned>(heads),
                  static_cast<unsigned>(CeilDiv(a.n, 16 * kWarps)));
  FlashPrefillKernel<D, kWarps, kMinBlocks>
      <<<grid, kWarps * 32, kSmem, ctx.stream()>>>(a);
  return LastLaunchStatus("FlashPrefillKernel");
}

}  // namespace

bool FlashPrefillSupported(const DeviceAttentionArgs& args) {
  const auto matrix = [](const Tensor* t, bool f16_too) {
    return t != nullptr && t->device() == Device::kCuda &&
           (t->dtype() == DType::kF32 ||
            (f16_too && t->dtype() == DType::kF16)) &&
           t->rank() == 2 && IsAligned(t->raw_data(), 16);
  };
  return (args.head_dim == 64 || args.head_dim == 128) &&
         args.head_ids == nullptr && args.positions != nullptr &&
         matrix(args.q, false) && matrix(args.out, false) &&
         matrix(args.k_cache, true) && matrix(args.v_cache, true) &&
         args.k_cache->dtype() == args.v_cache->dtype();
}

int64_t FlashPrefillScratchBytes(const DeviceAttentionArgs& args,
                                 int64_t max_keys) {
  return 2 * HalfCopyBytes(args, max_keys);
}

absl::Status FlashPrefillAttention(DeviceContext& ctx,
                                   const DeviceAttentionArgs& args,
                                   int64_t max_keys, void* scratch,
                                   FlashPrefillConfig config) {
  const int kind = config.warps * 10 + config.min_blocks;
  if (!FlashPrefillSupported(args) || scratch == nullptr ||
      (kind != 42 && kind != 43 && kind != 81)) {
    return absl::InvalidArgumentError(
        "flash prefill: needs f32 device q and out, f32 or f16 K/V caches of "
        "one type, head_dim 64 or 128, scratch and a config of 4x2, 4x3 or "
        "8x1");
  }
  const int64_t n = args.q->dim(0);
  const int64_t kv_width = args.num_kv_heads * args.head_dim;
  if (args.num_heads <= 0 || args.num_kv_heads <= 0 ||
      args.num_heads % args.num_kv_heads != 0 ||
      args.q->dim(1) != args.num_heads * args.head_dim ||
      args.out->shape() != args.q->shape() ||
      args.k_cache->dim(1) != kv_width ||
      args.v_cache->shape() != args.k_cache->shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flash prefill: shapes q ", args.q->DebugString(), " k ",
        args.k_cache->DebugString(), " v ", args.v_cache->DebugString(),
        " out ", args.out->DebugString(), " do not match ", args.num_heads, "/",
        args.num_kv_heads, " heads of ", args.head_dim));
  }
  int64_t keys = std::min(max_keys, args.k_cache->dim(0));
  if (args.key_rows != nullptr) {
    if (args.num_keys < 0 || args.num_keys > args.k_cache->dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flash prefill: ", args.num_keys, " listed keys for a cache of ",
          args.k_cache->dim(0), " rows"));
    }
    keys = std::min(keys, args.num_keys);
  }
  if (n == 0) return absl::OkStatus();
  const bool f16_cache = args.k_cache->dtype() == DType::kF16;
  // An f16 cache without a key list is read in place: the kernel reads rows
  // [0, keys) only, with the cache's row stride.
  const bool in_place = f16_cache && args.key_rows == nullptr;
  FlashArgs a;
  a.q = args.q->data<float>();
  if (in_place) {
    a.k = args.k_cache->data<__half>();
    a.v = args.v_cache->data<__half>();
  } else {
    a.k = static_cast<const __half*>(scratch);
    a.v = reinterpret_cast<const __half*>(static_cast<const char*>(scratch) +
                                          HalfCopyBytes(args, max_keys));
  }
  a.positions = args.positions;
  a.key_pos = args.key_rows;
  a.out = args.out->data<float>();
  a.n = static_cast<int>(n);
  a.group = static_cast<int>(args.num_heads / args.num_kv_heads);
  a.max_keys = static_cast<int>(keys);
  a.q_stride = args.q->dim(1);
  a.kv_stride = kv_width;
  a.scale_log2 = args.scale * static_cast<float>(M_LOG2E);
  if (keys > 0 && !in_place) {
    const int64_t units = keys * kv_width / 8;
    const int blocks = static_cast<int>(
        std::min<int64_t>(CeilDiv(units, 256), 8 * int64_t{ctx.sm_count()}));
    const auto copy = [&](auto kv) {
      using KvT = decltype(kv);
      KvToHalfKernel<KvT><<<blocks, 256, 0, ctx.stream()>>>(
          args.k_cache->data<KvT>(), args.v_cache->data<KvT>(), args.key_rows,
          keys, kv_width, const_cast<__half*>(a.k), const_cast<__half*>(a.v));
    };
    DispatchKv(*args.k_cache, copy);
    if (absl::Status s = LastLaunchStatus("KvToHalfKernel"); !s.ok()) return s;
  }
  const int heads = static_cast<int>(args.num_heads);
  const auto launch = [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    switch (kind) {
      case 81:
        return LaunchFlash<D, 8, 1>(ctx, a, heads);
      case 43:
        return LaunchFlash<D, 4, 3>(ctx, a, heads);
      default:
        return LaunchFlash<D, 4, 2>(ctx, a, heads);
    }
  };
  return args.head_dim == 64 ? launch(std::integral_constant<int, 64>{})
                             : launch(std::integral_constant<int, 128>{});
}

}  // namespace dynsparse::cuda
