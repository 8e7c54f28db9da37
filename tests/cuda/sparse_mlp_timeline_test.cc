// The fused sparse MLP's timeline stamps (sparse_mlp.h, summarised by
// kernels/cuda/sparse_mlp_timeline.h): event times are in order within every
// block, so each statistic over the blocks keeps that order, the span is the
// last write, and the next launch begins no earlier than the previous one's
// last write; the SM ids show blocks that share an SM, and none on a grid of
// one block an SM. Skips without a CUDA device.
#include "kernels/cuda/sparse_mlp_timeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/sparse_mlp.h"

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
  struct Weights {
    Tensor w_up, b_up, w_down_t, b_down;
  };
  std::vector<Weights> copies;  // Launches alternate between two copies.
  for (int c = 0; c < 2; ++c) {
    copies.push_back({upload({kUnits, kHidden}, DType::kF16),
                      upload({kUnits}, DType::kF16),
                      upload({kUnits, kHidden}, DType::kF16),
                      upload({kHidden}, DType::kF16)});
  }
  DeviceContext& ctx = b.context();
  // kCalls back-to-back launches (as in decode) on `grid`, summarised.
  constexpr int kCalls = 4;
  auto timeline =
      [&](const FusedSparseMlpGrid& grid) -> absl::StatusOr<FusedMlpTimeline> {
    const int splits = FusedSparseMlpSplits(grid, x, copies[0].w_up, nullptr,
                                            copies[0].w_down_t, kKept);
    if (splits == 0) return absl::FailedPreconditionError("no fused kernel");
    const int blocks = splits * grid.cluster;
    const int64_t per_call = int64_t{blocks} * kFusedMlpStamps;
    // 64-bit stamps in an i32 tensor of twice the length.
    ASSIGN_OR_RETURN(Tensor stamps,
                     AllocateDevice(ctx, DType::kI32, {2 * kCalls * per_call}));
    auto* stamp_data = static_cast<uint64_t*>(stamps.raw_data());
    Tensor scratch = b.Allocate(DType::kF32, {splits * kHidden});
    Tensor y = b.Allocate(DType::kF32, {1, kHidden});
    for (int call = 0; call < kCalls; ++call) {
      const Weights& w = copies[call % copies.size()];
      RETURN_IF_ERROR(FusedSparseMlp(
          ctx, x, w.w_up, w.b_up, nullptr, nullptr, w.w_down_t, w.b_down,
          device_ids->data<int32_t>(), kKept, Activation::kRelu, {grid, splits},
          scratch.data<float>(), b.FusedMlpCounters(), &y,
          stamp_data + call * per_call));
    }
    RETURN_IF_ERROR(ctx.Synchronize());
    std::vector<uint64_t> host(kCalls * per_call);
    if (cudaMemcpy(host.data(), stamp_data, host.size() * sizeof(uint64_t),
                   cudaMemcpyDeviceToHost) != cudaSuccess) {
      return absl::InternalError("stamps not copied");
    }
    return SummarizeFusedMlpTimeline(host, kCalls, blocks);
  };
  const FusedSparseMlpGrid grid = FusedSparseMlpClusters(
      ctx, kHidden, DType::kF16, false, Activation::kRelu, /*cluster=*/8);
  if (ctx.info().major < 9) {  // The fused kernel needs clusters (sm_90).
    EXPECT_EQ(FusedSparseMlpSplits(grid, x, copies[0].w_up, nullptr,
                                   copies[0].w_down_t, kKept),
              0);
    return;
  }
  auto timed = timeline(grid);
  ASSERT_TRUE(timed.ok()) << timed.status();
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
  // The SM ids: more blocks than SMs must put two on some SM.
  if (timed->blocks > ctx.info().sm_count) {
    EXPECT_GE(timed->shared_sm_blocks, 2);
  }
  // A grid of one block an SM puts none together.
  auto alone = timeline(FusedSparseMlpClusters(ctx, kHidden, DType::kF16, false,
                                               Activation::kRelu, /*cluster=*/8,
                                               /*one_block_an_sm=*/true));
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_LE(alone->blocks, ctx.info().sm_count);
  EXPECT_EQ(alone->shared_sm_blocks, 0);
}

}  // namespace
}  // namespace dynsparse::cuda
