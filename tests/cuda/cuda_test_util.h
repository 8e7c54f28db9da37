// Shared pieces of the CUDA kernel tests: a fixture that skips without a
// device, fresh random inputs, NaN-poisoned device outputs and the relative
// error ||out - ref|| / ||ref|| the tests bound.
#ifndef DYNSPARSE_TESTS_CUDA_CUDA_TEST_UTIL_H_
#define DYNSPARSE_TESTS_CUDA_CUDA_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gtest/gtest.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda::testutil {

// Creates a DeviceContext per test; skips the test, saying why, when there is
// no usable CUDA device (CI machines compile the kernels but have no GPU).
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<DeviceContext>> ctx =
        DeviceContext::Create();
    if (!ctx.ok()) {
      GTEST_SKIP() << "skipping CUDA test: " << ctx.status().message();
    }
    ctx_ = std::move(*ctx);
    // Fresh inputs every run; the seed is printed with any failure.
    seed_ = std::random_device()();
    rng_.seed(seed_);
  }

  DeviceContext& ctx() { return *ctx_; }

  // Normal(0, scale) values, never all zero.
  std::vector<float> RandomValues(int64_t n, float scale = 1.0f) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }

  Tensor RandomHost(Shape shape, DType dtype = DType::kF32,
                    float scale = 1.0f) {
    // Draw first: argument evaluation order is unspecified, and the Shape
    // parameter of FromF32 may be moved-into before NumElements(shape) runs.
    std::vector<float> values = RandomValues(NumElements(shape), scale);
    return Tensor::FromF32(values, std::move(shape), dtype);
  }

  Tensor Upload(const Tensor& host) {
    absl::StatusOr<Tensor> t = ToDevice(ctx(), host);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : Tensor();
  }

  // A device tensor whose every element is NaN (bytes 0xFF), so an element the
  // kernel fails to write shows up as NaN.
  Tensor PoisonedDevice(DType dtype, Shape shape) {
    absl::StatusOr<Tensor> t = AllocateDevice(ctx(), dtype, std::move(shape));
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return Tensor();
    const absl::Status s = FillBytes(ctx(), 0xFF, &*t);
    EXPECT_TRUE(s.ok()) << s;
    return *t;
  }

  // Synchronises (surfacing asynchronous kernel faults) and downloads as f32.
  std::vector<float> Download(const Tensor& device) {
    const absl::Status sync = ctx().Synchronize();
    EXPECT_TRUE(sync.ok()) << sync;
    absl::StatusOr<Tensor> host = ToHost(ctx(), device);
    EXPECT_TRUE(host.ok()) << host.status();
    return host.ok() ? host->ToF32Vector() : std::vector<float>();
  }

  std::string SeedMessage() const { return "seed=" + std::to_string(seed_); }

  std::unique_ptr<DeviceContext> ctx_;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

// ||out - ref|| / ||ref|| in double; infinity when sizes differ or any output
// is NaN/inf (an unwritten, poisoned element counts as a failure).
inline double RelativeError(const std::vector<float>& out,
                            const std::vector<float>& ref) {
  if (out.size() != ref.size()) return INFINITY;
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    const double d = double{out[i]} - double{ref[i]};
    diff += d * d;
    norm += double{ref[i]} * ref[i];
  }
  if (norm == 0.0) return diff == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

inline int64_t CountNonFinite(const std::vector<float>& v) {
  int64_t n = 0;
  for (float x : v) n += std::isfinite(x) ? 0 : 1;
  return n;
}

}  // namespace dynsparse::cuda::testutil

#endif  // DYNSPARSE_TESTS_CUDA_CUDA_TEST_UTIL_H_
