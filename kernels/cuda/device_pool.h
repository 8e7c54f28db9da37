// DevicePool: a caching allocator for activation tensors on one device.
//
// Every Session::Forward allocates a few dozen tensors per layer; cudaMalloc
// and cudaFree each synchronise the device, so the backend recycles blocks
// instead. A released block returns to the pool and is handed out again in
// stream order on the one stream the backend uses, so reuse needs no event.
#ifndef DYNSPARSE_KERNELS_CUDA_DEVICE_POOL_H_
#define DYNSPARSE_KERNELS_CUDA_DEVICE_POOL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

class DevicePool {
 public:
  explicit DevicePool(const DeviceContext& ctx);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // A device tensor whose contents are unspecified (recycled bytes). Fails
  // with ResourceExhausted, naming the size, when the device is full even
  // after the cached blocks were returned to the driver.
  absl::StatusOr<Tensor> Allocate(DType dtype, Shape shape);

  // Returns every cached (unused) block to the driver.
  void Trim();
  int64_t cached_bytes() const;
  int64_t live_bytes() const;

 private:
  // Shared with every Storage the pool hands out, so a tensor that outlives
  // the pool still has somewhere to return its block.
  struct State {
    int device = 0;
    mutable std::mutex mu;
    std::multimap<size_t, void*> free_blocks;  // size -> block
    int64_t cached = 0;
    int64_t live = 0;
    ~State();
  };
  std::shared_ptr<State> state_;
};

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_DEVICE_POOL_H_
