// Lazy K/V pieces shared by the compute kernels (lazy_kv.cu on CUDA cores,
// lazy_kv_mma.cu on tensor cores) and the commit kernel; include from .cu
// files only.
#ifndef DYNSPARSE_KERNELS_CUDA_LAZY_KV_CUH_
#define DYNSPARSE_KERNELS_CUDA_LAZY_KV_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

constexpr int kMaxRing = 16;
static_assert(kMaxRing < 32, "LazyWork gives each ring slot a lane");

// DeviceLazyKvArgs (sparse_ops.h) as the kernels take it: raw pointers,
// int sizes, the bias and cache dtypes resolved.
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
  // float or __half (kv_half), [capacity, kv_heads * head_dim]. The kernels
  // take the element type as a template argument KvT; with an f16 cache the
  // compute kernel rotates K itself (LazyKvDevice says why).
  void* k_cache;
  void* v_cache;
  bool kv_half;
};

// The work of kv head g this step: its missing (slot, position) pairs in
// slot order, and the new token (slot -1) last. Returns whether the head is
// active: a kept query head maps to it, or it still owes the K/V of the
// token whose ring slot the next step's token takes (so it owes at most
// slots - 1 old tokens and the new one: one pass of LazyKvMmaKernel), or of
// the one this step's token takes (never while positions come in order;
// completed before its input is overwritten), or the step flushes. Called by
// the 32 lanes of one warp, which read the head ids, the pending flags and the
// ring positions side by side, all in one memory round trip (no load waits on
// another; a serial scan by one thread cost the kernel tens of microseconds in
// dependent loads); the compute and commit kernels compute the same list
// (pending changes only after).
__device__ __forceinline__ bool LazyWork(const LazyArgs& a, int g,
                                         int* slot_list, int* pos_list,
                                         int* count) {
  const int lane = threadIdx.x & 31;
  const bool in_ring = lane < a.slots;  // a.slots <= kMaxRing < 32
  const int owed = in_ring ? a.pending[lane * a.kv_heads + g] : 0;
  const int owed_pos = in_ring ? a.ring_pos[lane] : 0;
  const int pos = a.step[0], slot = a.step[1], flush = a.step[2];
  bool kept = false;
  for (int j = lane; j < a.k; j += 32) kept |= a.head_ids[j] / a.group == g;
  const int next = slot + 1 == a.slots ? 0 : slot + 1;
  const bool active = __any_sync(0xffffffffu, kept) || flush != 0 ||
                      a.h == nullptr ||
                      __shfl_sync(0xffffffffu, owed, slot) != 0 ||
                      __shfl_sync(0xffffffffu, owed, next) != 0;
  int c = 0;
  if (active) {
    const bool owes = owed != 0;
    const unsigned mask = __ballot_sync(0xffffffffu, owes);
    if (owes) {
      const int at = __popc(mask & ((1u << lane) - 1u));
      slot_list[at] = lane;
      pos_list[at] = owed_pos;
    }
    c = __popc(mask);
    if (a.h != nullptr) {
      if (lane == 0) {
        slot_list[c] = -1;
        pos_list[c] = pos;
      }
      ++c;
    }
  }
  if (lane == 0) *count = c;
  return active;
}

// The K/V compute on tensor cores (lazy_kv_mma.cu), for f16 weights of the
// shapes LazyKvMmaTakes (else InvalidArgument); the commit kernel follows it
// as it follows the CUDA-core one.
constexpr int64_t LazyKvMmaHiddenMultiple() { return 256; }
constexpr bool LazyKvMmaTakes(int64_t head_dim, int64_t hidden) {
  return head_dim % 16 == 0 && hidden % LazyKvMmaHiddenMultiple() == 0;
}
absl::Status LaunchLazyKvMma(DeviceContext& ctx, const LazyArgs& a,
                             int blocks_per_sm);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_LAZY_KV_CUH_
