// DejaVu's sparse MLP for one decode row in one launch (sparse_mlp.h).
//
// As two launches (GatherGemv, then GatherGemvT's partial kernel) each half
// of OPT-66B's keep-0.1 MLP moved 68 MB in ~22 us against ~16 us of bytes:
// ramp-up, tail and the launch boundary between them (results/bench/
// h200_run46). Here the transposed gather's grid, 8 column blocks x S splits
// of the kept units, is launched as clusters of the 8 column blocks of one
// split. Each block first computes the up projection of an eighth of its
// split's units (a block reduction per unit) and pushes those activations
// into every block of the cluster (cluster_push.cuh); every block then runs
// the transposed gather over the split's units for its columns, as
// GatherGemvT does; the block that finishes a column block last sums its
// splits (or, without counters, ReduceSplits does). Staging the weights by
// cp.async instead of registers (run 54) took the gated Llama-2-7B MLP from
// 17.5 to 13.9 us at keep 0.1, and left the ReLU shapes where they were.
// Clusters of 4, 12 and 16 column blocks are built too: a cluster must fit
// in one GPC, so the size decides how many of the 264 block slots (two
// blocks an SM) a wave fills and how many units it holds, and the splits
// (clusters) decide the partial sums the reduction reads; 12 and 16 blocks
// are non-portable cluster sizes. A grid of one block an SM (each block
// asking for half an SM's shared memory) has about half the clusters, so
// other sizes and splits (results/bench/h100_run179).
#include <cooperative_groups.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/cluster_push.cuh"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/sparse_loads.cuh"
#include "kernels/cuda/sparse_mlp.h"
#include "kernels/cuda/sparse_ops.h"

