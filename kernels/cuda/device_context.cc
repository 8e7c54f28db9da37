#include "kernels/cuda/device_context.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace dynsparse::cuda {
namespace {

// A context switch read from the environment, as cuda_switches.h validates
// them: "0" turns an on-by-default switch off, "1" an off-by-default one on.
bool SwitchOn(const char* name, bool by_default) {
  const char* value = std::getenv(name);
  if (value == nullptr) return by_default;
  return by_default ? std::string(value) != "0" : std::string(value) == "1";
}

}  // namespace

absl::Status CudaErrorToStatus(cudaError_t error, absl::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(what, ": ", cudaGetErrorName(error), " (",
                   cudaGetErrorString(error), ")");
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return absl::FailedPreconditionError(message);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::string_view CublasStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_<unknown>";
}

absl::Status CublasErrorToStatus(cublasStatus_t status,
                                 absl::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string message =
      absl::StrCat(what, ": ", CublasStatusName(status));
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return absl::ResourceExhaustedError(message);
    case CUBLAS_STATUS_INVALID_VALUE:
      return absl::InvalidArgumentError(message);
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status LastLaunchStatus(absl::string_view kernel_name) {
  const cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) return absl::OkStatus();
  return CudaErrorToStatus(error, absl::StrCat("launch of ", kernel_name));
}

std::string DeviceInfo::DebugString() const {
  return absl::StrFormat("%s (device %d, sm_%d%d, %d SMs, %d MiB L2, %d GiB)",
                         name, device, major, minor, sm_count, l2_bytes >> 20,
                         global_memory_bytes >> 30);
}

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // Clear the (non-sticky) error so later calls do not report it again.
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA device: cudaGetDeviceCount failed with ",
        cudaGetErrorName(error), " (", cudaGetErrorString(error), ")"));
  }
  if (count == 0) {
    return absl::FailedPreconditionError(
        "no CUDA device: cudaGetDeviceCount returned 0");
  }
  return count;
}

absl::StatusOr<std::unique_ptr<DeviceContext>> DeviceContext::Create(
    int device, size_t workspace_bytes) {
  absl::StatusOr<int> count = CudaDeviceCount();
  if (!count.ok()) return count.status();
  if (device < 0 || device >= *count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device ", device, " requested but ", *count, " present"));
  }
  // The constructor is private, so no std::make_unique.
  std::unique_ptr<DeviceContext> ctx(new DeviceContext());
  DS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudaDeviceProp prop;
  DS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  DeviceInfo& info = ctx->info_;
  info.device = device;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.global_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.shared_memory_per_block_optin =
      static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  info.shared_memory_per_sm =
      static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
  info.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  info.registers_per_sm = prop.regsPerMultiprocessor;
  ctx->set_programmatic_launch(SwitchOn("DYNSPARSE_CUDA_PDL", true));
  ctx->set_gemv_early_loads(SwitchOn("DYNSPARSE_CUDA_EARLY_LOADS", true));
  ctx->set_gemv_prefetch_store(SwitchOn("DYNSPARSE_CUDA_STORE_PREFETCH", true));
  ctx->set_gemv_occupancy_bounds(SwitchOn("DYNSPARSE_CUDA_GEMV_BOUNDS", true));
  ctx->set_gemv_deep_mma(SwitchOn("DYNSPARSE_CUDA_DEEP_MMA", true));
  ctx->set_gemv_weights_evict_first(
      SwitchOn("DYNSPARSE_CUDA_WEIGHTS_EVICT_FIRST", false));

  DS_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking));
  DS_CUBLAS_RETURN_IF_ERROR(cublasCreate(&ctx->cublas_));
  DS_CUBLAS_RETURN_IF_ERROR(cublasSetStream(ctx->cublas_, ctx->stream_));
  if (workspace_bytes > 0) {
    DS_CUDA_RETURN_IF_ERROR(cudaMalloc(&ctx->workspace_, workspace_bytes));
    ctx->workspace_bytes_ = workspace_bytes;
  }
  return ctx;
}

