// Device-side helpers shared by the kernels in kernels/cuda (include from .cu
// files only): element loads that convert to f32, warp and block reductions,
// and the launch-size helpers.
#ifndef DYNSPARSE_KERNELS_CUDA_CUDA_UTILS_CUH_
#define DYNSPARSE_KERNELS_CUDA_CUDA_UTILS_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace dynsparse::cuda {

// A floating dtype as a kernel argument (Tensor dtypes are host-side enums).
enum class FloatKind : int { kNone = 0, kF32 = 1, kF16 = 2, kBF16 = 3 };

inline FloatKind ToFloatKind(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return FloatKind::kF32;
    case DType::kF16:
      return FloatKind::kF16;
    case DType::kBF16:
      return FloatKind::kBF16;
    case DType::kI32:
      break;
  }
  return FloatKind::kNone;
}

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// Element i of a vector whose dtype is known only at run time (uniform across
// the warp, so the switch does not diverge). kNone reads as `fallback`.
__device__ __forceinline__ float LoadAsFloat(const void* p, FloatKind kind,
                                             int64_t i, float fallback) {
  switch (kind) {
    case FloatKind::kF32:
      return static_cast<const float*>(p)[i];
    case FloatKind::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case FloatKind::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case FloatKind::kNone:
      break;
  }
  return fallback;
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

// Sum over the block; every thread gets the result. `scratch` holds one float
// per warp (32 is enough for any block). All threads must call it.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = WarpSum(v);
  __syncthreads();  // scratch may still be read from a previous call.
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = lane < warps ? scratch[lane] : 0.0f;
  total = WarpSum(total);
  return total;
}

// The GPU's global timer in ns (the same clock on every SM), for kernel
// timelines (decode_stack.cu, sparse_mlp.cu).
__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// The SM this thread runs on (which blocks share one, in timelines).
__device__ __forceinline__ uint32_t SmId() {
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

// The handshake of a reduction inside one launch: every block that wrote
// its partial calls this, and it returns true in the one block that arrives
// last of `blocks` on `counter`; after its fence that block sees every
// partial, and it sums them in a fixed order (so the result does not depend
// on which block was last). The counter is back at 0 for the next launch:
// every block of this one has counted by then, and a launch after it counts
// only after its PdlWait, which waits for this launch to complete.
__device__ __forceinline__ bool ArrivesLast(int32_t* counter, int blocks) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1) == blocks - 1;
    if (last) *counter = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// Programmatic dependent launch (sm_90+): a kernel launched with
// LaunchKernel(pdl = true) may start while the previous kernel in the stream
// is still finishing; it must call PdlWait() before touching memory that
// kernel writes. Each such kernel releases its own successor right away, so
// the successor's launch and block scheduling overlap this kernel's work
// and tail. Without PDL both calls are no-ops.
__device__ __forceinline__ void PdlWait() {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

template <typename... Params, typename... Args>
void LaunchKernel(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block,
                  size_t smem, cudaStream_t stream, Args... args) {
  if (!pdl) {
    kernel<<<grid, block, smem, stream>>>(args...);
    return;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  (void)cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

// A launch of clusters of `cluster_x` blocks (sm_90), with programmatic
// dependent launch when `pdl`; `attributes` must hold two entries.
inline cudaLaunchConfig_t ClusterLaunchConfig(dim3 grid, dim3 block,
                                              size_t smem, cudaStream_t stream,
                                              unsigned cluster_x, bool pdl,
                                              cudaLaunchAttribute* attributes) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = cluster_x;
  attributes[0].val.clusterDim.y = 1;
  attributes[0].val.clusterDim.z = 1;
  attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[1].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attributes;
  config.numAttrs = pdl ? 2 : 1;
  return config;
}

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How many keys a query at `pos` sees: of the ascending key positions
// key_pos[0..num_keys) those <= pos (a prefix, found by binary search), or
// with no list (keys at rows 0..num_keys-1) min(pos + 1, num_keys).
__device__ __forceinline__ int VisibleKeyCount(const int32_t* key_pos,
                                               int num_keys, int pos) {
  if (key_pos == nullptr) return min(pos + 1, num_keys);
  int lo = 0, hi = num_keys;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (key_pos[mid] <= pos) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// RoPE's rotate-half rotation of the pair (x[i], x[i + half]) by the angle
// of cosine c and sine s. Round-to-nearest products and sums, so no FMA
// contraction changes the bits relative to kernels/cpu; every kernel that
// rotates calls this, so fused and unfused paths agree bit for bit.
__device__ __forceinline__ float2 RotatePair(float a, float b, float c,
                                             float s) {
  return make_float2(__fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s)),
                     __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s)));
}

// Rounds to T (round to nearest even, like __float2half_rn) and stores one
// value, or four with one 8-byte (f16/bf16) or 16-byte (f32) store: `dst`
// aligned to 4 x sizeof(T). The two give the same bits.
template <typename T>
__device__ __forceinline__ void StoreRounded(T* dst, float v) {
  if constexpr (std::is_same_v<T, __half>) {
    *dst = __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    *dst = __float2bfloat16_rn(v);
  } else {
    *dst = v;
  }
}
template <typename T>
__device__ __forceinline__ void StoreRounded4(T* dst, float4 v) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 lo = __floats2half2_rn(v.x, v.y);
    const __half2 hi = __floats2half2_rn(v.z, v.w);
    *reinterpret_cast<uint2*>(dst) =
        make_uint2(*reinterpret_cast<const uint32_t*>(&lo),
                   *reinterpret_cast<const uint32_t*>(&hi));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y);
    const __nv_bfloat162 hi = __floats2bfloat162_rn(v.z, v.w);
    *reinterpret_cast<uint2*>(dst) =
        make_uint2(*reinterpret_cast<const uint32_t*>(&lo),
                   *reinterpret_cast<const uint32_t*>(&hi));
  } else {
    *reinterpret_cast<float4*>(dst) = v;
  }
}

inline bool IsAligned(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_CUDA_UTILS_CUH_
