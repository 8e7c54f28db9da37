#include "core/tensor.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dynsparse {

const char* DeviceName(Device device) {
  return device == Device::kCpu ? "cpu" : "cuda";
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Storage::Storage(void* data, size_t bytes, Device device,
                 std::function<void(void*)> release)
    : data_(data),
      bytes_(bytes),
      device_(device),
      release_(std::move(release)) {}

Storage::~Storage() {
  if (release_) release_(data_);
}

std::shared_ptr<Storage> Storage::AllocateHost(size_t bytes) {
  constexpr size_t kAlign = 64;
  const size_t rounded = ((bytes + kAlign - 1) / kAlign) * kAlign;
  void* data = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  DS_CHECK(data != nullptr)
      << "host allocation of " << bytes << " bytes failed";
  std::memset(data, 0, rounded == 0 ? kAlign : rounded);
  return std::make_shared<Storage>(data, bytes, Device::kCpu,
                                   [](void* p) { std::free(p); });
}

Tensor::Tensor(std::shared_ptr<Storage> storage, size_t byte_offset,
               DType dtype, Shape shape)
    : storage_(std::move(storage)),
      byte_offset_(byte_offset),
      dtype_(dtype),
      shape_(std::move(shape)) {
  DS_CHECK(storage_ != nullptr);
  DS_CHECK_LE(byte_offset_ + bytes(), storage_->bytes());
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  const size_t bytes = NumElements(shape) * DTypeSize(dtype);
  return Tensor(Storage::AllocateHost(bytes), 0, dtype, std::move(shape));
}

Tensor Tensor::FromF32(const std::vector<float>& values, Shape shape,
                       DType dtype) {
  DS_CHECK_EQ(static_cast<int64_t>(values.size()), NumElements(shape));
  Tensor t = Zeros(dtype, std::move(shape));
  ConvertElements(DType::kF32, values.data(), dtype, t.raw_data(),
                  values.size());
  return t;
}

Tensor Tensor::FromI32(const std::vector<int32_t>& values, Shape shape) {
  DS_CHECK_EQ(static_cast<int64_t>(values.size()), NumElements(shape));
  Tensor t = Zeros(DType::kI32, std::move(shape));
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int32_t));
  return t;
}

int64_t Tensor::dim(int i) const {
  const int r = rank();
  if (i < 0) i += r;
  DS_CHECK(i >= 0 && i < r) << "dim " << i << " of " << ShapeToString(shape_);
  return shape_[i];
}

void* Tensor::raw_data() const {
  DS_CHECK(storage_ != nullptr) << "access to an empty tensor";
  return static_cast<char*>(storage_->data()) + byte_offset_;
}

Tensor Tensor::Reshape(Shape shape) const {
  DS_CHECK_EQ(NumElements(shape), numel())
      << ShapeToString(shape_) << " -> " << ShapeToString(shape);
  return Tensor(storage_, byte_offset_, dtype_, std::move(shape));
}

Tensor Tensor::Rows(int64_t begin, int64_t end) const {
  DS_CHECK(rank() >= 1 && begin >= 0 && begin <= end && end <= shape_[0])
      << "rows [" << begin << "," << end << ") of " << ShapeToString(shape_);
  const int64_t row_elems = shape_[0] == 0 ? 0 : numel() / shape_[0];
  Shape shape = shape_;
  shape[0] = end - begin;
  return Tensor(storage_, byte_offset_ + begin * row_elems * DTypeSize(dtype_),
                dtype_, std::move(shape));
}

Tensor Tensor::ConvertTo(DType dtype) const {
  DS_CHECK(device() == Device::kCpu) << "ConvertTo needs a host tensor";
  Tensor out = Zeros(dtype, shape_);
  ConvertElements(dtype_, raw_data(), dtype, out.raw_data(), numel());
  return out;
}

std::vector<float> Tensor::ToF32Vector() const {
  std::vector<float> out(numel());
  if (dtype_ == DType::kI32) {
    const int32_t* src = data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(src[i]);
  } else {
    ConvertElements(dtype_, raw_data(), DType::kF32, out.data(), out.size());
  }
  return out;
}

std::string Tensor::DebugString() const {
  if (empty()) return "<empty>";
  return absl::StrCat(DTypeName(dtype_), ShapeToString(shape_), " ",
                      DeviceName(device()));
}

}  // namespace dynsparse
