// The CUDA attention kernels against kernels/cpu's reference attention:
// prefill (flash tiling) and decode (split-K) with GQA, head dims that need
// padding, query tiles that end mid-tile and caches longer than the keys.
#include "kernels/cuda/attention.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/graph/backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

struct Case {
  int64_t n;         // query rows
  int64_t start;     // position of the first query row
  int64_t capacity;  // cache rows
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
};

class AttentionTest : public testutil::CudaTest,
                      public ::testing::WithParamInterface<Case> {};

TEST_P(AttentionTest, MatchesCpuReference) {
  const Case c = GetParam();
  const int64_t keys = c.start + c.n;
  ASSERT_LE(keys, c.capacity);
  const Tensor q = RandomHost({c.n, c.heads * c.head_dim});
  const Tensor k = RandomHost({c.capacity, c.kv_heads * c.head_dim});
  const Tensor v = RandomHost({c.capacity, c.kv_heads * c.head_dim});
  std::vector<int32_t> positions(c.n);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(c.start));
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  Tensor ref = Tensor::Zeros(DType::kF32, {c.n, c.heads * c.head_dim});
  AttentionArgs cpu_args;
  cpu_args.q = &q;
  cpu_args.k_cache = &k;
  cpu_args.v_cache = &v;
  cpu_args.num_keys = keys;
  cpu_args.query_positions = positions;
  cpu_args.num_heads = c.heads;
  cpu_args.num_kv_heads = c.kv_heads;
  cpu_args.head_dim = c.head_dim;
  cpu_args.scale = scale;
  cpu_args.out = &ref;
  cpu::Attention(cpu_args);

  const Tensor dq = Upload(q), dk = Upload(k), dv = Upload(v);
  const Tensor dpos =
      Upload(Tensor::FromI32(positions, {static_cast<int64_t>(c.n)}));
  DeviceAttentionArgs args;
  args.q = &dq;
  args.k_cache = &dk;
  args.v_cache = &dv;
  args.positions = dpos.data<int32_t>();
  args.num_heads = c.heads;
  args.num_kv_heads = c.kv_heads;
  args.head_dim = c.head_dim;
  args.scale = scale;

  Tensor prefill_out = PoisonedDevice(DType::kF32, ref.shape());
  args.out = &prefill_out;
  ASSERT_TRUE(PrefillAttention(ctx(), args, keys).ok());
  const double prefill_err =
      testutil::RelativeError(Download(prefill_out), ref.ToF32Vector());
  EXPECT_LT(prefill_err, 1e-5) << SeedMessage();

  // The keys split over blocks: the same values up to summation order.
  args.key_splits = 3;
  Tensor split_scratch =
      PoisonedDevice(DType::kF32, {PrefillSplitScratchFloats(args)});
  args.split_scratch = split_scratch.data<float>();
  Tensor split_out = PoisonedDevice(DType::kF32, ref.shape());
  args.out = &split_out;
  ASSERT_TRUE(PrefillAttention(ctx(), args, keys).ok());
  EXPECT_LT(testutil::RelativeError(Download(split_out), ref.ToF32Vector()),
            1e-5)
      << "split keys " << SeedMessage();
  args.key_splits = 1;
  args.split_scratch = nullptr;

  Tensor decode_out = PoisonedDevice(DType::kF32, ref.shape());
  args.out = &decode_out;
  Tensor scratch =
      PoisonedDevice(DType::kF32, {DecodeAttentionScratchFloats(args)});
  ASSERT_TRUE(DecodeAttention(ctx(), args, scratch.data<float>()).ok());
  const double decode_err =
      testutil::RelativeError(Download(decode_out), ref.ToF32Vector());
  EXPECT_LT(decode_err, 1e-5) << SeedMessage();

  // The same decode with the chunk merge inside the kernel (counters): same
  // arithmetic in the same order, so the same values, and the counters come
  // back zero. Run twice to show the reset works.
  const std::vector<float> two_kernel = Download(decode_out);
  absl::StatusOr<Tensor> counters =
      AllocateDevice(ctx(), DType::kI32, {DecodeAttentionCounters(args)});
  ASSERT_TRUE(counters.ok()) << counters.status();
  ASSERT_TRUE(FillBytes(ctx(), 0, &*counters).ok());
  args.counters = counters->data<int32_t>();
  for (int run = 0; run < 2; ++run) {
    Tensor fused_out = PoisonedDevice(DType::kF32, ref.shape());
    args.out = &fused_out;
    ASSERT_TRUE(DecodeAttention(ctx(), args, scratch.data<float>()).ok());
    EXPECT_EQ(Download(fused_out), two_kernel) << "run " << run;
    absl::StatusOr<Tensor> host = ToHost(ctx(), *counters);
    ASSERT_TRUE(host.ok());
    const int32_t* ints = host->data<int32_t>();
    EXPECT_EQ(std::count(ints, ints + host->numel(), 0), host->numel());
  }
  args.counters = nullptr;
  std::cout << "n=" << c.n << " start=" << c.start << " heads=" << c.heads
            << "/" << c.kv_heads << " d=" << c.head_dim
            << " prefill err=" << prefill_err << " decode err=" << decode_err
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(Case{1, 0, 8, 4, 4, 16},         // first token
                      Case{1, 200, 300, 32, 32, 128},  // decode, MHA
                      Case{3, 77, 100, 8, 2, 64},      // few rows, GQA
                      Case{100, 0, 128, 8, 2, 16},     // prefill, pad d
                      Case{130, 20, 160, 4, 1, 128},   // tile tail, offset
                      Case{70, 0, 70, 2, 2, 256},      // largest head dim
                      Case{65, 5, 80, 3, 3, 40}));     // odd head dim

