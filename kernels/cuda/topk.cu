// Top-K and unit norms on the device (sparse_ops.h): the predictor's and the
// oracle's selections, computed without a host round trip.
#include <cooperative_groups.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/sparse_ops.h"

namespace dynsparse::cuda {
namespace {

// ---- Top-K ----------------------------------------------------------------

constexpr unsigned kFullMask = 0xffffffffu;

// Unsigned keys ordered as the floats (-0 reads as +0, as the CPU compares).
__device__ __forceinline__ uint32_t OrderedKey(float f) {
  const uint32_t u = __float_as_uint(f == 0.f ? 0.f : f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
// The float a key stands for (OrderedKey's inverse up to the sign of 0).
__device__ __forceinline__ float KeyValue(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// Rows of at most kRankMaxN scores: thread i counts the scores ranked above
// its own (larger, or equal at a lower id) and is picked when fewer than k
// are; picks are written in id order by a ballot prefix count.
constexpr int kRankMaxN = 256;

__global__ void __launch_bounds__(kRankMaxN)
    TopKRankKernel(const float* scores, int n, int k, int32_t* ids) {
  PdlWait();
  __shared__ uint32_t keys[kRankMaxN];
  __shared__ int warp_picks[kRankMaxN / 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* row = scores + static_cast<int64_t>(blockIdx.x) * n;
  if (tid < n) keys[tid] = OrderedKey(row[tid]);
  __syncthreads();
  bool pick = false;
  if (tid < n) {
    const uint32_t mine = keys[tid];
    int rank = 0;
    for (int j = 0; j < n; ++j) {
      const uint32_t other = keys[j];
      rank += other > mine || (other == mine && j < tid);
    }
    pick = rank < k;
  }
  const unsigned picks = __ballot_sync(kFullMask, pick);
  if (lane == 0) warp_picks[warp] = __popc(picks);
  __syncthreads();
  int at = __popc(picks & ((1u << lane) - 1u));
  for (int w = 0; w < warp; ++w) at += warp_picks[w];
  if (pick) ids[static_cast<int64_t>(blockIdx.x) * k + at] = tid;
}

// Larger rows: one block per row.
//  1. stage the keys in shared memory (kStaged) and find the row's range;
//  2. histogram of the scores over kBins equal-width bins of that range
//     (bin = floor((v - lo) * scale) is monotone in v, so whole bins above
//     the one holding the k-th largest are picked outright);
//  3. the threshold key inside that bin: by pairwise counts over its (few)
//     keys, or, when the bin holds more than kMaxCandidates (heavy ties, a
//     degenerate range), by an 8-bit radix select over the bin's keys;
//  4. keys above the threshold plus the lowest ids among those equal to it,
//     written in id order (each warp owns a contiguous segment).
// Equal-width value bins spread predictor scores (roughly normal) over many
// bins, unlike radix digits of the float bits, so one pass with little
// atomic contention replaces four (3686 of 36864 on the H200: 22 us, was
// 57-86 us; results/dejavu_speed). One SM does it all: spreading the passes
// over SMs is the way to the issue's <= 10 us.
constexpr int kSelectThreads = 1024;
constexpr int kSelectWarps = kSelectThreads / 32;
constexpr int kBins = 2 * kSelectThreads;  // Two per thread in the scan.
constexpr int kMaxCandidates = kSelectThreads;
constexpr int kLoadBatch = 8;  // Loads in flight per thread while staging.
// The range reduction reads one partial per lane.
static_assert(kSelectWarps == 32, "one warp minimum per lane");

struct SelectShared {
  int hist[kBins];
  uint32_t candidates[kMaxCandidates];
  uint32_t warp_min[kSelectWarps], warp_max[kSelectWarps];
  int warp_sum[kSelectWarps];
  int bin, need, in_bin, candidate_count, need_eq, radix_remaining;
  uint32_t threshold, radix_prefix;
};

__device__ __forceinline__ uint32_t WarpMinU(uint32_t v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    v = min(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}
__device__ __forceinline__ uint32_t WarpMaxU(uint32_t v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    v = max(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// The need-th largest of `count` candidate keys, and how many copies of it
// are picked (the first copy's thread writes both); thread-strided.
__device__ void ThresholdOfCandidates(const uint32_t* candidates, int count,
                                      int need, int threads,
                                      uint32_t* threshold, int* need_eq) {
  for (int t = threadIdx.x; t < count; t += threads) {
    const uint32_t mine = candidates[t];
    int greater = 0, equal = 0, equal_before = 0;
    for (int j = 0; j < count; ++j) {
      const uint32_t other = candidates[j];
      greater += other > mine;
      equal += other == mine;
      equal_before += other == mine && j < t;
    }
    if (equal_before == 0 && greater < need && need <= greater + equal) {
      *threshold = mine;
      *need_eq = need - greater;
    }
  }
}

// One radix-select step, by the first warp: lane l owns digits [8l, 8l + 8)
// of `counts` (256 digit counts at `shift`); finds, from the top, the digit
// where the count reaches the number still needed, and narrows the prefix.
__device__ void RadixDigitStep(const int* counts, uint32_t prefix, int shift,
                               uint32_t* radix_prefix, int* radix_remaining) {
  const int lane = threadIdx.x & 31;
  int local[8], sum = 0;
#pragma unroll
  for (int d = 0; d < 8; ++d) sum += (local[d] = counts[lane * 8 + d]);
  int above_incl = sum;  // Sum over this and higher lanes.
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const int t = __shfl_down_sync(kFullMask, above_incl, off);
    if (lane + off < 32) above_incl += t;
  }
  const int above = above_incl - sum, still = *radix_remaining;
  __syncwarp();
  if (above < still && still <= above_incl) {
    int cum = above;
    for (int d = 7; d >= 0; --d) {
      if (cum + local[d] >= still) {
        *radix_prefix = prefix | (static_cast<uint32_t>(lane * 8 + d) << shift);
        *radix_remaining = still - cum;
        break;
      }
      cum += local[d];
    }
  }
}

// A warp's keys above and equal to the threshold in [begin, end), read in
// steps of 32 up to begin + seg.
template <typename KeyAt>
__device__ void CountSegment(KeyAt key_at, int begin, int end, int seg,
                             uint32_t threshold, int* gt, int* eq) {
  const int lane = threadIdx.x & 31;
  int gt_count = 0, eq_count = 0;
  for (int i = begin + lane; i < begin + seg; i += 32) {
    const uint32_t key = i < end ? key_at(i) : 0u;
    gt_count += __popc(__ballot_sync(kFullMask, i < end && key > threshold));
    eq_count += __popc(__ballot_sync(kFullMask, i < end && key == threshold));
  }
  *gt = gt_count;
  *eq = eq_count;
}

// Writes a warp's picks of [begin, end) in id order from out[at]: keys above
// the threshold, and those equal while fewer than need_eq equal ones came
// before (eq_seen so far). Ids are id_offset + i.
template <typename KeyAt>
__device__ void WriteSegmentPicks(KeyAt key_at, int begin, int end, int seg,
                                  uint32_t threshold, int need_eq, int eq_seen,
                                  int at, int id_offset, int32_t* out) {
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1u;
  for (int i = begin + lane; i < begin + seg; i += 32) {
    const uint32_t key = i < end ? key_at(i) : 0u;
    const bool gt = i < end && key > threshold;
    const bool eq = i < end && key == threshold;
    const unsigned eq_mask = __ballot_sync(kFullMask, eq);
    const bool sel = gt || (eq && eq_seen + __popc(eq_mask & below) < need_eq);
    const unsigned sel_mask = __ballot_sync(kFullMask, sel);
    if (sel) out[at + __popc(sel_mask & below)] = id_offset + i;
    eq_seen += __popc(eq_mask);
    at += __popc(sel_mask);
  }
}

// Block prefix scan of kBinsT bin counts from the top, two bins a thread
// (thread t: bins kBinsT-1-2t and kBinsT-2-2t): the bin holding the k-th
// largest, how many of it are needed, and its count. counts(b) gives bin b's
// count; warp_sum holds a value per warp.
template <int kBinsT, typename Counts>
__device__ void FindThresholdBin(int k, Counts counts, int* warp_sum, int* bin,
                                 int* need, int* in_bin) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int b_hi = kBinsT - 1 - 2 * tid;
  const int c_hi = counts(b_hi), c_lo = counts(b_hi - 1);
  int incl = c_hi + c_lo;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const int t = __shfl_up_sync(kFullMask, incl, off);
    if (lane >= off) incl += t;
  }
  if (lane == 31) warp_sum[warp] = incl;
  __syncthreads();
  for (int w = 0; w < warp; ++w) incl += warp_sum[w];
  const int excl = incl - c_hi - c_lo;
  if (excl < k && k <= incl) {
    const bool in_hi = excl + c_hi >= k;
    *bin = in_hi ? b_hi : b_hi - 1;
    *need = k - (in_hi ? excl : excl + c_hi);
    *in_bin = in_hi ? c_hi : c_lo;
  }
  __syncthreads();
}

template <bool kStaged>
__global__ void __launch_bounds__(kSelectThreads)
    TopKSelectKernel(const float* scores, int n, int k, int32_t* ids) {
  PdlWait();
  extern __shared__ uint32_t staged_keys[];
  __shared__ SelectShared sh;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* row = scores + static_cast<int64_t>(blockIdx.x) * n;
  auto key_at = [&](int i) -> uint32_t {
    if constexpr (kStaged) {
      return staged_keys[i];
    } else {
      return OrderedKey(row[i]);
    }
  };

  // 1. Keys and range.
  uint32_t kmin = 0xffffffffu, kmax = 0u;
  for (int base = 0; base < n; base += kSelectThreads * kLoadBatch) {
    float v[kLoadBatch];
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int i = base + u * kSelectThreads + tid;
      v[u] = i < n ? row[i] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int i = base + u * kSelectThreads + tid;
      if (i < n) {
        const uint32_t key = OrderedKey(v[u]);
        if constexpr (kStaged) staged_keys[i] = key;
        kmin = min(kmin, key);
        kmax = max(kmax, key);
      }
    }
  }
  kmin = WarpMinU(kmin);
  kmax = WarpMaxU(kmax);
  if (lane == 0) {
    sh.warp_min[warp] = kmin;
    sh.warp_max[warp] = kmax;
  }
  for (int b = tid; b < kBins; b += kSelectThreads) sh.hist[b] = 0;
  if (tid == 0) sh.candidate_count = 0;
  __syncthreads();
  kmin = WarpMinU(sh.warp_min[lane]);
  kmax = WarpMaxU(sh.warp_max[lane]);
  const float lo = KeyValue(kmin), hi = KeyValue(kmax);
  const float range = __fsub_rn(hi, lo);
  float scale = range > 0.f ? __fdiv_rn(static_cast<float>(kBins), range) : 0.f;
  if (!isfinite(range) || !isfinite(scale)) scale = 0.f;  // One bin: radix.
  auto bin_of = [&](uint32_t key) -> int {
    const float t = __fmul_rn(__fsub_rn(KeyValue(key), lo), scale);
    return min(kBins - 1, __float2int_rz(t));
  };

  // 2. Histogram, then the bin holding the k-th largest: thread t scans
  // bins kBins-1-2t and kBins-2-2t (descending) in a block prefix sum.
  for (int i = tid; i < n; i += kSelectThreads) {
    atomicAdd(&sh.hist[bin_of(key_at(i))], 1);
  }
  __syncthreads();
  FindThresholdBin<kBins>(
      k, [&](int b) { return sh.hist[b]; }, sh.warp_sum, &sh.bin, &sh.need,
      &sh.in_bin);
  const int bin = sh.bin, need = sh.need, in_bin = sh.in_bin;

  // 3. The threshold key: the need-th largest key of the bin.
  if (in_bin <= kMaxCandidates) {
    for (int i = tid; i < n; i += kSelectThreads) {
      const uint32_t key = key_at(i);
      if (bin_of(key) == bin) {
        sh.candidates[atomicAdd(&sh.candidate_count, 1)] = key;
      }
    }
    __syncthreads();
    ThresholdOfCandidates(sh.candidates, in_bin, need, kSelectThreads,
                          &sh.threshold, &sh.need_eq);
    __syncthreads();
  } else {
    // Radix select over the bin's keys, 8 bits at a time from the top;
    // lanes with the same digit add once (scores often share a top byte).
    int* hist = sh.hist;  // Its first 256 counters.
    if (tid == 0) {
      sh.radix_prefix = 0;
      sh.radix_remaining = need;
    }
    __syncthreads();  // Every thread has read in_bin from the histogram.
    uint32_t mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int i = tid; i < 256; i += kSelectThreads) hist[i] = 0;
      __syncthreads();
      const uint32_t prefix = sh.radix_prefix;
      for (int base = 0; base < n; base += kSelectThreads) {
        const int i = base + tid;
        const uint32_t key = i < n ? key_at(i) : 0u;
        const bool in = i < n && (key & mask) == prefix && bin_of(key) == bin;
        const int digit = in ? static_cast<int>((key >> shift) & 255u) : -1;
        const unsigned peers = __match_any_sync(kFullMask, digit);
        if (in && lane == __ffs(peers) - 1) {
          atomicAdd(&hist[digit], __popc(peers));
        }
      }
      __syncthreads();
      if (tid < 32) {
        RadixDigitStep(hist, prefix, shift, &sh.radix_prefix,
                       &sh.radix_remaining);
      }
      mask |= 255u << shift;
      __syncthreads();
    }
    if (tid == 0) {
      sh.threshold = sh.radix_prefix;
      sh.need_eq = sh.radix_remaining;
    }
    __syncthreads();
  }

  // 4. Ordered compaction: each warp counts its picks with ballots and
  // writes them after those of the warps before it.
  const uint32_t threshold = sh.threshold;
  const int need_eq = sh.need_eq;
  const int seg = ((n + kSelectWarps - 1) / kSelectWarps + 31) & ~31;
  const int s0 = warp * seg, s1 = min(n, s0 + seg);
  int gt_count, eq_count;
  CountSegment(key_at, s0, s1, seg, threshold, &gt_count, &eq_count);
  int* warp_gt = sh.hist;  // The histogram is no longer needed.
  int* warp_eq = sh.hist + kSelectWarps;
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
  WriteSegmentPicks(key_at, s0, s1, seg, threshold, need_eq, eq_seen, at, 0,
                    ids + static_cast<int64_t>(blockIdx.x) * k);
}

// ---- Top-K over a cluster of blocks (sm_90) --------------------------------
//
// TopKSelectKernel's passes on one SM took 22 us for OPT-66B's 36864 scores,
// issue-bound (36 keys a thread a pass), and the MLP then waited for it
// (NOTES.md). Here a cluster of kTopKCluster blocks shares a row, each block
// staging a slice of it, and the same passes meet through distributed
// shared memory at cluster barriers: the range (min/max of every block),
// the histogram (each block sums the cluster's counts for its bins), the
// threshold bin's candidates (gathered from every block), and the ordered
// compaction (each block's pick counts give the next block its offset).
// Every block computes the same range, bin and threshold from the same
// cluster-wide sums, so the result matches the one-block kernel exactly.
constexpr int kTopKCluster = 8;  // Portable cluster size.
constexpr int kClusterThreads = 512;
constexpr int kClusterWarps = kClusterThreads / 32;
constexpr int kClusterBins =
    2 * kClusterThreads;                  // Two per thread in the scan.
constexpr int kClusterCandidates = 1024;  // Gathered threshold-bin keys.
constexpr int kClusterLoadBatch = 4;  // 8 spilled under the 64-register cap.
// Rows shorter than this keep the one-block kernel (little to spread).
constexpr int64_t kClusterMinN = 4096;

struct ClusterShared {
  int hist[kClusterBins];
  uint32_t local_candidates[kClusterCandidates];
  uint32_t candidates[kClusterCandidates];
  uint32_t warp_min[kClusterWarps], warp_max[kClusterWarps];
  int warp_sum[kClusterWarps], warp_gt[kClusterWarps], warp_eq[kClusterWarps];
  uint32_t block_min, block_max, lo_key, hi_key;
  int bin, need, in_bin, local_count, need_eq, radix_remaining;
  int block_gt, block_eq;
  uint32_t threshold, radix_prefix;
};

__global__ void __launch_bounds__(kClusterThreads, 2)
    TopKClusterKernel(const float* scores, int n, int k, int slice,
                      int32_t* ids) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  extern __shared__ uint32_t keys[];  // This block's slice.
  __shared__ ClusterShared sh;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int row_id = blockIdx.x / kTopKCluster;
  const int s0 = min(n, rank * slice);
  const int len = min(n, s0 + slice) - s0;
  PdlWait();
  const float* row = scores + static_cast<int64_t>(row_id) * n + s0;

  // 1. Stage the slice's keys; the block's range.
  uint32_t kmin = 0xffffffffu, kmax = 0u;
  for (int base = 0; base < len; base += kClusterThreads * kClusterLoadBatch) {
    float v[kClusterLoadBatch];
#pragma unroll
    for (int u = 0; u < kClusterLoadBatch; ++u) {
      const int i = base + u * kClusterThreads + tid;
      v[u] = i < len ? row[i] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kClusterLoadBatch; ++u) {
      const int i = base + u * kClusterThreads + tid;
      if (i < len) {
        const uint32_t key = OrderedKey(v[u]);
        keys[i] = key;
        kmin = min(kmin, key);
        kmax = max(kmax, key);
      }
    }
  }
  kmin = WarpMinU(kmin);
  kmax = WarpMaxU(kmax);
  if (lane == 0) {
    sh.warp_min[warp] = kmin;
    sh.warp_max[warp] = kmax;
  }
  for (int b = tid; b < kClusterBins; b += kClusterThreads) sh.hist[b] = 0;
  if (tid == 0) sh.local_count = 0;
  __syncthreads();
  if (warp == 0) {
    kmin = WarpMinU(lane < kClusterWarps ? sh.warp_min[lane] : 0xffffffffu);
    kmax = WarpMaxU(lane < kClusterWarps ? sh.warp_max[lane] : 0u);
    if (lane == 0) {
      sh.block_min = kmin;
      sh.block_max = kmax;
    }
  }
  cluster.sync();

  // 2. The row's range (every block's), then this slice's histogram.
  if (warp == 0) {
    kmin = lane < kTopKCluster ? *cluster.map_shared_rank(&sh.block_min, lane)
                               : 0xffffffffu;
    kmax = lane < kTopKCluster ? *cluster.map_shared_rank(&sh.block_max, lane)
                               : 0u;
    kmin = WarpMinU(kmin);
    kmax = WarpMaxU(kmax);
    if (lane == 0) {
      sh.lo_key = kmin;
      sh.hi_key = kmax;
    }
  }
  __syncthreads();
  const float lo = KeyValue(sh.lo_key), hi = KeyValue(sh.hi_key);
  const float range = __fsub_rn(hi, lo);
  float scale =
      range > 0.f ? __fdiv_rn(static_cast<float>(kClusterBins), range) : 0.f;
  if (!isfinite(range) || !isfinite(scale)) scale = 0.f;  // One bin: radix.
  auto bin_of = [&](uint32_t key) -> int {
    const float t = __fmul_rn(__fsub_rn(KeyValue(key), lo), scale);
    return min(kClusterBins - 1, __float2int_rz(t));
  };
  for (int i = tid; i < len; i += kClusterThreads) {
    atomicAdd(&sh.hist[bin_of(keys[i])], 1);
  }
  cluster.sync();

  // 3. The threshold bin from the cluster's counts.
  FindThresholdBin<kClusterBins>(
      k,
      [&](int b) {
        int sum = 0;
#pragma unroll 4
        for (int r = 0; r < kTopKCluster; ++r) {
          sum += *cluster.map_shared_rank(&sh.hist[b], r);
        }
        return sum;
      },
      sh.warp_sum, &sh.bin, &sh.need, &sh.in_bin);
  const int bin = sh.bin, need = sh.need, in_bin = sh.in_bin;
  // Nobody reads another block's histogram after this (radix reuses it).
  cluster.sync();

  // 4. The threshold key: the need-th largest key of the bin.
  if (in_bin <= kClusterCandidates) {
    for (int i = tid; i < len; i += kClusterThreads) {
      const uint32_t key = keys[i];
      if (bin_of(key) == bin) {
        sh.local_candidates[atomicAdd(&sh.local_count, 1)] = key;
      }
    }
    cluster.sync();
    // Every block gathers the cluster's candidates (order is irrelevant:
    // only counts of larger and equal keys decide the threshold).
    int counts[kTopKCluster];
#pragma unroll
    for (int r = 0; r < kTopKCluster; ++r) {
      counts[r] = *cluster.map_shared_rank(&sh.local_count, r);
    }
    int at = 0;
#pragma unroll
    for (int r = 0; r < kTopKCluster; ++r) {
      const uint32_t* src = cluster.map_shared_rank(sh.local_candidates, r);
      for (int i = tid; i < counts[r]; i += kClusterThreads) {
        sh.candidates[at + i] = src[i];
      }
      at += counts[r];
    }
    __syncthreads();
    ThresholdOfCandidates(sh.candidates, in_bin, need, kClusterThreads,
                          &sh.threshold, &sh.need_eq);
    __syncthreads();
  } else {
    // Radix select over the bin's keys, 8 bits at a time from the top, on
    // cluster-wide digit counts.
    int* hist = sh.hist;         // Its first 256 counters: this block's digits.
    int* total = sh.hist + 256;  // The cluster's.
    if (tid == 0) {
      sh.radix_prefix = 0;
      sh.radix_remaining = need;
    }
    uint32_t mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int i = tid; i < 256; i += kClusterThreads) hist[i] = 0;
      __syncthreads();
      const uint32_t prefix = sh.radix_prefix;
      for (int base = 0; base < len; base += kClusterThreads) {
        const int i = base + tid;
        const uint32_t key = i < len ? keys[i] : 0u;
        const bool in = i < len && (key & mask) == prefix && bin_of(key) == bin;
        const int digit = in ? static_cast<int>((key >> shift) & 255u) : -1;
        const unsigned peers = __match_any_sync(kFullMask, digit);
        if (in && lane == __ffs(peers) - 1) {
          atomicAdd(&hist[digit], __popc(peers));
        }
      }
      cluster.sync();
      for (int d = tid; d < 256; d += kClusterThreads) {
        int sum = 0;
#pragma unroll
        for (int r = 0; r < kTopKCluster; ++r) {
          sum += *cluster.map_shared_rank(&hist[d], r);
        }
        total[d] = sum;
      }
      __syncthreads();
      if (tid < 32) {
        RadixDigitStep(total, prefix, shift, &sh.radix_prefix,
                       &sh.radix_remaining);
      }
      mask |= 255u << shift;
      // Every block has read the others' digit counts before they reset.
      cluster.sync();
    }
    if (tid == 0) {
      sh.threshold = sh.radix_prefix;
      sh.need_eq = sh.radix_remaining;
    }
    __syncthreads();
  }

