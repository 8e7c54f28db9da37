// DeviceContext: one CUDA device, its stream, its cuBLAS handle and a scratch
// workspace, passed explicitly to every CUDA kernel wrapper (no global state).
//
// Also: cudaError_t / cublasStatus_t -> absl::Status conversion, DS_CUDA_CHECK
// for programmer errors, and device-memory Tensors (cudaMalloc'd Storage with
// cudaFree as its release function) with host <-> device copies.
//
// Threading: a DeviceContext is used by one host thread at a time. All work is
// queued on its stream; copies that involve host memory synchronise the stream
// before they return, kernel wrappers do not.
#ifndef DYNSPARSE_KERNELS_CUDA_DEVICE_CONTEXT_H_
#define DYNSPARSE_KERNELS_CUDA_DEVICE_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/logging.h"
#include "core/tensor.h"

namespace dynsparse::cuda {

// "what: cudaErrorMemoryAllocation (out of memory)" with a code that fits the
// error: ResourceExhausted for allocation failures, FailedPrecondition when no
// usable device or driver exists, InvalidArgument for bad values, else
// Internal.
absl::Status CudaErrorToStatus(cudaError_t error, absl::string_view what);
absl::Status CublasErrorToStatus(cublasStatus_t status, absl::string_view what);
absl::string_view CublasStatusName(cublasStatus_t status);

// Status of the most recent kernel launch on this thread (cudaGetLastError,
// which also reports earlier asynchronous faults). Call after each launch.
absl::Status LastLaunchStatus(absl::string_view kernel_name);

}  // namespace dynsparse::cuda

