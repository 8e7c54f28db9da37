// DeviceContext, error conversion and device tensors.
#include "kernels/cuda/device_context.h"

#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testutil::CudaTest;

// These two run on any machine, with or without a GPU.
TEST(CudaErrorTest, ConvertsRuntimeAndCublasErrors) {
  EXPECT_TRUE(CudaErrorToStatus(cudaSuccess, "noop").ok());
  const absl::Status oom =
      CudaErrorToStatus(cudaErrorMemoryAllocation, "alloc");
  EXPECT_EQ(oom.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(oom.message()), HasSubstr("alloc"));
  EXPECT_THAT(std::string(oom.message()),
              HasSubstr("cudaErrorMemoryAllocation"));
  EXPECT_EQ(CudaErrorToStatus(cudaErrorNoDevice, "x").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaErrorToStatus(cudaErrorInvalidValue, "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorToStatus(cudaErrorLaunchFailure, "x").code(),
            absl::StatusCode::kInternal);
  EXPECT_TRUE(CublasErrorToStatus(CUBLAS_STATUS_SUCCESS, "x").ok());
  const absl::Status cublas =
      CublasErrorToStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate");
  EXPECT_EQ(cublas.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(cublas.message()),
              HasSubstr("CUBLAS_STATUS_ALLOC_FAILED"));
}

TEST(CudaErrorTest, CreateExplainsMissingDevice) {
  const absl::StatusOr<int> count = CudaDeviceCount();
  absl::StatusOr<std::unique_ptr<DeviceContext>> ctx = DeviceContext::Create();
  if (count.ok()) {
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    EXPECT_GT(*count, 0);
    const absl::StatusOr<std::unique_ptr<DeviceContext>> bad =
        DeviceContext::Create(*count);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  } else {
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(ctx.status().message()),
                StartsWith("no CUDA device: "));
  }
}

class DeviceContextTest : public CudaTest {};

TEST_F(DeviceContextTest, ReadsDeviceFacts) {
  const DeviceInfo& info = ctx().info();
  std::cout << "device: " << info.DebugString() << "\n";
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GT(info.l2_bytes, 0);
  EXPECT_GT(info.global_memory_bytes, 0);
  EXPECT_GT(info.major, 0);
  EXPECT_NE(ctx().stream(), nullptr);
  EXPECT_NE(ctx().cublas(), nullptr);
  EXPECT_GE(ctx().workspace_bytes(), DeviceContext::kDefaultWorkspaceBytes);
}

TEST_F(DeviceContextTest, RoundTripsEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const Tensor host = RandomHost({7, 13}, dtype);
    const Tensor device = Upload(host);
    EXPECT_EQ(device.device(), Device::kCuda);
    EXPECT_EQ(device.dtype(), dtype);
    EXPECT_EQ(device.shape(), host.shape());
    absl::StatusOr<Tensor> back = ToHost(ctx(), device);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->device(), Device::kCpu);
    EXPECT_EQ(std::memcmp(back->raw_data(), host.raw_data(), host.bytes()), 0);
  }
  std::vector<int32_t> ids = {3, -1, 7, 1 << 30};
  const Tensor host_ids = Tensor::FromI32(ids, {4});
  absl::StatusOr<Tensor> back = ToHost(ctx(), Upload(host_ids));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::memcmp(back->raw_data(), ids.data(), 16), 0);
}

TEST_F(DeviceContextTest, RowViewsCopyTheirRows) {
  const Tensor host = RandomHost({6, 5});
  const Tensor device = Upload(host);
  absl::StatusOr<Tensor> rows = ToHost(ctx(), device.Rows(2, 4));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->ToF32Vector(), host.Rows(2, 4).ToF32Vector());
  // Host -> device copy into a view writes only that view.
  Tensor target = Upload(host);
  Tensor view = target.Rows(1, 2);
  const Tensor one_row = RandomHost({1, 5});
  ASSERT_TRUE(CopyHostToDevice(ctx(), one_row, &view).ok());
  const std::vector<float> got = Download(target);
  const std::vector<float> want = host.ToF32Vector();
  for (int i = 0; i < 30; ++i) {
    const float expected =
        (i / 5 == 1) ? one_row.ToF32Vector()[i % 5] : want[i];
    EXPECT_EQ(got[i], expected) << i;
  }
}

TEST_F(DeviceContextTest, AllocateZeroFillsAndFillBytesPoisons) {
  absl::StatusOr<Tensor> t = AllocateDevice(ctx(), DType::kF32, {3, 1000});
  ASSERT_TRUE(t.ok()) << t.status();
  for (float v : Download(*t)) ASSERT_EQ(v, 0.0f);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    absl::StatusOr<Tensor> p = AllocateDevice(ctx(), dtype, {17});
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(FillBytes(ctx(), 0xFF, &*p).ok());
    for (float v : Download(*p)) EXPECT_TRUE(std::isnan(v)) << DTypeName(dtype);
  }
  // Zero-element tensors are valid.
  absl::StatusOr<Tensor> empty = AllocateDevice(ctx(), DType::kF32, {0, 4});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(Download(*empty).empty());
}

TEST_F(DeviceContextTest, DeviceToDeviceCopy) {
  const Tensor host = RandomHost({4, 33}, DType::kBF16);
  const Tensor src = Upload(host);
  absl::StatusOr<Tensor> dst = AllocateDevice(ctx(), DType::kBF16, {4, 33});
  ASSERT_TRUE(dst.ok());
  ASSERT_TRUE(CopyDeviceToDevice(ctx(), src, &*dst).ok());
  EXPECT_EQ(Download(*dst), host.ToF32Vector());
}

TEST_F(DeviceContextTest, RejectsBadCopies) {
  const Tensor host = RandomHost({2, 3});
  Tensor device = Upload(host);
  Tensor other_host = RandomHost({2, 3});
  EXPECT_EQ(CopyHostToDevice(ctx(), host, &other_host).code(),
            absl::StatusCode::kInvalidArgument);
  Tensor wrong_size = Upload(RandomHost({3, 3}));
  EXPECT_EQ(CopyHostToDevice(ctx(), host, &wrong_size).code(),
            absl::StatusCode::kInvalidArgument);
  Tensor wrong_dtype = Upload(RandomHost({2, 3}, DType::kF16));
  EXPECT_EQ(CopyDeviceToDevice(ctx(), device, &wrong_dtype).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ToDevice(ctx(), device).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ToHost(ctx(), host).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AllocateDevice(ctx(), DType::kF32, {-1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DeviceContextTest, HugeAllocationIsResourceExhausted) {
  // 2^50 bytes: more than any GPU has.
  const absl::StatusOr<Tensor> t =
      AllocateDevice(ctx(), DType::kF32, {int64_t{1} << 48});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted)
      << t.status();
  // The failure is not sticky: the context keeps working.
  EXPECT_TRUE(ctx().Synchronize().ok());
  EXPECT_TRUE(AllocateDevice(ctx(), DType::kF32, {16}).ok());
}

TEST_F(DeviceContextTest, WorkspaceGrows) {
  absl::StatusOr<void*> small = ctx().Workspace(1024);
  ASSERT_TRUE(small.ok());
  EXPECT_NE(*small, nullptr);
  const size_t big = ctx().workspace_bytes() + 12345;
  absl::StatusOr<void*> grown = ctx().Workspace(big);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_GE(ctx().workspace_bytes(), big);
}

}  // namespace
}  // namespace dynsparse::cuda