  // 5. Ordered compaction: the blocks before this one (then the warps
  // before this one) say where its picks go.
  const uint32_t threshold = sh.threshold;
  const int need_eq = sh.need_eq;
  const int seg = ((len + kClusterWarps - 1) / kClusterWarps + 31) & ~31;
  const int w0 = warp * seg, w1 = min(len, w0 + seg);
  auto key_of = [&](int i) { return keys[i]; };
  int gt_count, eq_count;
  CountSegment(key_of, w0, w1, seg, threshold, &gt_count, &eq_count);
  if (lane == 0) {
    sh.warp_gt[warp] = gt_count;
    sh.warp_eq[warp] = eq_count;
  }
  __syncthreads();
  if (tid == 0) {
    int gt = 0, eq = 0;
    for (int w = 0; w < kClusterWarps; ++w) {
      gt += sh.warp_gt[w];
      eq += sh.warp_eq[w];
    }
    sh.block_gt = gt;
    sh.block_eq = eq;
  }
  cluster.sync();
  int eq_seen = 0, at = 0;
  for (int r = 0; r < rank; ++r) {
    const int gt = *cluster.map_shared_rank(&sh.block_gt, r);
    const int eq = *cluster.map_shared_rank(&sh.block_eq, r);
    at += gt + max(0, min(eq, need_eq - eq_seen));
    eq_seen += eq;
  }
  // No block leaves while another may still read its shared memory.
  cluster.sync();
  for (int w = 0; w < warp; ++w) {
    at += sh.warp_gt[w] + max(0, min(sh.warp_eq[w], need_eq - eq_seen));
    eq_seen += sh.warp_eq[w];
  }
  WriteSegmentPicks(key_of, w0, w1, seg, threshold, need_eq, eq_seen, at, s0,
                    ids + static_cast<int64_t>(row_id) * k);
#else
  __trap();  // Launched only on sm_90+ (TopKRows).
#endif
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

}  // namespace

