// Pushing values into the shared memory of other blocks of a cluster (sm_90+)
// with st.async, each receiver counting the bytes that reach it on its own
// mbarrier. A receiver waits only for its data, and no sender waits at all:
// a cluster barrier between the phases of a kernel (cluster.sync) compiles
// to a GPU-wide memory fence (MEMBAR.ALL.GPU) before its arrive, where the
// fused sparse MLP's warps stalled (results/bench/h200_run97).
//
// Use: one thread calls PushBarrierInit(bar, bytes) with the bytes its block
// will receive in total; every thread then calls ClusterArriveRelaxed(), and
// ClusterWait() before its first Push (the receivers' barriers are then
// initialised); receivers call PushBarrierWait(bar) before reading. One use a
// launch (phase 0).
#ifndef DYNSPARSE_KERNELS_CUDA_CLUSTER_PUSH_CUH_
#define DYNSPARSE_KERNELS_CUDA_CLUSTER_PUSH_CUH_

#include <cstdint>

namespace dynsparse::cuda {

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One arrival (this call's) and `bytes` of pushes complete phase 0.
__device__ __forceinline__ void PushBarrierInit(uint64_t* bar, uint32_t bytes) {
  const uint32_t addr = SharedAddress(bar);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(addr));
  asm volatile(
      "{\n .reg .b64 state;\n"
      " mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(
          addr),
      "r"(bytes)
      : "memory");
  // Orders the initialisation before remote blocks' complete_tx.
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// The cluster barrier in two halves, without the release fence of
// cluster.sync(): only the barrier initialisation above needs ordering.
__device__ __forceinline__ void ClusterArriveRelaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void ClusterWait() {
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

// Stores v at `dst` (this block's address of a shared variable) in the block
// of cluster rank `rank`, completing 4 bytes on that block's `bar`.
__device__ __forceinline__ void Push(float* dst, float v, uint64_t* bar,
                                     uint32_t rank) {
  uint32_t remote_dst, remote_bar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote_dst)
               : "r"(SharedAddress(dst)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote_bar)
               : "r"(SharedAddress(bar)), "r"(rank));
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, "
      "[%2];\n" ::"r"(remote_dst),
      "r"(__float_as_uint(v)), "r"(remote_bar)
      : "memory");
}

// Until every byte announced in PushBarrierInit has arrived.
__device__ __forceinline__ void PushBarrierWait(uint64_t* bar) {
  const uint32_t addr = SharedAddress(bar);
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], "
        "0;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr)
        : "memory");
  }
}

#endif  // __CUDA_ARCH__ >= 900

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_CLUSTER_PUSH_CUH_
