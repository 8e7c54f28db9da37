// The CUDA attention kernels against kernels/cpu's reference attention:
// prefill (flash tiling) and decode (split-K) with GQA, head dims that need
// padding, query tiles that end mid-tile and caches longer than the keys;
// head subsets; and the decode step fused with its RoPE + KV-cache write
// (new row). Each on an f32 and an f16 KV cache (the CPU reference reads the
// f16-rounded values as f32, so the tolerances are the same). Key lists:
// token_ops_test.cc.
#include "kernels/cuda/attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/rope.h"
#include "tests/cuda/attention_test_util.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

// The KV cache element types every test runs on.
const auto kKvDtypes = ::testing::Values(DType::kF32, DType::kF16);

// "<case index>_<cache dtype>" for tests parameterised by (case, dtype).
template <typename Param>
std::string CaseAndDtype(const ::testing::TestParamInfo<Param>& info) {
  return absl::StrCat(info.index, "_", DTypeName(std::get<1>(info.param)));
}

struct Case {
  int64_t n;         // query rows
  int64_t start;     // position of the first query row
  int64_t capacity;  // cache rows
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
};

class AttentionTest
    : public testutil::CudaTest,
      public ::testing::WithParamInterface<std::tuple<Case, DType>> {};

TEST_P(AttentionTest, MatchesCpuReference) {
  const auto [c, kv_dtype] = GetParam();
  const int64_t keys = c.start + c.n;
  ASSERT_LE(keys, c.capacity);
  const Tensor q = RandomHost({c.n, c.heads * c.head_dim});
  const Tensor k = testutil::AsStored(
      RandomHost({c.capacity, c.kv_heads * c.head_dim}), kv_dtype);
  const Tensor v = testutil::AsStored(
      RandomHost({c.capacity, c.kv_heads * c.head_dim}), kv_dtype);
  std::vector<int32_t> positions(c.n);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(c.start));

  const Tensor ref = testutil::CpuAttention(q, k, v, keys, positions, {},
                                            c.heads, c.kv_heads, c.head_dim);

  const Tensor dq = Upload(q), dk = Upload(k.ConvertTo(kv_dtype)),
               dv = Upload(v.ConvertTo(kv_dtype));
  const Tensor dpos =
      Upload(Tensor::FromI32(positions, {static_cast<int64_t>(c.n)}));
  DeviceAttentionArgs args =
      testutil::DeviceArgs(dq, dk, dv, dpos, c.heads, c.kv_heads, c.head_dim);

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

  // The chunks merged in a cluster (head_dim 65..128, up to 8 chunks; the
  // flag is ignored elsewhere): other summation order, same tolerance.
  args.cluster_merge = true;
  Tensor cluster_out = PoisonedDevice(DType::kF32, ref.shape());
  args.out = &cluster_out;
  ASSERT_TRUE(DecodeAttention(ctx(), args, scratch.data<float>()).ok());
  EXPECT_LT(testutil::RelativeError(Download(cluster_out), ref.ToF32Vector()),
            1e-5)
      << "cluster merge " << SeedMessage();
  args.cluster_merge = false;
  std::cout << "n=" << c.n << " start=" << c.start << " heads=" << c.heads
            << "/" << c.kv_heads << " d=" << c.head_dim
            << " kv=" << DTypeName(kv_dtype) << " prefill err=" << prefill_err
            << " decode err=" << decode_err << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Combine(
        ::testing::Values(Case{1, 0, 8, 4, 4, 16},         // first token
                          Case{1, 200, 300, 32, 32, 128},  // decode, MHA
                          Case{3, 77, 100, 8, 2, 64},      // few rows, GQA
                          Case{100, 0, 128, 8, 2, 16},     // prefill, pad d
                          Case{130, 20, 160, 4, 1, 128},   // tile tail, offset
                          Case{70, 0, 70, 2, 2, 256},      // largest head dim
                          Case{65, 5, 80, 3, 3, 40},       // odd head dim
                          // Long caches: an f16 cache's 128-key chunks.
                          Case{1, 2990, 3000, 8, 2, 128},
                          Case{2, 2500, 2600, 4, 4, 64}),
        kKvDtypes),
    CaseAndDtype<AttentionTest::ParamType>);

// The tensor-core prefill rounds q, k and v to f16 (2^-11 relative), so it
// is held to 3e-3 instead of 1e-5.
class TensorCoreAttentionTest
    : public testutil::CudaTest,
      public ::testing::WithParamInterface<std::tuple<Case, DType>> {};

