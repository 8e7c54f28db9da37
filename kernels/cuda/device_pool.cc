#include "kernels/cuda/device_pool.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace dynsparse::cuda {
namespace {

// Blocks are rounded up so similar sizes share blocks; a cached block is
// reused for a request of at least half its size, which bounds the waste.
constexpr size_t kGranule = 512;

size_t RoundUp(size_t bytes) {
  if (bytes == 0) bytes = 1;
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

}  // namespace

DevicePool::State::~State() {
  for (auto& [size, block] : free_blocks) cudaFree(block);
}

DevicePool::DevicePool(const DeviceContext& ctx)
    : state_(std::make_shared<State>()) {
  state_->device = ctx.device();
}

DevicePool::~DevicePool() = default;

absl::StatusOr<Tensor> DevicePool::Allocate(DType dtype, Shape shape) {
  const size_t want =
      RoundUp(static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype));
  void* block = nullptr;
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->free_blocks.lower_bound(want);
    if (it != state_->free_blocks.end() && it->first <= 2 * want) {
      size = it->first;
      block = it->second;
      state_->free_blocks.erase(it);
      state_->cached -= static_cast<int64_t>(size);
    }
  }
  if (block == nullptr) {
    size = want;
    cudaError_t error = cudaMalloc(&block, size);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();  // Clear the sticky allocation error.
      Trim();
      error = cudaMalloc(&block, size);
    }
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      return CudaErrorToStatus(
          error,
          absl::StrCat("device pool: cudaMalloc of ", size, " bytes for ",
                       DTypeName(dtype), ShapeToString(shape), " (live ",
                       live_bytes() >> 20, " MiB)"));
    }
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->live += static_cast<int64_t>(size);
  }
  std::shared_ptr<State> state = state_;
  auto storage = std::make_shared<Storage>(
      block, size, Device::kCuda, [state, size](void* p) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->free_blocks.emplace(size, p);
        state->cached += static_cast<int64_t>(size);
        state->live -= static_cast<int64_t>(size);
      });
  return Tensor(std::move(storage), 0, dtype, std::move(shape));
}

void DevicePool::Trim() {
  std::multimap<size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    blocks.swap(state_->free_blocks);
    state_->cached = 0;
  }
  // cudaFree synchronises the device, so work still queued that reads a
  // cached block's old contents has finished before the block goes away.
  for (auto& [size, block] : blocks) cudaFree(block);
}

int64_t DevicePool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->cached;
}

int64_t DevicePool::live_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->live;
}

}  // namespace dynsparse::cuda