// Returns a Status from the enclosing function when a CUDA runtime call fails.
#define DS_CUDA_RETURN_IF_ERROR(expr)                                     \
  do {                                                                    \
    const cudaError_t ds_cuda_error_ = (expr);                            \
    if (ds_cuda_error_ != cudaSuccess) {                                  \
      return ::dynsparse::cuda::CudaErrorToStatus(ds_cuda_error_, #expr); \
    }                                                                     \
  } while (0)

#define DS_CUBLAS_RETURN_IF_ERROR(expr)                                        \
  do {                                                                         \
    const cublasStatus_t ds_cublas_status_ = (expr);                           \
    if (ds_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                          \
      return ::dynsparse::cuda::CublasErrorToStatus(ds_cublas_status_, #expr); \
    }                                                                          \
  } while (0)

// Aborts on a failed CUDA runtime call: for programmer errors and teardown
// paths only (user-facing failures return absl::Status).
#define DS_CUDA_CHECK(expr)                                                \
  do {                                                                     \
    const cudaError_t ds_cuda_check_error_ = (expr);                       \
    DS_CHECK(ds_cuda_check_error_ == cudaSuccess)                          \
        << #expr << ": " << cudaGetErrorName(ds_cuda_check_error_) << " (" \
        << cudaGetErrorString(ds_cuda_check_error_) << ")";                \
  } while (0)

namespace dynsparse::cuda {

// Facts read once from the device (cudaGetDeviceProperties).
struct DeviceInfo {
  int device = 0;
  std::string name;
  int major = 0;  // Compute capability.
  int minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  int64_t shared_memory_per_block_optin = 0;  // Max dynamic smem after opt-in.
  int64_t shared_memory_per_sm = 0;
  int max_threads_per_sm = 0;
  int registers_per_sm = 0;

  std::string DebugString() const;  // "NVIDIA H200 (sm_90, 132 SMs, 60 MiB L2)"
};

// Number of CUDA devices, or the error that says why there is none usable
// (FailedPrecondition "no CUDA device: ..."). Never aborts.
absl::StatusOr<int> CudaDeviceCount();

class DeviceContext {
 public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;

  // Selects `device`, creates a non-blocking stream, a cuBLAS handle bound to
  // it and a workspace of `workspace_bytes`. Without a device or driver the
  // error is FailedPrecondition("no CUDA device: <why>").
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(
      int device = 0, size_t workspace_bytes = kDefaultWorkspaceBytes);

  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int device() const { return info_.device; }
  const DeviceInfo& info() const { return info_; }
  int sm_count() const { return info_.sm_count; }
  int64_t l2_bytes() const { return info_.l2_bytes; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }

  // Device scratch of at least `bytes`, valid until the next call that grows
  // it. Growing synchronises the stream first (work in flight may still read
  // the old buffer), so grow outside CUDA graph capture.
  absl::StatusOr<void*> Workspace(size_t bytes);
  size_t workspace_bytes() const { return workspace_bytes_; }

  // Programmatic dependent launch for the decode-path kernels (sm_90+;
  // DYNSPARSE_CUDA_PDL=0 in the environment turns it off).
  bool programmatic_launch() const { return pdl_; }
  void set_programmatic_launch(bool on) { pdl_ = on && info_.major >= 9; }
  // The CUDA-core GEMV issues its first weight loads before waiting for the
  // previous kernel (gemv_kernels.cu; DYNSPARSE_CUDA_EARLY_LOADS=0 turns it
  // off).
  bool gemv_early_loads() const { return early_loads_; }
  void set_gemv_early_loads(bool on) { early_loads_ = on; }
  // ... and asks L2 for its stores' bias, LayerNorm row sums and old y
  // before its weight loads (DYNSPARSE_CUDA_STORE_PREFETCH=0 turns it off).
  bool gemv_prefetch_store() const { return prefetch_store_; }
  void set_gemv_prefetch_store(bool on) { prefetch_store_ = on; }
  // The one-row CUDA-core GEMVs are built to fit one more block an SM
  // (gemv_kernels.cu, OccupancyBound; DYNSPARSE_CUDA_GEMV_BOUNDS=0 turns it
  // off).
  bool gemv_occupancy_bounds() const { return occupancy_bounds_; }
  void set_gemv_occupancy_bounds(bool on) { occupancy_bounds_ = on; }
  // ... and, so built, load their weights with an L2 evict_first policy, so
  // the K/V, activations and code that the step's other kernels read are
  // not the lines the weight stream evicts
  // (DYNSPARSE_CUDA_WEIGHTS_EVICT_FIRST=1 turns it on; A/B timing).
  bool gemv_weights_evict_first() const { return weights_evict_first_; }
  void set_gemv_weights_evict_first(bool on) { weights_evict_first_ = on; }
  // A tensor-core GEMV (batch 3-8) whose grid fits the GPU in one wave runs
  // the build with twice the loads in flight a warp and its first weight
  // loads before the PDL wait (gemv_kernels.cu, GemvMmaKernel's kDeep; the
  // down projection then unsplit; H100, run 176: a decode step of 4 rows
  // -2.2%; DYNSPARSE_CUDA_DEEP_MMA=0 turns it off).
  bool gemv_deep_mma() const { return deep_mma_; }
  void set_gemv_deep_mma(bool on) { deep_mma_ = on; }

  // Makes this context's device current on the calling thread.
  absl::Status Activate() const;
  // Waits for all work queued on the stream; reports asynchronous faults.
  absl::Status Synchronize() const;

 private:
  DeviceContext() = default;

  DeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool pdl_ = false;
  bool early_loads_ = true;
  bool prefetch_store_ = true;
  bool occupancy_bounds_ = true;
  bool weights_evict_first_ = false;
  bool deep_mma_ = true;
};

// A zero-initialised device tensor whose Storage is cudaMalloc'd on ctx's
// device (Device::kCuda) and released with cudaFree.
absl::StatusOr<Tensor> AllocateDevice(const DeviceContext& ctx, DType dtype,
                                      Shape shape);
// A device copy of a host tensor (same dtype and shape).
absl::StatusOr<Tensor> ToDevice(const DeviceContext& ctx, const Tensor& host);
// A host copy of a device tensor (same dtype and shape).
absl::StatusOr<Tensor> ToHost(const DeviceContext& ctx, const Tensor& device);

// Copies between tensors of the same dtype and element count. Copies that
// touch host memory return after the copy is complete.
absl::Status CopyHostToDevice(const DeviceContext& ctx, const Tensor& host,
                              Tensor* device);
absl::Status CopyDeviceToHost(const DeviceContext& ctx, const Tensor& device,
                              Tensor* host);
// Asynchronous on ctx's stream.
absl::Status CopyDeviceToDevice(const DeviceContext& ctx, const Tensor& src,
                                Tensor* dst);
// Sets every byte of a device tensor (asynchronous). 0xFF makes every f32,
// f16 and bf16 element a NaN: tests poison outputs with it.
absl::Status FillBytes(const DeviceContext& ctx, uint8_t byte, Tensor* device);

// InvalidArgument unless `t` is a non-empty device tensor; `what` names it.
absl::Status CheckOnDevice(const Tensor& t, absl::string_view what);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_DEVICE_CONTEXT_H_
