// The FlashAttention-2-style prefill (flash_prefill.h) against kernels/cpu's
// reference attention: causal prefill, GQA, prompts that end mid-tile,
// prefills after cached keys, and LazyLLM key lists, in every block shape
// (FlashPrefillConfig), on f32 and f16 KV caches. Then, on the Llama-2-7B
// shape, against the old tensor-core kernel with the kernels' times printed
// (information, not an assertion). Last, the other cp.async tensor-core
// kernel, PipelinedSplitAttention (pipelined_attention.h), on its own: its
// split partials merged on the host against the same reference, on both
// caches.
//
// An f16 cache holds the f16 rounding of the random values; the reference
// sees the rounded values as f32, so the f32 tolerances hold (the tensor
// cores round an f32 cache's K and V the same way).
#include "kernels/cuda/flash_prefill.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/graph/backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/pipelined_attention.h"
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

class FlashPrefillTest
    : public testutil::CudaTest,
      public ::testing::WithParamInterface<std::tuple<Case, DType>> {};

TEST_P(FlashPrefillTest, MatchesCpuReference) {
  const auto [c, kv_dtype] = GetParam();
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
  // The cache (f32 or f16) and its values as f32 for the reference.
  const Tensor k = RandomHost({c.capacity, c.kv_heads * c.head_dim}, kv_dtype);
  const Tensor v = RandomHost({c.capacity, c.kv_heads * c.head_dim}, kv_dtype);

  const Tensor ref = testutil::CpuAttention(
      q, k.ConvertTo(DType::kF32), v.ConvertTo(DType::kF32), keys, positions,
      key_rows, c.heads, c.kv_heads, c.head_dim);

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
    EXPECT_LT(err, 3e-3) << Name(config) << " " << DTypeName(kv_dtype)
                         << " cache " << SeedMessage();
    std::cout << "flash n=" << c.n << " start=" << c.start
              << " heads=" << c.heads << "/" << c.kv_heads
              << " d=" << c.head_dim << (c.key_list ? " key list" : "") << " "
              << DTypeName(kv_dtype) << " cache " << Name(config)
              << " err=" << err << "\n";
  }
}

// An f16 cache without a key list is read in place; with one, its listed
// rows are gathered (f32: both rounded into the scratch copy).
INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashPrefillTest,
    ::testing::Combine(
        ::testing::Values(Case{300, 0, 320, 8, 2, 128, false},     // GQA, tail
                          Case{1000, 24, 1100, 4, 2, 128, false},  // cached
                          Case{130, 20, 200, 4, 4, 64, false},     // d 64
                          Case{64, 0, 64, 2, 1, 128, false},       // one tile
                          Case{17, 500, 600, 4, 1, 128, false},    // few rows
                          Case{1, 0, 8, 2, 2, 64, false},          // one row
                          Case{257, 0, 700, 8, 2, 128, true},      // key list
                          Case{90, 0, 400, 4, 4, 64, true}),       // key list
        ::testing::Values(DType::kF32, DType::kF16)));

class FlashPrefillCacheTypeTest : public testutil::CudaTest {};

TEST_F(FlashPrefillCacheTypeTest, TakesF32OrF16CachesOfOneType) {
  Tensor q = Upload(Tensor::Zeros(DType::kF32, {1, 64}));
  const Tensor pos = Upload(Tensor::FromI32({0}, {1}));
  const Tensor f32 = Upload(Tensor::Zeros(DType::kF32, {8, 64}));
  const Tensor f16 = Upload(Tensor::Zeros(DType::kF16, {8, 64}));
  const Tensor bf16 = Upload(Tensor::Zeros(DType::kBF16, {8, 64}));
  const auto supported = [&](const Tensor& k, const Tensor& v) {
    DeviceAttentionArgs args = testutil::DeviceArgs(q, k, v, pos, 1, 1, 64);
    args.out = &q;
    return FlashPrefillSupported(args);
  };
  EXPECT_TRUE(supported(f32, f32));
  EXPECT_TRUE(supported(f16, f16));
  EXPECT_FALSE(supported(f16, f32));
  EXPECT_FALSE(supported(bf16, bf16));
}

TEST(FlashPrefillSupportTest, RejectsOtherHeadDims) {
  DeviceAttentionArgs args;
  args.head_dim = 96;
  EXPECT_FALSE(FlashPrefillSupported(args));
}