namespace dynsparse::cuda {
namespace {

constexpr int kMaxThreads = 768;  // Hidden sizes up to 12288 (OPT-175B).
// Two blocks an SM (<= 40 registers, <= 100 KB of shared memory each).
constexpr int kMaxWarps = kMaxThreads / 32;

template <int A>
__device__ __forceinline__ float Activate(float v) {
  return Act<static_cast<Activation>(A)>(v);
}

// Block of d / 16 threads (d a multiple of 512: whole warps): each thread
// holds 2 of the 8-wide chunks of a d-wide row in the up phase, and in the
// down phase 8 of the block's d / kCluster columns, as one of tc = d /
// (8 * kCluster) column threads in each of kGroups = kCluster / 2 unit
// groups (the same registers and bytes in flight at every cluster size;
// run 95's clusters of 4 gave each thread 16 columns, spilled, and lost a
// third). Weights are staged through shared memory by cp.async in
// thread-private slots (a thread reads back only what it copied, so no
// barrier guards them): a thread keeps kUpStages
// units of the up projection, then kDownStages units of the transposed
// gather, in flight without holding them in registers, and the gather's
// first copies go out before the block waits for the cluster's activations.
// The split's ids are read once into shared memory: read from global memory
// before each copy, their latency sat in every iteration's path (the largest
// stall of both loops, results/bench/h200_run97).
template <bool kGated, int kCluster>
struct StageTile {
  static_assert(kCluster % 4 == 0 && kCluster <= 16);
  static constexpr int kGroups = kCluster / 2;  // Of the transposed gather.
  static constexpr int kMaxSplitUnits = FusedSparseMlpMaxSplitUnits(kCluster);
  static constexpr int kMaxBlockUnits =
      (kMaxSplitUnits + kCluster - 1) / kCluster;
  static constexpr int kRowsPerUnit = kGated ? 2 : 1;
  static constexpr int kUpStages = kGated ? 2 : 4;
  static constexpr int kDownStages = 8;
  // 16-byte slots a thread: 2 chunks a row in the up phase, 1 a unit in the
  // transposed gather (the phases reuse them).
  static constexpr int kSlots =
      std::max(kRowsPerUnit * 2 * kUpStages, kDownStages);
};

template <typename T, int A, bool kGated, int kCluster>
__global__ void __launch_bounds__(kMaxThreads, 2)
    FusedSparseMlpKernel(const float* __restrict__ x, int d,
                         const T* __restrict__ w_up, const void* b_up,
                         FloatKind bk, const T* __restrict__ w_gate,
                         const void* b_gate, FloatKind gk,
                         const T* __restrict__ w_down_t,
                         const int32_t* __restrict__ ids, int k, int splits,
                         bool early, float* __restrict__ partial,
                         const void* b_down, FloatKind dk,
                         int32_t* __restrict__ counters, float* __restrict__ y,
                         uint64_t* __restrict__ timeline) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  using Tile = StageTile<kGated, kCluster>;
  constexpr int kGroups = Tile::kGroups;
  constexpr int kMaxBlockUnits = Tile::kMaxBlockUnits;
  constexpr int kRows = Tile::kRowsPerUnit;
  constexpr int kUpStages = Tile::kUpStages;
  constexpr int kDownStages = Tile::kDownStages;
  // Pushed by the cluster's blocks.
  __shared__ float s_h[Tile::kMaxSplitUnits];
  __shared__ int32_t s_ids[Tile::kMaxSplitUnits];
  __shared__ uint64_t s_pushed;  // Counts the bytes of s_h that arrived.
  __shared__ float s_red[kMaxWarps][kRows * kMaxBlockUnits];  // Up, gate.
  // Staging slots [slot][thread], 16 bytes each; s_sum at the end. A warp's
  // copies fill 512 contiguous bytes here: off 128-byte lines (the static
  // arrays above end where they may), each copy was split in two and every
  // weight sector read twice from L2 (run 98: 44 against 40 us).
  extern __shared__ __align__(128) uint4 s_stage[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int threads = blockDim.x, warps = threads >> 5;
  const int tc = threads / kGroups;
  const int rank = static_cast<int>(cluster.block_rank());
  const int s = blockIdx.y;
  const int j0 = static_cast<int>(static_cast<int64_t>(s) * k / splits);
  const int n = static_cast<int>(static_cast<int64_t>(s + 1) * k / splits) - j0;
  // Units j0 + rank + kCluster * i.
  const int mine = (n - rank + kCluster - 1) / kCluster;
  auto slot = [&](int i) -> uint4* { return s_stage + i * threads + tid; };
  // Timeline runs only: thread 0's global time at each FusedMlpEvent.
  auto stamp = [&](int at, uint64_t value) {
    if (timeline != nullptr && tid == 0) {
      timeline[(blockIdx.y * gridDim.x + blockIdx.x) * kFusedMlpStamps + at] =
          value;
    }
  };
  auto mark = [&](FusedMlpEvent e) {
    stamp(static_cast<int>(e), GlobalTimerNs());
  };
  // 1. Up projection of this block's units: thread t's chunks t and
  // t + threads of each row, kUpStages units ahead.
  auto copy_up = [&](int i) {
    if (i < mine) {
      const int64_t row = s_ids[rank + kCluster * i];
      const int base = (i % kUpStages) * kRows * 2;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t at = row * d + 8 * (tid + c * threads);
        CpAsync16(slot(base + c), w_up + at);
        if constexpr (kGated) CpAsync16(slot(base + 2 + c), w_gate + at);
      }
    }
    CpAsyncCommit();  // Empty past the end: the wait count stays fixed.
  };
  // `early`: the ids were complete before the kernel ahead of this one
  // began (CudaBackend::GatherMlp), so with programmatic dependent launch
  // they and the first stages' weights are read before PdlWait and overlap
  // that kernel (the split reduction, a norm); x is its output, read after.
  // A kernel releases its successor only after its own PdlWait, so whatever
  // the kernels before it wrote is complete when this one starts.
  auto read_ids = [&] {
    for (int q = tid; q < n; q += threads) s_ids[q] = ids[j0 + q];
  };
  if (early) {
    read_ids();
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kUpStages - 1; ++i) copy_up(i);
  }
  PdlWait();
  mark(FusedMlpEvent::kBegins);
  stamp(kFusedMlpSmSlot, SmId());
  if (!early) read_ids();
  if (tid == 0) PushBarrierInit(&s_pushed, static_cast<uint32_t>(n) * 4);
  float xv[2][8];
  LoadX8(x + 8 * tid, xv[0]);
  LoadX8(x + 8 * (tid + threads), xv[1]);
  __syncthreads();  // s_ids, s_pushed.
  ClusterArriveRelaxed();
  if (!early) {
#pragma unroll
    for (int i = 0; i < kUpStages - 1; ++i) copy_up(i);
  }
  for (int i = 0; i < mine; ++i) {
    copy_up(i + kUpStages - 1);
    CpAsyncWait<kUpStages - 1>();
    const int base = (i % kUpStages) * kRows * 2;
    float acc = 0.f, accg = 0.f;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float wv[8];
      Convert8(*reinterpret_cast<const Raw8<T>*>(slot(base + c)), wv);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc = fmaf(wv[e], xv[c][e], acc);
      if constexpr (kGated) {
        Convert8(*reinterpret_cast<const Raw8<T>*>(slot(base + 2 + c)), wv);
#pragma unroll
        for (int e = 0; e < 8; ++e) accg = fmaf(wv[e], xv[c][e], accg);
      }
    }
    acc = WarpSum(acc);
    if constexpr (kGated) accg = WarpSum(accg);
    if (lane == 0) {
      s_red[warp][i] = acc;
      if constexpr (kGated) s_red[warp][kMaxBlockUnits + i] = accg;
    }
  }
  __syncthreads();
  mark(FusedMlpEvent::kUpDone);
  ClusterWait();  // Every block's s_pushed is initialised.
  if (tid < mine) {
    float sum = 0.f, sumg = 0.f;
    for (int w = 0; w < warps; ++w) {
      sum += s_red[w][tid];
      if constexpr (kGated) sumg += s_red[w][kMaxBlockUnits + tid];
    }
    const int q = rank + kCluster * tid;
    const int64_t row = s_ids[q];
    const float v = sum + LoadAsFloat(b_up, bk, row, 0.f);
    const float h =
        kGated ? Activate<A>(sumg + LoadAsFloat(b_gate, gk, row, 0.f)) * v
               : Activate<A>(v);
    for (int r = 0; r < kCluster; ++r) Push(&s_h[q], h, &s_pushed, r);
  }

  // 3's copies start now (they need only the ids): thread (col, group)
  // takes units group, group + kGroups, ... of the split for its 8 columns.
  const int col = tid % tc, group = tid / tc;
  const int64_t c0 = (static_cast<int64_t>(rank) * tc + col) * 8;
  const int my_n = n > group ? (n - group + kGroups - 1) / kGroups : 0;
  auto copy_down = [&](int m) {
    if (m < my_n) {
      CpAsync16(
          slot(m % kDownStages),
          w_down_t + static_cast<int64_t>(s_ids[group + kGroups * m]) * d + c0);
    }
    CpAsyncCommit();
  };
  CpAsyncWait<0>();  // The up stages' empty groups; slots are reused below.