absl::Status TopKRows(DeviceContext& ctx, const Tensor& scores, int64_t k,
                      Tensor* ids, bool cluster) {
  const int64_t rows = scores.dim(0), n = scores.dim(1);
  if (k <= 0 || k > n || ids->dim(0) != rows || ids->dim(1) != k) {
    return absl::InvalidArgumentError(
        absl::StrCat("TopK: k ", k, " of ", n, " into ", ids->DebugString()));
  }
  const int64_t slice = CeilDiv(n, kTopKCluster);
  const size_t slice_bytes = static_cast<size_t>(slice) * 4;
  if (cluster && n >= kClusterMinN && ctx.info().major >= 9 &&
      rows * kTopKCluster <= 0x7fffffff &&
      static_cast<int64_t>(slice_bytes + sizeof(ClusterShared)) <=
          ctx.info().shared_memory_per_block_optin) {
    if (slice_bytes + sizeof(ClusterShared) > 48 * 1024) {
      DS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
          TopKClusterKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
          static_cast<int>(slice_bytes)));
    }
    cudaLaunchAttribute attributes[2];
    cudaLaunchConfig_t config = ClusterLaunchConfig(
        dim3(static_cast<unsigned>(rows * kTopKCluster)), dim3(kClusterThreads),
        slice_bytes, ctx.stream(), kTopKCluster, ctx.programmatic_launch(),
        attributes);
    DS_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(
        &config, TopKClusterKernel, scores.data<float>(), static_cast<int>(n),
        static_cast<int>(k), static_cast<int>(slice), ids->data<int32_t>()));
    return LastLaunchStatus("TopKClusterKernel");
  }
  const dim3 grid(static_cast<unsigned>(rows));
  if (n <= kRankMaxN) {
    LaunchKernel(ctx.programmatic_launch(), TopKRankKernel, grid,
                 dim3(static_cast<unsigned>(CeilDiv(n, 32) * 32)), 0,
                 ctx.stream(), scores.data<float>(), static_cast<int>(n),
                 static_cast<int>(k), ids->data<int32_t>());
    return LastLaunchStatus("TopKRankKernel");
  }
  const int64_t smem = n * 4;
  const bool staged = smem + static_cast<int64_t>(sizeof(SelectShared)) <=
                      ctx.info().shared_memory_per_block_optin;
  const size_t dyn = staged ? static_cast<size_t>(smem) : 0;
  auto kernel = staged ? TopKSelectKernel<true> : TopKSelectKernel<false>;
  // The opt-in covers static + dynamic shared memory past the default 48 KiB
  // (Llama-2-7B's 11008 scores: 43 KiB staged + 12 KiB static).
  if (dyn + sizeof(SelectShared) > 48 * 1024) {
    DS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(dyn)));
  }
  LaunchKernel(ctx.programmatic_launch(), kernel, grid, dim3(kSelectThreads),
               dyn, ctx.stream(), scores.data<float>(), static_cast<int>(n),
               static_cast<int>(k), ids->data<int32_t>());
  return LastLaunchStatus("TopKSelectKernel");
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

}  // namespace dynsparse::cuda