DeviceContext::~DeviceContext() {
  // Errors at teardown cannot be reported; a sticky fault would already have
  // surfaced through Synchronize() or a launch status.
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  if (workspace_ != nullptr) (void)cudaFree(workspace_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

absl::StatusOr<void*> DeviceContext::Workspace(size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  // Grow geometrically so alternating sizes do not reallocate every call.
  size_t grown = bytes;
  if (grown < 2 * workspace_bytes_) grown = 2 * workspace_bytes_;
  RETURN_IF_ERROR(Activate());
  DS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  if (workspace_ != nullptr) {
    DS_CUDA_RETURN_IF_ERROR(cudaFree(workspace_));
    workspace_ = nullptr;
    workspace_bytes_ = 0;
  }
  DS_CUDA_RETURN_IF_ERROR(cudaMalloc(&workspace_, grown));
  workspace_bytes_ = grown;
  return workspace_;
}

absl::Status DeviceContext::Activate() const {
  DS_CUDA_RETURN_IF_ERROR(cudaSetDevice(info_.device));
  return absl::OkStatus();
}

absl::Status DeviceContext::Synchronize() const {
  DS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CheckOnDevice(const Tensor& t, absl::string_view what) {
  if (t.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  }
  if (t.device() != Device::kCuda) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a CUDA tensor, got ", t.DebugString()));
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckSameLayout(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.numel() != b.numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy between ", a.DebugString(), " and ", b.DebugString(),
                     ": dtype and element count must match"));
  }
  return absl::OkStatus();
}

absl::Status CheckOnHost(const Tensor& t, absl::string_view what) {
  if (t.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  }
  if (t.device() != Device::kCpu) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a host tensor, got ", t.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> AllocateDevice(const DeviceContext& ctx, DType dtype,
                                      Shape shape) {
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative dimension in ", ShapeToString(shape)));
    }
  }
  const size_t bytes = NumElements(shape) * DTypeSize(dtype);
  RETURN_IF_ERROR(ctx.Activate());
  void* data = nullptr;
  // cudaMalloc returns 256-byte aligned memory; never ask for 0 bytes so the
  // pointer is always valid.
  const size_t alloc_bytes = bytes == 0 ? 256 : bytes;
  const cudaError_t error = cudaMalloc(&data, alloc_bytes);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return CudaErrorToStatus(
        error, absl::StrCat("cudaMalloc of ", alloc_bytes, " bytes for ",
                            DTypeName(dtype), ShapeToString(shape)));
  }
  auto storage = std::make_shared<Storage>(data, alloc_bytes, Device::kCuda,
                                           [](void* p) { (void)cudaFree(p); });
  Tensor tensor(std::move(storage), 0, dtype, std::move(shape));
  // Zero-fill like Backend::Allocate; synchronous so the tensor is ready for
  // any stream.
  DS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(data, 0, alloc_bytes, ctx.stream()));
  RETURN_IF_ERROR(ctx.Synchronize());
  return tensor;
}

absl::StatusOr<Tensor> ToDevice(const DeviceContext& ctx, const Tensor& host) {
  RETURN_IF_ERROR(CheckOnHost(host, "ToDevice source"));
  absl::StatusOr<Tensor> device =
      AllocateDevice(ctx, host.dtype(), host.shape());
  if (!device.ok()) return device.status();
  RETURN_IF_ERROR(CopyHostToDevice(ctx, host, &*device));
  return device;
}

absl::StatusOr<Tensor> ToHost(const DeviceContext& ctx, const Tensor& device) {
  RETURN_IF_ERROR(CheckOnDevice(device, "ToHost source"));
  Tensor host = Tensor::Zeros(device.dtype(), device.shape());
  RETURN_IF_ERROR(CopyDeviceToHost(ctx, device, &host));
  return host;
}

absl::Status CopyHostToDevice(const DeviceContext& ctx, const Tensor& host,
                              Tensor* device) {
  RETURN_IF_ERROR(CheckOnHost(host, "copy source"));
  RETURN_IF_ERROR(CheckOnDevice(*device, "copy destination"));
  RETURN_IF_ERROR(CheckSameLayout(host, *device));
  if (host.bytes() == 0) return absl::OkStatus();
  RETURN_IF_ERROR(ctx.Activate());
  DS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device->raw_data(), host.raw_data(),
                                          host.bytes(), cudaMemcpyHostToDevice,
                                          ctx.stream()));
  return ctx.Synchronize();
}

absl::Status CopyDeviceToHost(const DeviceContext& ctx, const Tensor& device,
                              Tensor* host) {
  RETURN_IF_ERROR(CheckOnDevice(device, "copy source"));
  RETURN_IF_ERROR(CheckOnHost(*host, "copy destination"));
  RETURN_IF_ERROR(CheckSameLayout(device, *host));
  if (device.bytes() == 0) return absl::OkStatus();
  RETURN_IF_ERROR(ctx.Activate());
  DS_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host->raw_data(), device.raw_data(), device.bytes(),
                      cudaMemcpyDeviceToHost, ctx.stream()));
  return ctx.Synchronize();
}

absl::Status CopyDeviceToDevice(const DeviceContext& ctx, const Tensor& src,
                                Tensor* dst) {
  RETURN_IF_ERROR(CheckOnDevice(src, "copy source"));
  RETURN_IF_ERROR(CheckOnDevice(*dst, "copy destination"));
  RETURN_IF_ERROR(CheckSameLayout(src, *dst));
  if (src.bytes() == 0) return absl::OkStatus();
  DS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst->raw_data(), src.raw_data(),
                                          src.bytes(), cudaMemcpyDeviceToDevice,
                                          ctx.stream()));
  return absl::OkStatus();
}

absl::Status FillBytes(const DeviceContext& ctx, uint8_t byte, Tensor* device) {
  RETURN_IF_ERROR(CheckOnDevice(*device, "FillBytes target"));
  if (device->bytes() == 0) return absl::OkStatus();
  DS_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(device->raw_data(), byte, device->bytes(), ctx.stream()));
  return absl::OkStatus();
}

}  // namespace dynsparse::cuda