#pragma unroll
  for (int m = 0; m < kDownStages - 1; ++m) copy_down(m);

  // 2. The split's activations, pushed by every block of the cluster.
  PushBarrierWait(&s_pushed);
  mark(FusedMlpEvent::kActivationsIn);

  // 3. Transposed gather over the split's units for this block's columns.
  float acc[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) acc[e] = 0.f;
  for (int m = 0; m < my_n; ++m) {
    copy_down(m + kDownStages - 1);
    CpAsyncWait<kDownStages - 1>();
    float wv[8];
    Convert8(*reinterpret_cast<const Raw8<T>*>(slot(m % kDownStages)), wv);
    const float a = s_h[group + kGroups * m];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = fmaf(a, wv[e], acc[e]);
  }
  CpAsyncWait<0>();
  __syncthreads();  // s_sum overlays other threads' slots.
  mark(FusedMlpEvent::kDownDone);
  // Group 0's acc += the other groups' (in group order, so the sum does not
  // depend on timing); s_sum overlays the staging slots.
  float* s_sum = reinterpret_cast<float*>(s_stage);  // [kGroups - 1][tc * 8]
  auto sum_groups = [&] {
    if (group > 0) {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        s_sum[(group - 1) * tc * 8 + col * 8 + e] = acc[e];
    }
    __syncthreads();
    if (group == 0) {
      for (int g = 0; g < kGroups - 1; ++g) {
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] += s_sum[g * tc * 8 + col * 8 + e];
      }
    }
  };
  sum_groups();
  if (group == 0) {
    float4* dst =
        reinterpret_cast<float4*>(partial + static_cast<int64_t>(s) * d + c0);
    dst[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    dst[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  }
  mark(FusedMlpEvent::kWritten);
  // No cluster barrier at the end: no block reads another's shared memory,
  // and each has received all its pushes before it gets here.
  if (counters == nullptr) return;  // ReduceSplits sums the splits.
  // The split reduction in this launch: the block that finishes its columns
  // last sums every split's partial of them (group g splits g, g + kGroups,
  // ..., then the groups in order: a fixed order whichever block is last)
  // (ArrivesLast resets its column's counter). As a kernel of its
  // own the reduction cost a launch boundary and ~3 us at OPT-66B keep 0.1
  // (results/bench/h200_run111).
  // The column block is blockIdx.x (the cluster spans the grid's x), read
  // again here rather than kept in a register across the loops above.
  int32_t* counter = counters + blockIdx.x;
  if (!ArrivesLast(counter, splits)) return;
  // The loop is not unrolled: a few splits a group, and unrolled it spilled.
  for (float& a : acc) a = 0.f;
#pragma unroll 1
  for (int p = group; p < splits; p += kGroups) {
    // Written by other SMs in this launch: through L2, not L1.
    const float4* src = reinterpret_cast<const float4*>(
        partial + static_cast<int64_t>(p) * d + c0);
    const float4 lo = __ldcg(src), hi = __ldcg(src + 1);
    acc[0] += lo.x, acc[1] += lo.y, acc[2] += lo.z, acc[3] += lo.w;
    acc[4] += hi.x, acc[5] += hi.y, acc[6] += hi.z, acc[7] += hi.w;
  }
  sum_groups();  // Group 0 read s_sum before the barriers above.
  if (group == 0) {
#pragma unroll
    for (int e = 0; e < 8; ++e)
      y[c0 + e] = acc[e] + LoadAsFloat(b_down, dk, c0 + e, 0.f);
  }
#else
  __trap();  // Launched only on sm_90+ (FusedSparseMlpPlan).
#endif
}

// Dynamic shared memory: the larger of the two phases' slots
// (16 bytes a thread each, d / 16 threads) and s_sum.
size_t StagingSmem(int64_t d, bool gated, int cluster) {
  const int64_t slots =
      gated ? StageTile<true, 8>::kSlots    // The same at every cluster
            : StageTile<false, 8>::kSlots;  // size.
  const int64_t groups = cluster / 2;
  return std::max<size_t>(
      static_cast<size_t>(slots * (d / 16) * 16),
      static_cast<size_t>((groups - 1) * (d / cluster) * 4));
}

// A grid of one block an SM asks for more than half an SM's shared memory,
// so that no two blocks share one.
size_t LaunchSmem(const DeviceContext& ctx, int64_t d, bool gated, int cluster,
                  bool one_block_an_sm) {
  const size_t staging = StagingSmem(d, gated, cluster);
  if (!one_block_an_sm) return staging;
  return std::max(staging,
                  static_cast<size_t>(ctx.info().shared_memory_per_sm / 2));
}

cudaLaunchConfig_t Config(const DeviceContext& ctx, int64_t d, bool gated,
                          int cluster, bool one_block_an_sm, int splits,
                          cudaLaunchAttribute* attributes) {
  return ClusterLaunchConfig(
      dim3(static_cast<unsigned>(cluster), static_cast<unsigned>(splits)),
      dim3(static_cast<unsigned>(d / 16)),
      LaunchSmem(ctx, d, gated, cluster, one_block_an_sm), ctx.stream(),
      cluster, ctx.programmatic_launch(), attributes);
}

// Calls f with the kernel for the weight type, activation, gating and
// cluster size (4, 8, 12 or 16).
template <typename F>
absl::Status ByKernel(DType dtype, Activation act, bool gated, int cluster,
                      F&& f) {
  auto pick = [&](auto t) -> absl::Status {
    using T = decltype(t);
    auto by_gate = [&](auto a_tag) -> absl::Status {
      constexpr int A = decltype(a_tag)::value;
      if (cluster == 4) {
        return gated ? f(FusedSparseMlpKernel<T, A, true, 4>, t)
                     : f(FusedSparseMlpKernel<T, A, false, 4>, t);
      }
      if (cluster == 12) {
        return gated ? f(FusedSparseMlpKernel<T, A, true, 12>, t)
                     : f(FusedSparseMlpKernel<T, A, false, 12>, t);
      }
      if (cluster == 16) {
        return gated ? f(FusedSparseMlpKernel<T, A, true, 16>, t)
                     : f(FusedSparseMlpKernel<T, A, false, 16>, t);
      }
      return gated ? f(FusedSparseMlpKernel<T, A, true, 8>, t)
                   : f(FusedSparseMlpKernel<T, A, false, 8>, t);
    };
    switch (act) {
      case Activation::kRelu:
        return by_gate(
            std::integral_constant<int, static_cast<int>(Activation::kRelu)>{});
      case Activation::kSilu:
        return by_gate(
            std::integral_constant<int, static_cast<int>(Activation::kSilu)>{});
      case Activation::kGelu:
        return by_gate(
            std::integral_constant<int, static_cast<int>(Activation::kGelu)>{});
      case Activation::kGeluTanh:
        return by_gate(
            std::integral_constant<int,
                                   static_cast<int>(Activation::kGeluTanh)>{});
    }
    return absl::InvalidArgumentError("FusedSparseMlp: unknown activation");
  };
  if (!IsFusedSparseMlpClusterSize(cluster)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedSparseMlp: clusters of ", cluster, " (4, 8, 12 or 16)"));
  }
  switch (dtype) {
    case DType::kF16:
      return pick(__half{});
    case DType::kBF16:
      return pick(__nv_bfloat16{});
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("FusedSparseMlp: weights of ", DTypeName(dtype)));
  }
}

