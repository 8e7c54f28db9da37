// The decode fusions of CudaBackend against the CPU reference:
//  * RopeWriteKv (RoPE of q and k + both KV-cache writes in one kernel)
//    against cpu::ApplyRope and a host copy into the cache rows. The CPU takes
//    cos/sin in double, the GPU with sincosf (a few ulp): kRopeTolerance 1e-5
//    as in rope_test.cc. Rows the step does not write must keep their values.
//    An f16 cache must hold the device's rotated k and the v rounded exactly
//    as the host's F32ToF16 rounds them.
//  * GatedGemv ((act(gate) * x) * w^T in one GEMV) against cpu::GatedActivate
//    then cpu::Linear: same f32 product, summation order differs, so the GEMV
//    bound of gemv_test.cc (1e-5) holds.
//  * The GEMV epilogue activation (Linear + Activate in one launch, here on
//    the second half of the rows as GatedMlp uses it) against cpu::Linear
//    then cpu::Activate, same bounds.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/rope.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

using testutil::CudaTest;
using testutil::RelativeError;

constexpr double kRopeTolerance = 1e-5;
constexpr double kGemvTolerance = 1e-5;

RopeTable MakeTable(int64_t head_dim, double theta) {
  RopeTable table;
  table.head_dim = head_dim;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    table.inv_freq.push_back(
        1.0 / std::pow(theta, static_cast<double>(2 * i) / head_dim));
  }
  return table;
}

class FusedOpsTest : public CudaTest {};

// Every case with an f32 and with an f16 KV cache.
template <typename Case>
std::vector<std::pair<Case, DType>> CasesTimesCacheDtypes(
    const std::vector<Case>& cases) {
  std::vector<std::pair<Case, DType>> out;
  for (DType dtype : {DType::kF32, DType::kF16}) {
    for (const Case& c : cases) out.emplace_back(c, dtype);
  }
  return out;
}

TEST_F(FusedOpsTest, RopeWriteKvMatchesCpu) {
  struct Case {
    int64_t rows, q_heads, kv_heads, head_dim, capacity;
    bool rope;
  };
  const std::vector<Case> cases = {
      {1, 32, 32, 128, 300, true}, {1, 32, 8, 128, 64, true},
      {1, 12, 12, 64, 40, false},  {9, 4, 2, 80, 50, true},
      {3, 6, 6, 6, 10, false},     {130, 8, 8, 128, 200, true}};
  for (const auto& [c, cache_dtype] : CasesTimesCacheDtypes(cases)) {
    SCOPED_TRACE(::testing::Message()
                 << "rows=" << c.rows << " heads=" << c.q_heads << "/"
                 << c.kv_heads << " head_dim=" << c.head_dim
                 << " rope=" << c.rope << " cache " << DTypeName(cache_dtype)
                 << " " << SeedMessage());
    const int64_t qd = c.q_heads * c.head_dim;
    const int64_t kvd = c.kv_heads * c.head_dim;
    // Distinct cache rows, in random order (a decode step writes one row).
    std::vector<int32_t> all(c.capacity);
    for (int64_t i = 0; i < c.capacity; ++i) all[i] = static_cast<int32_t>(i);
    std::shuffle(all.begin(), all.end(), rng_);
    const std::vector<int32_t> positions(all.begin(), all.begin() + c.rows);

    const Tensor q_host = RandomHost({c.rows, qd});
    const Tensor k_host = RandomHost({c.rows, kvd});
    const Tensor v_host = RandomHost({c.rows, kvd});
    const Tensor kc_host = RandomHost({c.capacity, kvd}, cache_dtype);
    const Tensor vc_host = RandomHost({c.capacity, kvd}, cache_dtype);

    const RopeTable table = MakeTable(c.head_dim, 10000.0);
    std::vector<float> q_ref = q_host.ToF32Vector();
    std::vector<float> k_ref = k_host.ToF32Vector();
    if (c.rope) {
      Tensor q_t = Tensor::FromF32(q_ref, q_host.shape());
      Tensor k_t = Tensor::FromF32(k_ref, k_host.shape());
      cpu::ApplyRope(table, positions, c.q_heads, &q_t);
      cpu::ApplyRope(table, positions, c.kv_heads, &k_t);
      q_ref = q_t.ToF32Vector();
      k_ref = k_t.ToF32Vector();
    }
    std::vector<float> kc_ref = kc_host.ToF32Vector();
    std::vector<float> vc_ref = vc_host.ToF32Vector();
    const std::vector<float> v_vals = v_host.ToF32Vector();
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t j = 0; j < kvd; ++j) {
        kc_ref[positions[r] * kvd + j] = k_ref[r * kvd + j];
        vc_ref[positions[r] * kvd + j] = v_vals[r * kvd + j];
      }
    }

    Tensor inv_freq;
    if (c.rope) {
      absl::StatusOr<Tensor> f = UploadRopeInvFreq(ctx(), table);
      ASSERT_TRUE(f.ok()) << f.status();
      inv_freq = *f;
    }
    const Tensor pos = Upload(Tensor::FromI32(positions, {c.rows}));
    Tensor q = Upload(q_host), k = Upload(k_host);
    const Tensor v = Upload(v_host);
    Tensor kc = Upload(kc_host), vc = Upload(vc_host);
    const absl::Status st =
        RopeWriteKv(ctx(), inv_freq, pos, c.q_heads, c.kv_heads, c.head_dim, &q,
                    &k, v, &kc, &vc);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_LT(RelativeError(Download(q), q_ref), kRopeTolerance);
    const std::vector<float> k_rotated = Download(k);
    EXPECT_LT(RelativeError(k_rotated, k_ref), kRopeTolerance);
    if (cache_dtype == DType::kF32) {
      EXPECT_LT(RelativeError(Download(kc), kc_ref), kRopeTolerance);
      // v is copied, never rounded.
      EXPECT_EQ(Download(vc), vc_ref);
      continue;
    }
    // An f16 cache holds the rotated k and the v exactly as the host rounds
    // them; other rows keep their bits.
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t j = 0; j < kvd; ++j) {
        kc_ref[positions[r] * kvd + j] = k_rotated[r * kvd + j];
      }
    }
    const auto rounded = [](const std::vector<float>& values) {
      std::vector<float> out(values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        out[i] = F16ToF32(F32ToF16(values[i]));
      }
      return out;
    };
    EXPECT_EQ(Download(kc), rounded(kc_ref));
    EXPECT_EQ(Download(vc), rounded(vc_ref));
  }
}

