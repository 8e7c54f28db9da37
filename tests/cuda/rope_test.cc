// RoPE against cpu::ApplyRope. Both compute the f32 angle position *
// inv_freq identically; the CPU takes cos/sin in double, the GPU with
// sincosf (a few ulp), so rows agree to ~1e-7 relative: kTolerance = 1e-5.
#include "kernels/cuda/rope.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

using testutil::CudaTest;
using testutil::RelativeError;

constexpr double kTolerance = 1e-5;

RopeTable MakeTable(int64_t head_dim, double theta) {
  RopeTable table;
  table.head_dim = head_dim;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    table.inv_freq.push_back(
        1.0 / std::pow(theta, static_cast<double>(2 * i) / head_dim));
  }
  return table;
}

class RopeTest : public CudaTest {};

TEST_F(RopeTest, MatchesCpu) {
  struct Case {
    int64_t rows, heads, head_dim;
    double theta;
    int32_t max_position;
  };
  const std::vector<Case> cases = {
      {1, 1, 2, 10000.0, 10},          {5, 4, 64, 10000.0, 4096},
      {16, 32, 128, 500000.0, 131072}, {3, 8, 80, 10000.0, 100000},
      {7, 2, 6, 1000.0, 2048},         {64, 8, 128, 10000.0, 8192}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "rows=" << c.rows << " heads=" << c.heads
                 << " head_dim=" << c.head_dim << " " << SeedMessage());
    const RopeTable table = MakeTable(c.head_dim, c.theta);
    std::uniform_int_distribution<int32_t> pos_dist(0, c.max_position);
    std::vector<int32_t> positions(c.rows);
    for (int32_t& p : positions) p = pos_dist(rng_);
    positions[0] = c.max_position;  // Always exercise the largest angle.
    const Tensor x_host = RandomHost({c.rows, c.heads * c.head_dim});
    Tensor ref = Tensor::FromF32(x_host.ToF32Vector(), x_host.shape());
    cpu::ApplyRope(table, positions, c.heads, &ref);

    absl::StatusOr<Tensor> inv_freq = UploadRopeInvFreq(ctx(), table);
    ASSERT_TRUE(inv_freq.ok()) << inv_freq.status();
    const Tensor pos = Upload(Tensor::FromI32(positions, {c.rows}));
    Tensor x = Upload(x_host);
    const absl::Status st = ApplyRope(ctx(), *inv_freq, pos, c.heads, &x);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_LT(RelativeError(Download(x), ref.ToF32Vector()), kTolerance);
  }
}

TEST_F(RopeTest, RejectsBadOperands) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  RopeTable odd;
  odd.head_dim = 5;
  odd.inv_freq = {1.0, 0.5};
  EXPECT_EQ(UploadRopeInvFreq(ctx(), odd).status().code(), kInvalid);
  absl::StatusOr<Tensor> inv_freq = UploadRopeInvFreq(ctx(), MakeTable(8, 1e4));
  ASSERT_TRUE(inv_freq.ok());
  Tensor x = Upload(RandomHost({3, 16}));
  const Tensor pos3 = Upload(Tensor::FromI32({0, 1, 2}, {3}));
  const Tensor pos2 = Upload(Tensor::FromI32({0, 1}, {2}));
  EXPECT_TRUE(ApplyRope(ctx(), *inv_freq, pos3, 2, &x).ok());
  EXPECT_EQ(ApplyRope(ctx(), *inv_freq, pos2, 2, &x).code(), kInvalid);
  EXPECT_EQ(ApplyRope(ctx(), *inv_freq, pos3, 3, &x).code(), kInvalid);
  EXPECT_EQ(ApplyRope(ctx(), pos3, pos3, 2, &x).code(), kInvalid);
}

}  // namespace
}  // namespace dynsparse::cuda