// Clusters of `cluster` blocks that fit on the GPU at once, 0 on error.
int MaxActiveClusters(const DeviceContext& ctx, int64_t d, DType dtype,
                      bool gated, Activation activation, int cluster,
                      bool one_block_an_sm) {
  int clusters = 0;
  const absl::Status status = ByKernel(
      dtype, activation, gated, cluster,
      [&](auto kernel, auto t) -> absl::Status {
        // Above 48 KB of dynamic shared memory needs the opt-in, set to
        // the most any hidden size or grid asks for.
        DS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
            kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
            static_cast<int>(LaunchSmem(ctx, kMaxThreads * 16, gated, cluster,
                                        /*one_block_an_sm=*/true))));
        // Above 8 blocks is a non-portable cluster size (sm_90 allows 16).
        if (cluster > 8) {
          DS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
              kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        }
        cudaLaunchAttribute attributes[2];
        cudaLaunchConfig_t config =
            Config(ctx, d, gated, cluster, one_block_an_sm, 1, attributes);
        config.numAttrs = 1;
        DS_CUDA_RETURN_IF_ERROR(
            cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
        return absl::OkStatus();
      });
  return status.ok() ? std::max(clusters, 0) : 0;
}

}  // namespace

bool IsFusedSparseMlpClusterSize(int cluster) {
  return cluster == 4 || cluster == 8 || cluster == 12 || cluster == 16;
}