TEST_F(FusedOpsTest, RopeWriteKvRejectsBadOperands) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  Tensor q = Upload(RandomHost({1, 16})), k = Upload(RandomHost({1, 8}));
  const Tensor v = Upload(RandomHost({1, 8}));
  Tensor kc = Upload(RandomHost({4, 8})), vc = Upload(RandomHost({4, 8}));
  const Tensor pos = Upload(Tensor::FromI32({2}, {1}));
  absl::StatusOr<Tensor> f = UploadRopeInvFreq(ctx(), MakeTable(8, 1e4));
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(RopeWriteKv(ctx(), *f, pos, 2, 1, 8, &q, &k, v, &kc, &vc).ok());
  // Wrong head count, odd head_dim, wrong cache width, wrong table size.
  EXPECT_EQ(RopeWriteKv(ctx(), *f, pos, 3, 1, 8, &q, &k, v, &kc, &vc).code(),
            kInvalid);
  EXPECT_EQ(RopeWriteKv(ctx(), *f, pos, 2, 1, 7, &q, &k, v, &kc, &vc).code(),
            kInvalid);
  Tensor wide = Upload(RandomHost({4, 16}));
  EXPECT_EQ(RopeWriteKv(ctx(), *f, pos, 2, 1, 8, &q, &k, v, &wide, &vc).code(),
            kInvalid);
  absl::StatusOr<Tensor> f16 = UploadRopeInvFreq(ctx(), MakeTable(16, 1e4));
  ASSERT_TRUE(f16.ok());
  EXPECT_EQ(RopeWriteKv(ctx(), *f16, pos, 2, 1, 8, &q, &k, v, &kc, &vc).code(),
            kInvalid);
}

TEST_F(FusedOpsTest, GatedGemvMatchesCpu) {
  struct Case {
    int64_t out, in;
    DType w_dtype;
    Activation act;
    bool bias;
  };
  const std::vector<Case> cases = {
      {4096, 11008, DType::kF16, Activation::kSilu, false},
      {512, 1024, DType::kBF16, Activation::kSilu, true},
      {64, 2048, DType::kF16, Activation::kGelu, false},  // Splits K.
      {100, 96, DType::kBF16, Activation::kGeluTanh, true},
      {33, 256, DType::kF16, Activation::kRelu, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.out << "x" << c.in << " act=" << static_cast<int>(c.act)
                 << " " << SeedMessage());
    const Tensor x_host = RandomHost({1, c.in});
    const Tensor gate_host = RandomHost({1, c.in});
    const Tensor w_host =
        RandomHost({c.out, c.in}, c.w_dtype, 1.0f / std::sqrt(float(c.in)));
    const Tensor bias_host = c.bias ? RandomHost({c.out}) : Tensor();
    Tensor prod = Tensor::FromF32(x_host.ToF32Vector(), x_host.shape());
    cpu::GatedActivate(c.act, gate_host, &prod);
    Tensor y_ref = Tensor::Zeros(DType::kF32, {1, c.out});
    cpu::Linear(prod, w_host, bias_host, &y_ref);

    const Tensor x = Upload(x_host), gate = Upload(gate_host);
    const Tensor w = Upload(w_host);
    const Tensor bias = c.bias ? Upload(bias_host) : Tensor();
    ASSERT_TRUE(GatedGemvSupported(gate, x, w));
    Tensor y = PoisonedDevice(DType::kF32, {1, c.out});
    const absl::Status st = GatedGemv(ctx(), c.act, gate, x, w, bias, &y);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_LT(RelativeError(Download(y), y_ref.ToF32Vector()), kGemvTolerance);
    // x itself is left alone (the product is formed in registers).
    EXPECT_EQ(Download(x), x_host.ToF32Vector());

    // Without an activation the gate holds act(gate) already (GatedMlp):
    // the same f32 product, so the same values.
    Tensor acted_host = Tensor::FromF32(gate_host.ToF32Vector(), {1, c.in});
    cpu::Activate(c.act, &acted_host);
    const Tensor acted = Upload(acted_host);
    Tensor y2 = PoisonedDevice(DType::kF32, {1, c.out});
    ASSERT_TRUE(GatedGemv(ctx(), std::nullopt, acted, x, w, bias, &y2).ok());
    EXPECT_LT(RelativeError(Download(y2), y_ref.ToF32Vector()), kGemvTolerance);

    // accumulate: the residual add in the epilogue (NormGatedMlp without
    // gated pairs), y3 = r + the same product, also through the split reduce.
    const Tensor r_host = RandomHost({1, c.out});
    Tensor y3_ref = Tensor::FromF32(y_ref.ToF32Vector(), y_ref.shape());
    cpu::AddInPlace(r_host, &y3_ref);
    Tensor y3 = Upload(r_host);
    ASSERT_TRUE(GatedGemv(ctx(), std::nullopt, acted, x, w, bias, &y3,
                          /*accumulate=*/true)
                    .ok());
    EXPECT_LT(RelativeError(Download(y3), y3_ref.ToF32Vector()),
              kGemvTolerance);
  }
}