// Llama-2-7B's attention at 8192 tokens (32 heads of 128): the flash kernel
// on an f32 and an f16 cache of the same (f16-representable) values against
// the old tensor-core kernel on the f32 one (same f16 rounding of q, k and
// v), and all timed.
class FlashPrefillLlamaShapeTest : public testutil::CudaTest {};

TEST_F(FlashPrefillLlamaShapeTest, MatchesOldKernelAndPrintsTimes) {
  const int64_t n = 8192, heads = 32, d = 128;
  const Tensor dq = Upload(RandomHost({n, heads * d}));
  const Tensor k16 = RandomHost({n, heads * d}, DType::kF16);
  const Tensor v16 = RandomHost({n, heads * d}, DType::kF16);
  const Tensor dk = Upload(k16.ConvertTo(DType::kF32));
  const Tensor dv = Upload(v16.ConvertTo(DType::kF32));
  const Tensor dk16 = Upload(k16), dv16 = Upload(v16);
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
  for (const bool f16 : {false, true}) {
    args.k_cache = f16 ? &dk16 : &dk;
    args.v_cache = f16 ? &dv16 : &dv;
    for (const FlashPrefillConfig config : kConfigs) {
      Tensor out = PoisonedDevice(DType::kF32, {n, heads * d});
      args.out = &out;
      const float ms = time_ms([&] {
        ASSERT_TRUE(
            FlashPrefillAttention(ctx(), args, n, scratch.raw_data(), config)
                .ok());
      });
      const double err = testutil::RelativeError(Download(out), old_values);
      EXPECT_LT(err, 3e-3) << Name(config) << (f16 ? " f16" : " f32")
                           << " cache " << SeedMessage();
      std::cout << "flash prefill n=" << n << " " << Name(config) << ": " << ms
                << (f16 ? " ms (f16 cache read in place), "
                        : " ms (incl. f16 K/V copy), ")
                << flops / ms * 1e-9 << " TFLOP/s, diff vs old " << err << "\n";
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// PipelinedSplitAttention: query rows at a spread of the keys (so the first
// rows see none of the last splits), over all cache rows up to the last query
// or over a LazyLLM key list; every other cache row holds NaN.
struct SplitCase {
  int64_t capacity;  // cache rows
  int64_t rows;      // query rows: 1-16, 17-32 and more take the kernel's
                     // three block shapes
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  bool key_list;  // keys: a random ascending subset of the rows, else rows
                  // 0..capacity - capacity / 8 - 1
};

class PipelinedSplitTest
    : public testutil::CudaTest,
      public ::testing::WithParamInterface<std::tuple<SplitCase, DType>> {};

TEST_P(PipelinedSplitTest, MergedPartialsMatchCpuReference) {
  const auto [c, kv_dtype] = GetParam();
  const int64_t d = c.head_dim;
  std::vector<int32_t> keys;  // cache rows of the keys, ascending
  if (c.key_list) {
    std::bernoulli_distribution keep(0.5);
    for (int32_t r = 0; r + 1 < c.capacity; ++r) {
      if (keep(rng_)) keys.push_back(r);
    }
    keys.push_back(static_cast<int32_t>(c.capacity - 1));
  } else {
    keys.resize(c.capacity - c.capacity / 8);
    std::iota(keys.begin(), keys.end(), 0);
  }
  const int64_t num_keys = static_cast<int64_t>(keys.size());
  ASSERT_GE(num_keys, c.rows);
  std::vector<int32_t> positions(c.rows);
  for (int64_t i = 0; i < c.rows; ++i) {
    positions[i] = keys[num_keys - 1 - (c.rows - 1 - i) * (num_keys / c.rows)];
  }
  const Tensor q = RandomHost({c.rows, c.heads * d});
  const Tensor k = RandomHost({c.capacity, c.kv_heads * d}, kv_dtype);
  const Tensor v = RandomHost({c.capacity, c.kv_heads * d}, kv_dtype);
  const std::vector<int32_t> no_list;
  const Tensor ref = testutil::CpuAttention(
      q, k.ConvertTo(DType::kF32), v.ConvertTo(DType::kF32), num_keys,
      positions, c.key_list ? keys : no_list, c.heads, c.kv_heads, d);

  Tensor dk = Upload(k), dv = Upload(v);
  std::vector<bool> is_key(c.capacity, false);
  for (int32_t r : keys) is_key[r] = true;
  for (int64_t r = 0; r < c.capacity; ++r) {
    if (is_key[r]) continue;
    Tensor row_k = dk.Rows(r, r + 1), row_v = dv.Rows(r, r + 1);
    ASSERT_TRUE(FillBytes(ctx(), 0xFF, &row_k).ok());
    ASSERT_TRUE(FillBytes(ctx(), 0xFF, &row_v).ok());
  }
  const Tensor dq = Upload(q);
  const Tensor dpos = Upload(Tensor::FromI32(positions, {c.rows}));
  const Tensor dkeys = Upload(Tensor::FromI32(keys, {num_keys}));
  // About four splits of whole stages.
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int split_keys =
      static_cast<int>(ceil_div(ceil_div(num_keys, 4), kPipelinedStageKeys) *
                       kPipelinedStageKeys);
  const int splits = static_cast<int>(ceil_div(num_keys, split_keys));
  Tensor partials =
      PoisonedDevice(DType::kF32, {c.rows, c.heads, splits, d + 2});

  PipelinedSplitArgs args;
  args.q = dq.data<float>();
  args.k = dk.raw_data();
  args.v = dv.raw_data();
  args.kv_half = kv_dtype == DType::kF16;
  args.positions = dpos.data<int32_t>();
  args.key_rows = c.key_list ? dkeys.data<int32_t>() : nullptr;
  args.partials = partials.data<float>();
  args.n = static_cast<int>(c.rows);
  args.heads = static_cast<int>(c.heads);
  args.group = static_cast<int>(c.heads / c.kv_heads);
  args.head_dim = static_cast<int>(d);
  args.max_keys = static_cast<int>(num_keys);
  args.splits = splits;
  args.split_keys = split_keys;
  args.scale = 1.0f / std::sqrt(static_cast<float>(d));
  ASSERT_TRUE(PipelinedSplitAttention(ctx(), args).ok());

  // Merge the (max, sum, weighted values) partials as the combine kernel
  // does; an unwritten (NaN) partial makes its row NaN.
  const std::vector<float> parts = Download(partials);
  std::vector<float> out(c.rows * c.heads * d);
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t h = 0; h < c.heads; ++h) {
      const float* entry = parts.data() + (r * c.heads + h) * splits * (d + 2);
      float top = -INFINITY;
      for (int s = 0; s < splits; ++s) top = std::max(top, entry[s * (d + 2)]);
      double sum = 0.0;
      std::vector<double> acc(d, 0.0);
      for (int s = 0; s < splits; ++s) {
        const float* e = entry + s * (d + 2);
        const double w = e[0] == -INFINITY ? 0.0 : std::exp(e[0] - top);
        sum += w * e[1];
        for (int64_t x = 0; x < d; ++x) acc[x] += w * e[2 + x];
      }
      for (int64_t x = 0; x < d; ++x) {
        out[(r * c.heads + h) * d + x] = static_cast<float>(acc[x] / sum);
      }
    }
  }
  const double err = testutil::RelativeError(out, ref.ToF32Vector());
  EXPECT_LT(err, 3e-3) << DTypeName(kv_dtype) << " cache, " << splits
                       << " splits " << SeedMessage();
  std::cout << "pipelined rows=" << c.rows << " keys=" << num_keys
            << " heads=" << c.heads << "/" << c.kv_heads << " d=" << d
            << (c.key_list ? " key list " : " ") << DTypeName(kv_dtype)
            << " cache, " << splits << " splits err=" << err << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PipelinedSplitTest,
    ::testing::Combine(
        ::testing::Values(SplitCase{600, 7, 8, 2, 128, true},     // 4 key parts
                          SplitCase{400, 16, 2, 2, 64, false},    // 4, d 64
                          SplitCase{900, 24, 4, 1, 128, false},   // 2 key parts
                          SplitCase{500, 30, 4, 4, 64, true},     // 2, d 64
                          SplitCase{1500, 50, 4, 2, 128, false},  // 1 part
                          SplitCase{1000, 70, 8, 2, 64, true},    // 1, d 64
                          SplitCase{300, 1, 4, 4, 64, false}),    // one row
        ::testing::Values(DType::kF32, DType::kF16)));

}  // namespace
}  // namespace dynsparse::cuda