FusedSparseMlpGrid FusedSparseMlpClusters(const DeviceContext& ctx, int64_t d,
                                          DType dtype, bool gated,
                                          Activation activation, int cluster,
                                          bool one_block_an_sm) {
  // Whole warps of d / 16 threads, split evenly into the cluster / 2 unit
  // groups of the transposed gather (clusters of 12: hidden a multiple of
  // 1536).
  if (ctx.info().major < 9 || d % 512 != 0 || d / 16 > kMaxThreads ||
      (dtype != DType::kF16 && dtype != DType::kBF16) ||
      !IsFusedSparseMlpClusterSize(cluster) || (d / 16) % (cluster / 2) != 0) {
    return {};
  }
  const int clusters = MaxActiveClusters(ctx, d, dtype, gated, activation,
                                         cluster, one_block_an_sm);
  if (clusters == 0) return {};
  return {cluster, clusters, one_block_an_sm};
}

int FusedSparseMlpSplits(const FusedSparseMlpGrid& grid, const Tensor& x,
                         const Tensor& w_up, const Tensor* w_gate,
                         const Tensor& w_down_t, int64_t k) {
  const int64_t d = x.numel();
  const bool shape_ok =
      grid.clusters > 0 && x.dim(0) == 1 && w_up.dim(1) == d &&
      w_down_t.dim(1) == d && w_down_t.dtype() == w_up.dtype() &&
      IsAligned(x.raw_data(), 16) && IsAligned(w_up.raw_data(), 16) &&
      IsAligned(w_down_t.raw_data(), 16) &&
      (w_gate == nullptr || (w_gate->dtype() == w_up.dtype() &&
                             IsAligned(w_gate->raw_data(), 16))) &&
      k > 0;
  if (!shape_ok) return 0;
  // One wave of clusters, each split within the shared-memory capacity.
  const int64_t splits = std::min<int64_t>(grid.clusters, k);
  if (CeilDiv(k, splits) > FusedSparseMlpMaxSplitUnits(grid.cluster)) return 0;
  return static_cast<int>(splits);
}

