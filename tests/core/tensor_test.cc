#include "core/tensor.h"

#include "gtest/gtest.h"

namespace dynsparse {
namespace {

TEST(TensorTest, RowsShareStorage) {
  Tensor t = Tensor::FromF32({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor rows = t.Rows(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(rows.ToF32Vector(), (std::vector<float>{3, 4, 5, 6}));
  rows.data<float>()[0] = 30;
  EXPECT_EQ(t.ToF32Vector()[2], 30);
}

TEST(TensorTest, ConvertToHalfPrecisionRoundsEachElement) {
  Tensor t = Tensor::FromF32({1.0f, 0.1f, -1000.5f}, {3});
  Tensor h = t.ConvertTo(DType::kF16);
  EXPECT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.bytes(), 6u);
  const std::vector<float> back = h.ToF32Vector();
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_NEAR(back[1], 0.1f, 1e-4);
  EXPECT_EQ(back[2], -1000.5f);
}

TEST(TensorTest, ReshapeKeepsElements) {
  Tensor t = Tensor::FromI32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = t.Reshape({3, 2});
  EXPECT_EQ(r.dim(0), 3);
  EXPECT_EQ(r.dim(-1), 2);
  EXPECT_EQ(r.data<int32_t>()[5], 6);
  EXPECT_EQ(r.DebugString(), "i32[3,2] cpu");
}

TEST(TensorTest, EmptyTensorHasNoStorage) {
  Tensor t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.DebugString(), "<empty>");
}

}  // namespace
}  // namespace dynsparse