// Linear + Activate in one GEMV (the activation in the epilogue), on every
// path and with K split across blocks, whose reduce kernel applies it.
TEST_F(FusedOpsTest, GemvEpilogueActivationMatchesCpu) {
  struct Case {
    int64_t batch, out, in;
    GemvPath path;
    int k_splits;
    Activation act;
  };
  const std::vector<Case> cases = {
      {1, 1024, 4096, GemvPath::kCudaCore, 0, Activation::kRelu},
      {1, 256, 2048, GemvPath::kCudaCore, 4, Activation::kSilu},
      {4, 512, 1024, GemvPath::kTensorCore, 0, Activation::kGelu},
      {2, 48, 100, GemvPath::kScalar, 0, Activation::kGeluTanh}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "b" << c.batch << " " << c.out << "x" << c.in
                 << " path=" << GemvPathName(c.path) << " " << SeedMessage());
    const Tensor x_host = RandomHost({c.batch, c.in});
    const Tensor w_host =
        RandomHost({c.out, c.in}, DType::kBF16, 1.0f / std::sqrt(float(c.in)));
    const Tensor bias_host = RandomHost({c.out});
    Tensor y_ref = Tensor::Zeros(DType::kF32, {c.batch, c.out});
    cpu::Linear(x_host, w_host, bias_host, &y_ref);
    // Only the second half of each row is activated (as GatedMlp's gate).
    const int64_t from = c.out / 2;
    std::vector<float> ref = y_ref.ToF32Vector();
    for (int64_t b = 0; b < c.batch; ++b) {
      Tensor tail =
          Tensor::FromF32(std::vector<float>(ref.begin() + b * c.out + from,
                                             ref.begin() + (b + 1) * c.out),
                          {1, c.out - from});
      cpu::Activate(c.act, &tail);
      const std::vector<float> t = tail.ToF32Vector();
      std::copy(t.begin(), t.end(), ref.begin() + b * c.out + from);
    }

    const Tensor x = Upload(x_host), w = Upload(w_host);
    const Tensor bias = Upload(bias_host);
    Tensor y = PoisonedDevice(DType::kF32, {c.batch, c.out});
    GemvOptions options;
    options.path = c.path;
    options.k_splits = c.k_splits;
    options.activation = c.act;
    options.activation_from_row = from;
    const absl::Status st = Gemv(ctx(), x, w, bias, &y, options);
    ASSERT_TRUE(st.ok()) << st;
    // The tensor-core path's hi + lo x carries 3e-5 (gemv_test.cc).
    EXPECT_LT(RelativeError(Download(y), ref),
              c.path == GemvPath::kTensorCore ? 3e-5 : kGemvTolerance);
  }
}

TEST_F(FusedOpsTest, GatedGemvRejectsWhatItCannotRun) {
  const Tensor w = Upload(RandomHost({16, 64}, DType::kF16));
  const Tensor x2 = Upload(RandomHost({2, 64}));
  const Tensor g2 = Upload(RandomHost({2, 64}));
  const Tensor w32 = Upload(RandomHost({16, 64}));
  const Tensor x = Upload(RandomHost({1, 64}));
  const Tensor g = Upload(RandomHost({1, 64}));
  const Tensor g_short = Upload(RandomHost({1, 32}));
  EXPECT_TRUE(GatedGemvSupported(g, x, w));
  EXPECT_FALSE(GatedGemvSupported(g2, x2, w));  // Batch 2.
  EXPECT_FALSE(GatedGemvSupported(g, x, w32));  // f32 weights.
  EXPECT_FALSE(GatedGemvSupported(g_short, x, w));
  Tensor y = PoisonedDevice(DType::kF32, {1, 16});
  EXPECT_EQ(GatedGemv(ctx(), std::nullopt, g_short, x, w, Tensor(), &y).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dynsparse::cuda