FusedSparseMlpLaunch FirstFittingGrid(
    std::initializer_list<FusedSparseMlpGrid> grids, const Tensor& x,
    const Tensor& w_up, const Tensor* w_gate, const Tensor& w_down_t,
    int64_t k) {
  for (const FusedSparseMlpGrid& grid : grids) {
    const int splits = FusedSparseMlpSplits(grid, x, w_up, w_gate, w_down_t, k);
    if (splits > 0) return {grid, splits};
  }
  return {};
}

absl::Status FusedSparseMlp(DeviceContext& ctx, const Tensor& x,
                            const Tensor& w_up, const Tensor& b_up,
                            const Tensor* w_gate, const Tensor* b_gate,
                            const Tensor& w_down_t, const Tensor& b_down,
                            const int32_t* ids, int64_t k,
                            Activation activation,
                            const FusedSparseMlpLaunch& launch, float* scratch,
                            int32_t* counters, Tensor* y, uint64_t* timeline) {
  const int64_t d = x.numel();
  const int cluster = launch.grid.cluster, splits = launch.splits;
  if (splits <= 0 ||
      CeilDiv(k, splits) > FusedSparseMlpMaxSplitUnits(cluster)) {
    return absl::InvalidArgumentError(
        absl::StrCat("FusedSparseMlp: ", k, " units over ", splits,
                     " splits of clusters of ", cluster));
  }
  const void* bg = w_gate && !b_gate->empty() ? b_gate->raw_data() : nullptr;
  RETURN_IF_ERROR(ByKernel(
      w_up.dtype(), activation, w_gate != nullptr, cluster,
      [&](auto kernel, auto t) -> absl::Status {
        using T = decltype(t);
        cudaLaunchAttribute attributes[2];
        cudaLaunchConfig_t config =
            Config(ctx, d, w_gate != nullptr, cluster,
                   launch.grid.one_block_an_sm, splits, attributes);
        DS_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(
            &config, kernel, x.data<float>(), static_cast<int>(d),
            static_cast<const T*>(w_up.raw_data()),
            b_up.empty() ? nullptr : b_up.raw_data(),
            b_up.empty() ? FloatKind::kNone : ToFloatKind(b_up.dtype()),
            w_gate ? static_cast<const T*>(w_gate->raw_data()) : nullptr, bg,
            bg ? ToFloatKind(b_gate->dtype()) : FloatKind::kNone,
            static_cast<const T*>(w_down_t.raw_data()), ids,
            static_cast<int>(k), splits, launch.early_copies, scratch,
            b_down.empty() ? nullptr : b_down.raw_data(),
            b_down.empty() ? FloatKind::kNone : ToFloatKind(b_down.dtype()),
            counters, y->data<float>(), timeline));
        return LastLaunchStatus("FusedSparseMlpKernel");
      }));
  if (counters != nullptr) return absl::OkStatus();  // Summed in-kernel.
  return ReduceSplits(ctx, scratch, splits, d, 1, b_down, y);
}

}  // namespace dynsparse::cuda
