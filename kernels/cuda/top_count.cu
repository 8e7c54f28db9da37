#include <climits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/top_count.h"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;
// Scores a thread loads before it histograms them, for memory parallelism.
constexpr int kLoadsInFlight = 4;

// Unsigned keys in the order of the floats; -0 becomes +0, as the host's
// float comparisons treat them.
__device__ __forceinline__ uint32_t OrderedKey(float v) {
  uint32_t bits = __float_as_uint(v);
  if (bits == 0x80000000u) bits = 0;
  return (bits & 0x80000000u) != 0 ? ~bits : (bits | 0x80000000u);
}

// Warp 0, after a histogram pass: the digit whose bin holds the
// `remaining`-th largest key of the group (counting from the top bin), and
// how many keys of the group lie in the bins above it.
__device__ void FindDigit(const uint32_t* hist, uint32_t remaining,
                          uint32_t* digit, uint32_t* above) {
  const int lane = threadIdx.x & 31;
  uint32_t bins[8];  // Lane l holds bins 255 - 8l down to 248 - 8l.
  uint32_t sum = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    bins[j] = hist[255 - 8 * lane - j];
    sum += bins[j];
  }
  uint32_t inclusive = sum;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const uint32_t t = __shfl_up_sync(kFullMask, inclusive, offset);
    if (lane >= offset) inclusive += t;
  }
  uint32_t before = inclusive - sum;
  if (before < remaining && remaining <= inclusive) {  // One lane.
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (before + bins[j] >= remaining) {
        *digit = 255 - 8 * lane - j;
        *above = before;
        break;
      }
      before += bins[j];
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    TopCountKernel(const float* __restrict__ scores, int n, int count,
                   int32_t* __restrict__ out) {
  __shared__ uint32_t hist[256];
  __shared__ uint32_t s_digit, s_above;
  __shared__ uint32_t warp_prefix[kWarps + 1];  // Packed (above, equal).
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;

  // The count-th largest key, a byte at a time from the top: `prefix` holds
  // its bytes found so far (under `mask`), `remaining` its rank within the
  // keys that share them.
  uint32_t prefix = 0, mask = 0;
  uint32_t remaining = static_cast<uint32_t>(count);
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kThreads) hist[i] = 0;
    __syncthreads();
    for (int base = 0; base < n; base += kThreads * kLoadsInFlight) {
      float v[kLoadsInFlight];
#pragma unroll
      for (int j = 0; j < kLoadsInFlight; ++j) {
        const int i = base + j * kThreads + threadIdx.x;
        v[j] = i < n ? __ldg(scores + i) : 0.f;
      }
#pragma unroll
      for (int j = 0; j < kLoadsInFlight; ++j) {
        const int i = base + j * kThreads + threadIdx.x;
        uint32_t digit = 256;  // Not in the group.
        const uint32_t key = OrderedKey(v[j]);
        if (i < n && (key & mask) == prefix) digit = (key >> shift) & 255u;
        // Keys of a pass share their high bytes: one atomic per digit a warp.
        const unsigned peers = __match_any_sync(kFullMask, digit);
        if (digit < 256 && lane == __ffs(peers) - 1) {
          atomicAdd(&hist[digit], static_cast<uint32_t>(__popc(peers)));
        }
      }
    }
    __syncthreads();
    if (warp == 0) FindDigit(hist, remaining, &s_digit, &s_above);
    __syncthreads();
    remaining -= s_above;
    prefix |= s_digit << shift;
    mask |= 255u << shift;
    __syncthreads();  // hist and s_digit are rewritten by the next pass.
  }

  // Ordered compaction: the selected before index i are the keys above the
  // threshold before it plus the first `remaining` equal ones before it.
  const uint32_t threshold = prefix;
  const int equal_wanted = static_cast<int>(remaining);
  const unsigned lanes_below = (1u << lane) - 1u;
  int above_so_far = 0, equal_so_far = 0;
  for (int base = 0; base < n; base += kThreads) {
    const int i = base + threadIdx.x;
    const uint32_t key = i < n ? OrderedKey(__ldg(scores + i)) : 0u;
    const bool above = i < n && key > threshold;
    const bool equal = i < n && key == threshold;
    const unsigned above_mask = __ballot_sync(kFullMask, above);
    const unsigned equal_mask = __ballot_sync(kFullMask, equal);
    // Counts of a tile fit 16 bits (at most kThreads each).
    if (lane == 0) {
      warp_prefix[warp] = __popc(above_mask) | (__popc(equal_mask) << 16);
    }
    __syncthreads();
    if (warp == 0) {
      const uint32_t own = warp_prefix[lane];
      uint32_t inclusive = own;
#pragma unroll
      for (int offset = 1; offset < 32; offset <<= 1) {
        const uint32_t t = __shfl_up_sync(kFullMask, inclusive, offset);
        if (lane >= offset) inclusive += t;
      }
      warp_prefix[lane] = inclusive - own;
      if (lane == 31) warp_prefix[kWarps] = inclusive;
    }
    __syncthreads();
    const uint32_t before = warp_prefix[warp];
    const uint32_t tile = warp_prefix[kWarps];
    const int above_before = above_so_far + static_cast<int>(before & 0xffffu) +
                             __popc(above_mask & lanes_below);
    const int equal_before = equal_so_far + static_cast<int>(before >> 16) +
                             __popc(equal_mask & lanes_below);
    const int slot = above_before + min(equal_before, equal_wanted);
    if ((above || (equal && equal_before < equal_wanted)) && slot < count) {
      out[slot] = i;
    }
    above_so_far += static_cast<int>(tile & 0xffffu);
    equal_so_far += static_cast<int>(tile >> 16);
    __syncthreads();  // warp_prefix is rewritten by the next tile.
    if (above_so_far + min(equal_so_far, equal_wanted) == count) break;
  }
}

}  // namespace

absl::Status TopCountDevice(DeviceContext& ctx, const Tensor& scores,
                            int64_t count, Tensor* indices) {
  if (absl::Status s = CheckOnDevice(scores, "TopCount scores"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckOnDevice(*indices, "TopCount indices"); !s.ok()) {
    return s;
  }
  const int64_t n = scores.numel();
  if (scores.dtype() != DType::kF32 || scores.rank() != 1 ||
      indices->dtype() != DType::kI32 || indices->numel() != count ||
      count <= 0 || count >= n || n > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("TopCount: ", count,
                     " of f32 [n] scores into i32 [count], 0 < count < n;"
                     " got ",
                     scores.DebugString(), " and ", indices->DebugString()));
  }
  TopCountKernel<<<1, kThreads, 0, ctx.stream()>>>(
      scores.data<float>(), static_cast<int>(n), static_cast<int>(count),
      indices->data<int32_t>());
  return LastLaunchStatus("TopCountKernel");
}

}  // namespace dynsparse::cuda
