// The FlashAttention-2-style prefill (flash_prefill.h) against kernels/cpu's
// reference attention: causal prefill, GQA, prompts that end mid-tile,
// prefills after cached keys, and LazyLLM key lists, in every block shape
// (FlashPrefillConfig). Then, on the Llama-2-7B shape, against the old
// tensor-core kernel with both kernels' times printed (information, not an
// assertion).
#include "kernels/cuda/flash_prefill.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/graph/backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/cuda/attention_test_util.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

// Every block shape FlashPrefillAttention offers.
constexpr FlashPrefillConfig kConfigs[] = {{4, 2}, {4, 3}, {8, 1}};

std::string Name(FlashPrefillConfig c) {
  return std::to_string(c.warps) + "x" + std::to_string(c.min_blocks);
}

struct Case {
  int64_t n;         // query rows
  int64_t start;     // position of the first query row (keys before it
                     // are cached)
  int64_t capacity;  // cache rows
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  bool key_list;  // LazyLLM: a random ascending subset of the rows are keys,
                  // the queries are the last n of them
};

class FlashPrefillTest : public testutil::CudaTest,
                         public ::testing::WithParamInterface<Case> {};

TEST_P(FlashPrefillTest, MatchesCpuReference) {
  const Case c = GetParam();
  std::vector<int32_t> key_rows;
  std::vector<int32_t> positions(c.n);
  if (c.key_list) {
    std::bernoulli_distribution keep(0.6);
    std::mt19937 rng(static_cast<uint32_t>(c.n * 7919 + c.capacity));
    for (int32_t r = 0; r < c.capacity; ++r) {
      if (keep(rng)) key_rows.push_back(r);
    }
    ASSERT_GE(static_cast<int64_t>(key_rows.size()), c.n);
    std::copy(key_rows.end() - c.n, key_rows.end(), positions.begin());
  } else {
    std::iota(positions.begin(), positions.end(),
              static_cast<int32_t>(c.start));
  }
  const int64_t keys =
      c.key_list ? static_cast<int64_t>(key_rows.size()) : c.start + c.n;
  ASSERT_LE(keys, c.capacity);
  const Tensor q = RandomHost({c.n, c.heads * c.head_dim});
  const Tensor k = RandomHost({c.capacity, c.kv_heads * c.head_dim});
  const Tensor v = RandomHost({c.capacity, c.kv_heads * c.head_dim});

  const Tensor ref = testutil::CpuAttention(q, k, v, keys, positions, key_rows,
                                            c.heads, c.kv_heads, c.head_dim);

  // Cache rows that are not keys hold NaN (a recycled cache may): they must
  // not leak into the result.
  Tensor dk = Upload(k), dv = Upload(v);
  if (c.key_list) {
    std::vector<bool> listed(c.capacity, false);
    for (int32_t r : key_rows) listed[r] = true;
    for (int64_t r = 0; r < c.capacity; ++r) {
      if (listed[r]) continue;
      Tensor row_k = dk.Rows(r, r + 1), row_v = dv.Rows(r, r + 1);
      ASSERT_TRUE(FillBytes(ctx(), 0xFF, &row_k).ok());
      ASSERT_TRUE(FillBytes(ctx(), 0xFF, &row_v).ok());
    }
  } else if (keys < c.capacity) {
    Tensor tail_k = dk.Rows(keys, c.capacity),
           tail_v = dv.Rows(keys, c.capacity);
    ASSERT_TRUE(FillBytes(ctx(), 0xFF, &tail_k).ok());
    ASSERT_TRUE(FillBytes(ctx(), 0xFF, &tail_v).ok());
  }
  const Tensor dq = Upload(q);
  const Tensor dpos =
      Upload(Tensor::FromI32(positions, {static_cast<int64_t>(c.n)}));
  Tensor dkeys;
  DeviceAttentionArgs args =
      testutil::DeviceArgs(dq, dk, dv, dpos, c.heads, c.kv_heads, c.head_dim);
  if (c.key_list) {
    dkeys = Upload(Tensor::FromI32(key_rows, {keys}));
    args.key_rows = dkeys.data<int32_t>();
    args.num_keys = keys;
  }
  for (const FlashPrefillConfig config : kConfigs) {
    Tensor out = PoisonedDevice(DType::kF32, ref.shape());
    args.out = &out;
    ASSERT_TRUE(FlashPrefillSupported(args));
    Tensor scratch = PoisonedDevice(
        DType::kF16, {FlashPrefillScratchBytes(args, keys) / 2 + 1});
    ASSERT_TRUE(
        FlashPrefillAttention(ctx(), args, keys, scratch.raw_data(), config)
            .ok());
    // f16 q, k, v and probabilities (2^-11 relative): 3e-3, like the old
    // tensor-core kernel.
    const double err =
        testutil::RelativeError(Download(out), ref.ToF32Vector());
    EXPECT_LT(err, 3e-3) << Name(config) << " " << SeedMessage();
    std::cout << "flash n=" << c.n << " start=" << c.start
              << " heads=" << c.heads << "/" << c.kv_heads
              << " d=" << c.head_dim << (c.key_list ? " key list" : "") << " "
              << Name(config) << " err=" << err << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashPrefillTest,
    ::testing::Values(Case{300, 0, 320, 8, 2, 128, false},     // GQA, tail
                      Case{1000, 24, 1100, 4, 2, 128, false},  // cached keys
                      Case{130, 20, 200, 4, 4, 64, false},     // d 64
                      Case{64, 0, 64, 2, 1, 128, false},       // one tile
                      Case{17, 500, 600, 4, 1, 128, false},    // few rows
                      Case{1, 0, 8, 2, 2, 64, false},          // one row
                      Case{257, 0, 700, 8, 2, 128, true},      // key list
                      Case{90, 0, 400, 4, 4, 64, true}));      // key list

TEST(FlashPrefillSupportTest, RejectsOtherHeadDims) {
  DeviceAttentionArgs args;
  args.head_dim = 96;
  EXPECT_FALSE(FlashPrefillSupported(args));
}

// Llama-2-7B's attention at 8192 tokens (32 heads of 128): the flash kernel
// against the old tensor-core kernel (same f16 rounding of q, k and v), and
// both timed.
class FlashPrefillLlamaShapeTest : public testutil::CudaTest {};

TEST_F(FlashPrefillLlamaShapeTest, MatchesOldKernelAndPrintsTimes) {
  const int64_t n = 8192, heads = 32, d = 128;
  const Tensor dq = Upload(RandomHost({n, heads * d}));
  const Tensor dk = Upload(RandomHost({n, heads * d}));
  const Tensor dv = Upload(RandomHost({n, heads * d}));
  std::vector<int32_t> positions(n);
  std::iota(positions.begin(), positions.end(), 0);
  const Tensor dpos = Upload(Tensor::FromI32(positions, {n}));
  DeviceAttentionArgs args =
      testutil::DeviceArgs(dq, dk, dv, dpos, heads, heads, d);
  args.tensor_cores = true;
  Tensor old_out = PoisonedDevice(DType::kF32, {n, heads * d});
  Tensor scratch =
      PoisonedDevice(DType::kF16, {FlashPrefillScratchBytes(args, n) / 2 + 1});
  const double flops = 4.0 * heads * d * (static_cast<double>(n) * n / 2);
  cudaEvent_t start, stop;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  const auto time_ms = [&](auto launch) {
    launch();  // warm-up
    cudaEventRecord(start, ctx().stream());
    constexpr int kRuns = 5;
    for (int i = 0; i < kRuns; ++i) launch();
    cudaEventRecord(stop, ctx().stream());
    cudaEventSynchronize(stop);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, start, stop);
    return ms / kRuns;
  };
  args.out = &old_out;
  const float old_ms =
      time_ms([&] { ASSERT_TRUE(PrefillAttention(ctx(), args, n).ok()); });
  const std::vector<float> old_values = Download(old_out);
  std::cout << "old tensor-core prefill n=" << n << ": " << old_ms << " ms, "
            << flops / old_ms * 1e-9 << " TFLOP/s\n";
  for (const FlashPrefillConfig config : kConfigs) {
    Tensor out = PoisonedDevice(DType::kF32, {n, heads * d});
    args.out = &out;
    const float ms = time_ms([&] {
      ASSERT_TRUE(
          FlashPrefillAttention(ctx(), args, n, scratch.raw_data(), config)
              .ok());
    });
    const double err = testutil::RelativeError(Download(out), old_values);
    EXPECT_LT(err, 3e-3) << Name(config) << " " << SeedMessage();
    std::cout << "flash prefill n=" << n << " " << Name(config) << ": " << ms
              << " ms (incl. f16 K/V copy), " << flops / ms * 1e-9
              << " TFLOP/s, diff vs old " << err << "\n";
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace
}  // namespace dynsparse::cuda