// The tensor-core prefill rounds q, k and v to f16 (2^-11 relative), so it
// is held to 3e-3 instead of 1e-5.
class TensorCoreAttentionTest : public testutil::CudaTest,
                                public ::testing::WithParamInterface<Case> {};

TEST_P(TensorCoreAttentionTest, MatchesCpuReference) {
  const Case c = GetParam();
  const int64_t keys = c.start + c.n;
  const Tensor q = RandomHost({c.n, c.heads * c.head_dim});
  const Tensor k = RandomHost({c.capacity, c.kv_heads * c.head_dim});
  const Tensor v = RandomHost({c.capacity, c.kv_heads * c.head_dim});
  std::vector<int32_t> positions(c.n);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(c.start));
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  Tensor ref = Tensor::Zeros(DType::kF32, {c.n, c.heads * c.head_dim});
  AttentionArgs cpu_args;
  cpu_args.q = &q;
  cpu_args.k_cache = &k;
  cpu_args.v_cache = &v;
  cpu_args.num_keys = keys;
  cpu_args.query_positions = positions;
  cpu_args.num_heads = c.heads;
  cpu_args.num_kv_heads = c.kv_heads;
  cpu_args.head_dim = c.head_dim;
  cpu_args.scale = scale;
  cpu_args.out = &ref;
  cpu::Attention(cpu_args);

  const Tensor dq = Upload(q), dv = Upload(v);
  // Rows past the sequence hold NaN, as a recycled cache may: they must not
  // leak into the result.
  Tensor dk = Upload(k);
  if (keys < c.capacity) {
    Tensor tail = dk.Rows(keys, c.capacity);
    ASSERT_TRUE(FillBytes(ctx(), 0xFF, &tail).ok());
  }
  const Tensor dpos =
      Upload(Tensor::FromI32(positions, {static_cast<int64_t>(c.n)}));
  Tensor out = PoisonedDevice(DType::kF32, ref.shape());
  DeviceAttentionArgs args;
  args.q = &dq;
  args.k_cache = &dk;
  args.v_cache = &dv;
  args.positions = dpos.data<int32_t>();
  args.num_heads = c.heads;
  args.num_kv_heads = c.kv_heads;
  args.head_dim = c.head_dim;
  args.scale = scale;
  args.out = &out;
  args.tensor_cores = true;
  ASSERT_TRUE(PrefillAttention(ctx(), args, keys).ok());
  const double err = testutil::RelativeError(Download(out), ref.ToF32Vector());
  EXPECT_LT(err, 3e-3) << SeedMessage();
  std::cout << "tensor cores n=" << c.n << " d=" << c.head_dim << " err=" << err
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(Shapes, TensorCoreAttentionTest,
                         ::testing::Values(Case{300, 0, 320, 8, 2, 128},
                                           Case{130, 20, 200, 4, 4, 64},
                                           Case{64, 0, 64, 2, 1, 128},
                                           Case{1000, 24, 1100, 4, 2, 128}));

// Splits only when the (tile, head) grid leaves SMs idle, never into more
// splits than key tiles.
TEST(PrefillKeySplitsTest, SplitsOnlySmallGrids) {
  const int sms = 132;
  const int64_t heads = 32;
  EXPECT_EQ(PrefillKeySplits(4096, heads, 4096, sms), 1);  // a prompt
  const int64_t revived = PrefillKeySplits(40, heads, 1025, sms);
  EXPECT_GT(revived, 1);
  EXPECT_GE(revived * heads, sms);
  EXPECT_LE(PrefillKeySplits(40, heads, 100, sms), 2);  // two key tiles
  EXPECT_EQ(PrefillKeySplits(40, heads, 10, sms), 1);
}

class AttentionErrorTest : public testutil::CudaTest {};

TEST_F(AttentionErrorTest, RejectsUnsupportedHeadDim) {
  const Tensor q = Upload(RandomHost({1, 512}));
  const Tensor k = Upload(RandomHost({4, 512}));
  const Tensor pos = Upload(Tensor::FromI32({0}, {1}));
  Tensor out = PoisonedDevice(DType::kF32, {1, 512});
  DeviceAttentionArgs args;
  args.q = &q;
  args.k_cache = &k;
  args.v_cache = &k;
  args.positions = pos.data<int32_t>();
  args.num_heads = 1;
  args.num_kv_heads = 1;
  args.head_dim = 512;
  args.out = &out;
  EXPECT_EQ(PrefillAttention(ctx(), args, 1).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dynsparse::cuda
