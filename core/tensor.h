// Tensor: a dense, row-major, contiguous n-d array of one DType on one device.
//
// Storage is shared (copies of a Tensor alias the same bytes), so views such as
// row ranges are cheap; the storage may be owned memory, an mmap'd checkpoint
// region, or device memory, each released by its own deleter.
#ifndef DYNSPARSE_CORE_TENSOR_H_
#define DYNSPARSE_CORE_TENSOR_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/logging.h"

namespace dynsparse {

enum class Device { kCpu, kCuda };
const char* DeviceName(Device device);

using Shape = std::vector<int64_t>;
std::string ShapeToString(const Shape& shape);
int64_t NumElements(const Shape& shape);

// A block of bytes and the function that releases it.
class Storage {
 public:
  Storage(void* data, size_t bytes, Device device,
          std::function<void(void*)> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Host memory, 64-byte aligned for vector loads, zero-initialised.
  static std::shared_ptr<Storage> AllocateHost(size_t bytes);

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  std::function<void(void*)> release_;
};

class Tensor {
 public:
  Tensor() = default;  // Empty: no storage, used for absent optional weights.
  Tensor(std::shared_ptr<Storage> storage, size_t byte_offset, DType dtype,
         Shape shape);

  // Zero-filled host tensor.
  static Tensor Zeros(DType dtype, Shape shape);
  // Host tensor copied from f32 values (converted to `dtype`).
  static Tensor FromF32(const std::vector<float>& values, Shape shape,
                        DType dtype = DType::kF32);
  static Tensor FromI32(const std::vector<int32_t>& values, Shape shape);

  bool empty() const { return storage_ == nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::kCpu; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // Negative i counts from the end.
  int64_t numel() const { return NumElements(shape_); }
  size_t bytes() const { return numel() * DTypeSize(dtype_); }

  void* raw_data() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }

  // Same bytes, new shape with the same element count.
  Tensor Reshape(Shape shape) const;
  // Rows [begin, end) along the first dimension; shares storage.
  Tensor Rows(int64_t begin, int64_t end) const;
  // A deep host copy converted to `dtype`.
  Tensor ConvertTo(DType dtype) const;
  // Host copy of all elements as f32 (for tests and reporting).
  std::vector<float> ToF32Vector() const;

  std::string DebugString() const;  // "f32[2,3] cpu"

 private:
  std::shared_ptr<Storage> storage_;
  size_t byte_offset_ = 0;
  DType dtype_ = DType::kF32;
  Shape shape_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_TENSOR_H_