TEST_P(TensorCoreAttentionTest, MatchesCpuReference) {
  const auto [c, kv_dtype] = GetParam();
  const int64_t keys = c.start + c.n;
  const Tensor q = RandomHost({c.n, c.heads * c.head_dim});
  const Tensor k = testutil::AsStored(
      RandomHost({c.capacity, c.kv_heads * c.head_dim}), kv_dtype);
  const Tensor v = testutil::AsStored(
      RandomHost({c.capacity, c.kv_heads * c.head_dim}), kv_dtype);
  std::vector<int32_t> positions(c.n);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(c.start));
  const Tensor ref = testutil::CpuAttention(q, k, v, keys, positions, {},
                                            c.heads, c.kv_heads, c.head_dim);

  const Tensor dq = Upload(q), dv = Upload(v.ConvertTo(kv_dtype));
  // Rows past the sequence hold NaN, as a recycled cache may: they must not
  // leak into the result.
  Tensor dk = Upload(k.ConvertTo(kv_dtype));
  if (keys < c.capacity) {
    Tensor tail = dk.Rows(keys, c.capacity);
    ASSERT_TRUE(FillBytes(ctx(), 0xFF, &tail).ok());
  }
  const Tensor dpos =
      Upload(Tensor::FromI32(positions, {static_cast<int64_t>(c.n)}));
  Tensor out = PoisonedDevice(DType::kF32, ref.shape());
  DeviceAttentionArgs args =
      testutil::DeviceArgs(dq, dk, dv, dpos, c.heads, c.kv_heads, c.head_dim);
  args.out = &out;
  args.tensor_cores = true;
  ASSERT_TRUE(PrefillAttention(ctx(), args, keys).ok());
  const double err = testutil::RelativeError(Download(out), ref.ToF32Vector());
  EXPECT_LT(err, 3e-3) << SeedMessage();
  std::cout << "tensor cores n=" << c.n << " d=" << c.head_dim
            << " kv=" << DTypeName(kv_dtype) << " err=" << err << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TensorCoreAttentionTest,
    ::testing::Combine(::testing::Values(Case{300, 0, 320, 8, 2, 128},
                                         Case{130, 20, 200, 4, 4, 64},
                                         Case{64, 0, 64, 2, 1, 128},
                                         Case{1000, 24, 1100, 4, 2, 128}),
                       kKvDtypes),
    CaseAndDtype<TensorCoreAttentionTest::ParamType>);

// Head-subset decode (DejaVu): row r attends with `heads` compact heads,
// compact head j being query head head_ids[r * heads + j] of the model's
// `model_heads`, which reads kv head head_ids / (model_heads / kv_heads).
// Rows sit at different positions. The reference: one single-head CPU
// attention per (row, compact head).
struct HeadSubsetCase {
  int64_t capacity;
  int64_t rows;  // <= 8 (head ids are decode only)
  int64_t model_heads;
  int64_t kv_heads;
  int64_t heads;  // compact heads per row
  int64_t head_dim;
};

class HeadSubsetAttentionTest
    : public testutil::CudaTest,
      public ::testing::WithParamInterface<std::tuple<HeadSubsetCase, DType>> {
};

