// The fused sparse MLP's timeline (kernels/cuda/sparse_mlp_timeline.h): its
// event times are in order within every block, so each statistic over the
// blocks keeps that order, the span is the last write, and the next launch
// begins no earlier than the previous one's last write. Skips without a CUDA
// device.
#include "kernels/cuda/sparse_mlp_timeline.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend.h"

namespace dynsparse::cuda {
namespace {

TEST(FusedMlpTimelineTest, EventsAreOrderedAndTheSpanIsTheLastWrite) {
  auto backend = CudaBackend::Create();
  if (!backend.ok()) {
    GTEST_SKIP() << "skipping CUDA test: " << backend.status().message();
  }
  CudaBackend& b = **backend;
  constexpr int64_t kHidden = 1536, kUnits = 600, kKept = 90;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto upload = [&](Shape shape, DType dtype) {
    std::vector<float> v(NumElements(shape));
    for (float& x : v) x = normal(rng);
    auto t = b.Upload(Tensor::FromF32(v, std::move(shape), dtype));
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  };
  std::vector<int32_t> ids(kUnits);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(kKept);
  std::sort(ids.begin(), ids.end());
  auto device_ids = b.Upload(Tensor::FromI32(ids, {1, kKept}));
  ASSERT_TRUE(device_ids.ok()) << device_ids.status();
  const Tensor x = upload({1, kHidden}, DType::kF32);
  std::vector<FusedMlpOperands> copies;
  for (int c = 0; c < 2; ++c) {
    copies.push_back({upload({kUnits, kHidden}, DType::kF16),
                      upload({kUnits}, DType::kF16), Tensor(),
                      upload({kUnits, kHidden}, DType::kF16),
                      upload({kHidden}, DType::kF16), *device_ids});
  }
  auto timed = MeasureFusedMlpTimeline(b, x, copies, Activation::kRelu, 4);
  if (b.context().info().major < 9) {
    EXPECT_FALSE(timed.ok());  // The fused kernel needs clusters (sm_90).
    return;
  }
  ASSERT_TRUE(timed.ok()) << timed.status();
  EXPECT_GT(timed->splits, 0);
  EXPECT_EQ(timed->blocks, timed->splits * kFusedMlpClusterBlocks);
  EXPECT_EQ(timed->events_us[0][0], 0.0);  // The first block's begin.
  for (int e = 0; e < kFusedMlpEvents; ++e) {
    EXPECT_LE(timed->events_us[e][0], timed->events_us[e][1]) << e;
    EXPECT_LE(timed->events_us[e][1], timed->events_us[e][2]) << e;
    if (e > 0) {
      for (int q = 0; q < 3; ++q) {
        EXPECT_GE(timed->events_us[e][q], timed->events_us[e - 1][q])
            << e << " " << q;
      }
    }
  }
  EXPECT_EQ(timed->span_us, timed->events_us[kFusedMlpEvents - 1][2]);
  EXPECT_GE(timed->between_calls_us, 0.0);  // After the reduction.
  EXPECT_NE(FusedMlpTimelineJson(*timed, "t").find("\"down_done_us\""),
            std::string::npos);
}

}  // namespace
}  // namespace dynsparse::cuda
