// cuda::LinearBatched (one strided-batched cuBLAS GEMM over weights and
// outputs that sit back to back) against one cuda::Linear per weight on the
// same rounded input.
#include "kernels/cuda/linear.h"

#include <vector>

#include "kernels/cuda/device_pool.h"
#include "kernels/cuda/graph_ops.h"
#include "tests/cuda/attention_test_util.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

class LinearTest : public testutil::CudaTest {};

TEST_F(LinearTest, BatchedMatchesOneGemmPerWeight) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t rows : {9, 37, 300}) {
      const int64_t count = 3, out = 96, in = 200;
      // Three weights back to back, as UploadWeights leaves q/k/v.
      const Tensor w = Upload(RandomHost({count * out, in}, dtype, 0.1f));
      const Tensor x = Upload(RandomHost({rows, in}));
      absl::StatusOr<Tensor> rounded = AllocateDevice(ctx(), dtype, {rows, in});
      ASSERT_TRUE(rounded.ok()) << rounded.status();
      ASSERT_TRUE(ConvertF32(ctx(), x, &*rounded).ok());
      DevicePool pool(ctx());

      Tensor batched = PoisonedDevice(DType::kF32, {count * rows * out});
      Tensor first = batched.Rows(0, rows * out).Reshape({rows, out});
      ASSERT_TRUE(
          LinearBatched(ctx(), *rounded, w.Rows(0, out), count, &first).ok());
      const std::vector<float> got = Download(batched);
      for (int64_t i = 0; i < count; ++i) {
        Tensor one = PoisonedDevice(DType::kF32, {rows, out});
        ASSERT_TRUE(Linear(ctx(), pool, *rounded,
                           w.Rows(i * out, (i + 1) * out), Tensor(), &one)
                        .ok());
        const std::vector<float> want = Download(one);
        const std::vector<float> part(got.begin() + i * rows * out,
                                      got.begin() + (i + 1) * rows * out);
        EXPECT_LT(testutil::RelativeError(part, want), 1e-5)
            << DTypeName(dtype) << " rows " << rows << " weight " << i << " "
            << SeedMessage();
      }
    }
  }
}

TEST_F(LinearTest, BatchedRejectsMismatchedShapes) {
  const Tensor w = Upload(RandomHost({64, 32}, DType::kF16));
  const Tensor x = Upload(RandomHost({16, 32}, DType::kF16));
  Tensor y = PoisonedDevice(DType::kF32, {16, 48});  // out is 64 / 2 = 32
  const absl::Status s = LinearBatched(ctx(), x, w.Rows(0, 32), 2, &y);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  const Tensor few = Upload(RandomHost({8, 32}, DType::kF16));  // GEMV rows
  Tensor y8 = PoisonedDevice(DType::kF32, {8, 32});
  EXPECT_FALSE(LinearBatched(ctx(), few, w.Rows(0, 32), 2, &y8).ok());
}

}  // namespace
}  // namespace dynsparse::cuda