TEST_P(HeadSubsetAttentionTest, MatchesCpuReference) {
  const auto [c, kv_dtype] = GetParam();
  const int64_t hd = c.head_dim, group = c.model_heads / c.kv_heads;
  std::vector<int32_t> ids, positions;
  for (int64_t r = 0; r < c.rows; ++r) {
    std::vector<int32_t> all(c.model_heads);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng_);
    ids.insert(ids.end(), all.begin(), all.begin() + c.heads);
    positions.push_back(static_cast<int32_t>(c.capacity - 1 - 7 * r));
  }
  const Tensor q = RandomHost({c.rows, c.heads * hd});
  const Tensor k =
      testutil::AsStored(RandomHost({c.capacity, c.kv_heads * hd}), kv_dtype);
  const Tensor v =
      testutil::AsStored(RandomHost({c.capacity, c.kv_heads * hd}), kv_dtype);

  // The columns of one head: [rows of x, hd].
  const auto head_columns = [hd](const std::vector<float>& x, int64_t rows,
                                 int64_t width, int64_t head) {
    std::vector<float> out(rows * hd);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(x.begin() + r * width + head * hd, hd, out.begin() + r * hd);
    }
    return Tensor::FromF32(out, {rows, hd});
  };
  const std::vector<float> qv = q.ToF32Vector(), kv = k.ToF32Vector(),
                           vv = v.ToF32Vector();
  std::vector<float> ref(c.rows * c.heads * hd);
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t j = 0; j < c.heads; ++j) {
      const int64_t kvh = ids[r * c.heads + j] / group;
      const Tensor qh =
          head_columns(std::vector<float>(qv.begin() + r * c.heads * hd,
                                          qv.begin() + (r + 1) * c.heads * hd),
                       1, c.heads * hd, j);
      const Tensor out = testutil::CpuAttention(
          qh, head_columns(kv, c.capacity, c.kv_heads * hd, kvh),
          head_columns(vv, c.capacity, c.kv_heads * hd, kvh), positions[r] + 1,
          {positions[r]}, {}, 1, 1, hd);
      const std::vector<float> o = out.ToF32Vector();
      std::copy(o.begin(), o.end(), ref.begin() + (r * c.heads + j) * hd);
    }
  }

  const Tensor dq = Upload(q), dk = Upload(k.ConvertTo(kv_dtype)),
               dv = Upload(v.ConvertTo(kv_dtype));
  const Tensor dpos = Upload(Tensor::FromI32(positions, {c.rows}));
  const Tensor dids = Upload(Tensor::FromI32(ids, {c.rows, c.heads}));
  DeviceAttentionArgs args =
      testutil::DeviceArgs(dq, dk, dv, dpos, c.heads, c.kv_heads, hd);
  args.head_ids = dids.data<int32_t>();
  args.head_group = group;
  Tensor scratch =
      PoisonedDevice(DType::kF32, {DecodeAttentionScratchFloats(args)});
  absl::StatusOr<Tensor> counters =
      AllocateDevice(ctx(), DType::kI32, {DecodeAttentionCounters(args)});
  ASSERT_TRUE(counters.ok()) << counters.status();
  ASSERT_TRUE(FillBytes(ctx(), 0, &*counters).ok());
  for (const bool merge_in_kernel : {false, true, true}) {
    Tensor out = PoisonedDevice(DType::kF32, {c.rows, c.heads * hd});
    args.out = &out;
    args.counters = merge_in_kernel ? counters->data<int32_t>() : nullptr;
    ASSERT_TRUE(DecodeAttention(ctx(), args, scratch.data<float>()).ok());
    EXPECT_LT(testutil::RelativeError(Download(out), ref), 1e-5)
        << "merge in kernel " << merge_in_kernel << " " << SeedMessage();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, HeadSubsetAttentionTest,
    ::testing::Combine(
        ::testing::Values(HeadSubsetCase{300, 1, 32, 32, 8, 128},  // MHA
                          HeadSubsetCase{200, 3, 16, 4, 6, 64},    // GQA
                          HeadSubsetCase{100, 2, 8, 2, 3, 40},     // pad d
                          HeadSubsetCase{2100, 1, 8, 8, 4, 128}),  // long
        kKvDtypes),
    CaseAndDtype<HeadSubsetAttentionTest::ParamType>);

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

// DecodeAttentionWithNewRow: one unrotated query row and its unrotated key
// and value, against cpu::ApplyRope + the cache write + cpu::Attention
// (RoPE angles in double on the CPU, sincosf on the GPU: 1e-5 as in
// fused_ops_test.cc), and bit for bit against the CUDA RopeWriteKv followed
// by DecodeAttention. Cache rows from the new row's position on hold NaN:
// the kernel must not read them (the new row comes from registers). On an
// f16 cache the new key and value are rounded where they are written, and
// the fused attention must use the rounded ones.
struct NewRowCase {
  int64_t capacity;
  int64_t pos;  // the new row's position = keys before it
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  bool rope;
};

class DecodeNewRowTest
    : public testutil::CudaTest,
      public ::testing::WithParamInterface<std::tuple<NewRowCase, DType>> {};

TEST_P(DecodeNewRowTest, MatchesRopeWriteKvThenAttention) {
  const auto [c, kv_dtype] = GetParam();
  const bool f16 = kv_dtype == DType::kF16;
  const int64_t qd = c.heads * c.head_dim, kvd = c.kv_heads * c.head_dim;
  const std::vector<int32_t> positions = {static_cast<int32_t>(c.pos)};
  const Tensor q = RandomHost({1, qd});
  const Tensor k = RandomHost({1, kvd});
  const Tensor v = RandomHost({1, kvd});
  const Tensor k_cache =
      testutil::AsStored(RandomHost({c.capacity, kvd}), kv_dtype);
  const Tensor v_cache =
      testutil::AsStored(RandomHost({c.capacity, kvd}), kv_dtype);
  RopeTable table;
  table.head_dim = c.head_dim;
  for (int64_t i = 0; c.rope && i < c.head_dim / 2; ++i) {
    table.inv_freq.push_back(
        1.0 / std::pow(10000.0, static_cast<double>(2 * i) / c.head_dim));
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  // CPU: RoPE, the cache write, then attention over keys 0..pos.
  Tensor q_ref = Tensor::FromF32(q.ToF32Vector(), q.shape());
  Tensor k_ref = Tensor::FromF32(k.ToF32Vector(), k.shape());
  if (c.rope) {
    cpu::ApplyRope(table, positions, c.heads, &q_ref);
    cpu::ApplyRope(table, positions, c.kv_heads, &k_ref);
  }
  Tensor kc_ref = Tensor::FromF32(k_cache.ToF32Vector(), k_cache.shape());
  Tensor vc_ref = Tensor::FromF32(v_cache.ToF32Vector(), v_cache.shape());
  cpu::WriteRows(k_ref, positions, &kc_ref);
  cpu::WriteRows(v, positions, &vc_ref);
  kc_ref = testutil::AsStored(kc_ref, kv_dtype);  // f16: row pos rounded
  vc_ref = testutil::AsStored(vc_ref, kv_dtype);

  // Device caches: rows pos.. poisoned (the fused kernel overwrites row pos).
  const auto upload_poisoned = [&](const Tensor& host) {
    Tensor t = Upload(host.ConvertTo(kv_dtype));
    Tensor tail = t.Rows(c.pos, c.capacity);
    EXPECT_TRUE(FillBytes(ctx(), 0xFF, &tail).ok());
    return t;
  };
  Tensor inv_freq;
  if (c.rope) {
    absl::StatusOr<Tensor> f = UploadRopeInvFreq(ctx(), table);
    ASSERT_TRUE(f.ok()) << f.status();
    inv_freq = *f;
  }
  const Tensor dpos = Upload(Tensor::FromI32(positions, {1}));
  absl::StatusOr<Tensor> counters =
      AllocateDevice(ctx(), DType::kI32, {c.heads});
  ASSERT_TRUE(counters.ok()) << counters.status();
  ASSERT_TRUE(FillBytes(ctx(), 0, &*counters).ok());
  DeviceAttentionArgs args;
  args.positions = dpos.data<int32_t>();
  args.num_heads = c.heads;
  args.num_kv_heads = c.kv_heads;
  args.head_dim = c.head_dim;
  args.scale = scale;
  args.counters = counters->data<int32_t>();

  // Unfused: RopeWriteKv, then the decode attention.
  Tensor q1 = Upload(q), k1 = Upload(k);
  const Tensor dv = Upload(v);
  Tensor kc1 = upload_poisoned(k_cache), vc1 = upload_poisoned(v_cache);
  ASSERT_TRUE(RopeWriteKv(ctx(), inv_freq, dpos, c.heads, c.kv_heads,
                          c.head_dim, &q1, &k1, dv, &kc1, &vc1)
                  .ok());
  Tensor out1 = PoisonedDevice(DType::kF32, {1, qd});
  args.q = &q1;
  args.k_cache = &kc1;
  args.v_cache = &vc1;
  args.out = &out1;
  Tensor scratch =
      PoisonedDevice(DType::kF32, {DecodeAttentionScratchFloats(args)});
  ASSERT_TRUE(DecodeAttention(ctx(), args, scratch.data<float>()).ok());

  // The reference attends to the CPU's caches; on f16 to the rows RopeWriteKv
  // wrote (checked against the CPU's below), since a rotated key element the
  // GPU (sincosf) and the CPU (double) round to neighbouring f16 values would
  // move it by more than 1e-5.
  const Tensor ref = testutil::CpuAttention(
      q_ref, f16 ? Tensor::FromF32(Download(kc1), kc_ref.shape()) : kc_ref,
      vc_ref, c.pos + 1, positions, {}, c.heads, c.kv_heads, c.head_dim);

  // Fused, twice (the counters reset themselves).
  const Tensor q2 = Upload(q), k2 = Upload(k);
  Tensor kc2 = upload_poisoned(k_cache), vc2 = upload_poisoned(v_cache);
  DecodeNewRow row;
  row.inv_freq = &inv_freq;
  row.k = &k2;
  row.v = &dv;
  row.k_cache = &kc2;
  row.v_cache = &vc2;
  args.q = &q2;
  args.k_cache = &kc2;
  args.v_cache = &vc2;
  for (int run = 0; run < 2; ++run) {
    Tensor out2 = PoisonedDevice(DType::kF32, {1, qd});
    args.out = &out2;
    const absl::Status st =
        DecodeAttentionWithNewRow(ctx(), args, row, scratch.data<float>());
    ASSERT_TRUE(st.ok()) << st;
    const std::vector<float> fused = Download(out2);
    const double err = testutil::RelativeError(fused, ref.ToF32Vector());
    EXPECT_LT(err, 1e-5) << "run " << run << " " << SeedMessage();
    EXPECT_EQ(fused, Download(out1)) << "run " << run;
    if (run == 0) {
      std::cout << "new row pos=" << c.pos << " heads=" << c.heads << "/"
                << c.kv_heads << " d=" << c.head_dim << " rope=" << c.rope
                << " kv=" << DTypeName(kv_dtype) << " err=" << err << "\n";
    }
  }
  absl::StatusOr<Tensor> host = ToHost(ctx(), *counters);
  ASSERT_TRUE(host.ok());
  const int32_t* ints = host->data<int32_t>();
  EXPECT_EQ(std::count(ints, ints + c.heads, 0), c.heads);

  // The caches: row pos written as RopeWriteKv writes it, the rows before it
  // untouched, the rows after it still poisoned. On f16 the CPU's rotated
  // key may round to a neighbouring value (2^-11 relative).
  const std::vector<float> kc2_host = Download(kc2), vc2_host = Download(vc2);
  const size_t written = static_cast<size_t>((c.pos + 1) * kvd);
  const auto prefix = [written](const std::vector<float>& x) {
    return std::vector<float>(x.begin(), x.begin() + written);
  };
  EXPECT_EQ(prefix(kc2_host), prefix(Download(kc1)));
  EXPECT_EQ(prefix(vc2_host), prefix(Download(vc1)));
  EXPECT_LT(
      testutil::RelativeError(
          std::vector<float>(kc2_host.begin(), kc2_host.begin() + written),
          std::vector<float>(kc_ref.data<float>(),
                             kc_ref.data<float>() + written)),
      f16 ? 1e-3 : 1e-5);
  EXPECT_EQ(
      std::vector<float>(vc2_host.begin(), vc2_host.begin() + written),
      std::vector<float>(vc_ref.data<float>(), vc_ref.data<float>() + written));
  EXPECT_EQ(testutil::CountNonFinite(
                std::vector<float>(kc2_host.begin() + written, kc2_host.end())),
            static_cast<int64_t>(kc2_host.size() - written));

  // Fused with the chunks merged in a cluster (where it applies) and the
  // cached rows loaded before the PDL wait: the same cache writes, the output
  // up to summation order.
  {
    const Tensor q3 = Upload(q), k3 = Upload(k);
    Tensor kc3 = upload_poisoned(k_cache), vc3 = upload_poisoned(v_cache);
    DecodeNewRow row3 = row;
    row3.k = &k3;
    row3.k_cache = &kc3;
    row3.v_cache = &vc3;
    DeviceAttentionArgs cluster_args = args;
    cluster_args.q = &q3;
    cluster_args.k_cache = &kc3;
    cluster_args.v_cache = &vc3;
    cluster_args.cluster_merge = true;
    cluster_args.early_kv_loads = true;  // Cached rows loaded before the wait.
    // Llama-2-7B's case must take the cluster kernel on an sm_90 device.
    if (c.capacity == 300 && c.head_dim == 128 && ctx().info().major >= 9) {
      EXPECT_TRUE(DecodeClusterMergeApplies(ctx(), cluster_args));
    }
    Tensor out3 = PoisonedDevice(DType::kF32, {1, qd});
    cluster_args.out = &out3;
    const absl::Status st = DecodeAttentionWithNewRow(ctx(), cluster_args, row3,
                                                      scratch.data<float>());
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_LT(testutil::RelativeError(Download(out3), ref.ToF32Vector()), 1e-5)
        << "cluster merge " << SeedMessage();
    EXPECT_EQ(prefix(Download(kc3)), prefix(Download(kc1))) << "cluster merge";
    EXPECT_EQ(prefix(Download(vc3)), prefix(Download(vc1))) << "cluster merge";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DecodeNewRowTest,
    ::testing::Combine(
        ::testing::Values(
            NewRowCase{300, 128, 32, 32, 128, true},   // Llama-2-7B
            NewRowCase{64, 0, 8, 2, 64, true},         // first token, GQA
            NewRowCase{200, 63, 8, 2, 128, true},      // chunk's end
            NewRowCase{200, 64, 4, 1, 128, true},      // chunk's start
            NewRowCase{100, 70, 12, 12, 64, false},    // OPT: no RoPE
            NewRowCase{60, 20, 4, 2, 40, true},        // padded dims
            NewRowCase{50, 33, 3, 1, 6, false},        // tiny heads
            NewRowCase{30, 5, 4, 1, 16, true},         // D = 32
            NewRowCase{40, 10, 2, 2, 256, true},       // widest
            NewRowCase{4500, 4200, 8, 2, 128, true}),  // long
        kKvDtypes),
    CaseAndDtype<DecodeNewRowTest::ParamType>);

// Llama-2-7B decode attention (32 heads of 128, one row) at short and long
// contexts, per chunk size and merge, each checked against the CPU
// reference; prints the time per launch (run_on_gpu.sh's parity.log keeps
// the lines). And the new-row kernel against RopeWriteKv + the attention.
// NOTES.md records what these numbers chose. On f32 and f16 caches.
class DecodeTimingTest : public testutil::CudaTest,
                         public ::testing::WithParamInterface<DType> {};

TEST_P(DecodeTimingTest, ChunkSizesAndMerges) {
  const DType kv_dtype = GetParam();
  const int64_t heads = 32, hd = 128, width = heads * hd;
  const std::vector<float> pattern = RandomValues(width * 257);
  cudaEvent_t start, stop;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  for (const int64_t keys : {129, 1025, 4097, 16385}) {
    const int64_t capacity = keys + 63;  // a prompt plus 64 decode steps
    // Rows repeat every 257 (random values are slow to draw at this size).
    std::vector<float> cache(capacity * width);
    for (size_t i = 0; i < cache.size(); ++i) {
      cache[i] = pattern[i % pattern.size()];
    }
    const Tensor k =
        testutil::AsStored(Tensor::FromF32(cache, {capacity, width}), kv_dtype);
    std::rotate(cache.begin(), cache.begin() + width, cache.end());
    const Tensor v =
        testutil::AsStored(Tensor::FromF32(cache, {capacity, width}), kv_dtype);
    const Tensor q = RandomHost({1, width});
    const std::vector<int32_t> positions = {static_cast<int32_t>(keys - 1)};
    const Tensor ref =
        testutil::CpuAttention(q, k, v, keys, positions, {}, heads, heads, hd);

    Tensor dq = Upload(q), dk = Upload(k.ConvertTo(kv_dtype)),
           dv = Upload(v.ConvertTo(kv_dtype));
    const Tensor dpos = Upload(Tensor::FromI32(positions, {1}));
    absl::StatusOr<Tensor> counters =
        AllocateDevice(ctx(), DType::kI32, {heads});
    ASSERT_TRUE(counters.ok());
    ASSERT_TRUE(FillBytes(ctx(), 0, &*counters).ok());
    DeviceAttentionArgs args =
        testutil::DeviceArgs(dq, dk, dv, dpos, heads, heads, hd);
    Tensor out = PoisonedDevice(DType::kF32, {1, width});
    args.out = &out;
    args.decode_chunk_keys = 16;
    Tensor scratch =
        PoisonedDevice(DType::kF32, {DecodeAttentionScratchFloats(args)});
    // Microseconds per launch of `launch` over 50 back-to-back launches.
    const auto time_us = [&](const auto& launch) {
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(launch().ok());
      EXPECT_EQ(cudaEventRecord(start, ctx().stream()), cudaSuccess);
      for (int i = 0; i < 50; ++i) EXPECT_TRUE(launch().ok());
      EXPECT_EQ(cudaEventRecord(stop, ctx().stream()), cudaSuccess);
      EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
      float ms = 0.f;
      EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
      return 1000.0 * ms / 50;
    };
    for (const int64_t chunk : {16, 32, 64}) {
      for (const bool in_kernel : {true, false}) {
        args.decode_chunk_keys = chunk;
        args.counters = in_kernel ? counters->data<int32_t>() : nullptr;
        ASSERT_TRUE(FillBytes(ctx(), 0xFF, &out).ok());
        const double us = time_us([&] {
          return DecodeAttention(ctx(), args, scratch.data<float>());
        });
        const double err =
            testutil::RelativeError(Download(out), ref.ToF32Vector());
        EXPECT_LT(err, 1e-5) << "keys " << keys << " chunk " << chunk;
        std::cout << "decode timing kv=" << DTypeName(kv_dtype)
                  << " keys=" << keys << " chunk=" << chunk
                  << " merge=" << (in_kernel ? "in-kernel" : "2nd-kernel")
                  << " us=" << us << " err=" << err << "\n";
      }
    }
    // The new row (the cache row it rewrites gets the same values each
    // time) vs RopeWriteKv + the attention (which rotates q and k in place
    // again each time: timing only).
    RopeTable table;
    table.head_dim = hd;
    for (int64_t i = 0; i < hd / 2; ++i) {
      table.inv_freq.push_back(
          1.0 / std::pow(10000.0, static_cast<double>(2 * i) / hd));
    }
    absl::StatusOr<Tensor> inv_freq = UploadRopeInvFreq(ctx(), table);
    ASSERT_TRUE(inv_freq.ok());
    Tensor new_k = Upload(RandomHost({1, width}));
    const Tensor new_v = Upload(RandomHost({1, width}));
    DecodeNewRow row;
    row.inv_freq = &*inv_freq;
    row.k = &new_k;
    row.v = &new_v;
    row.k_cache = &dk;
    row.v_cache = &dv;
    args.counters = counters->data<int32_t>();
    for (const int64_t chunk : {32, 64}) {
      args.decode_chunk_keys = chunk;
      const double fused_us = time_us([&] {
        return DecodeAttentionWithNewRow(ctx(), args, row,
                                         scratch.data<float>());
      });
      EXPECT_EQ(testutil::CountNonFinite(Download(out)), 0);
      const double apart_us = time_us([&] {
        absl::Status st = RopeWriteKv(ctx(), *inv_freq, dpos, heads, heads, hd,
                                      &dq, &new_k, new_v, &dk, &dv);
        if (!st.ok()) return st;
        return DecodeAttention(ctx(), args, scratch.data<float>());
      });
      std::cout << "decode timing kv=" << DTypeName(kv_dtype)
                << " keys=" << keys << " chunk=" << chunk
                << " new-row us=" << fused_us
                << " rope-write-kv+attention us=" << apart_us << " err=-\n";
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, DecodeTimingTest, kKvDtypes,
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

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

// q and out stay f32; the caches are f32 or f16, both the same.
TEST_F(AttentionErrorTest, RejectsUnsupportedDtypes) {
  const Tensor q = Upload(RandomHost({1, 64}));
  const Tensor q16 = Upload(RandomHost({1, 64}, DType::kF16));
  const Tensor k32 = Upload(RandomHost({4, 64}));
  const Tensor k16 = Upload(RandomHost({4, 64}, DType::kF16));
  const Tensor kbf16 = Upload(RandomHost({4, 64}, DType::kBF16));
  const Tensor pos = Upload(Tensor::FromI32({3}, {1}));
  Tensor out = PoisonedDevice(DType::kF32, {1, 64});
  DeviceAttentionArgs args = testutil::DeviceArgs(q, k16, k16, pos, 1, 1, 64);
  args.out = &out;
  Tensor scratch =
      PoisonedDevice(DType::kF32, {DecodeAttentionScratchFloats(args)});
  EXPECT_TRUE(DecodeAttention(ctx(), args, scratch.data<float>()).ok());
  for (const auto& [qt, kt, vt] :
       {std::tuple{&q16, &k16, &k16}, std::tuple{&q, &kbf16, &kbf16},
        std::tuple{&q, &k32, &k16}, std::tuple{&q, &k16, &k32}}) {
    args.q = qt;
    args.k_cache = kt;
    args.v_cache = vt;
    const absl::Status s = DecodeAttention(ctx(), args, scratch.data<float>());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_EQ(PrefillAttention(ctx(), args, 4).code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace dynsparse::cuda
