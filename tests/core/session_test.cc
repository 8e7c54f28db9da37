// The model graph on random weights: KV-cache decode equals a full forward,
// masked unit selections equal the matching zeroed weights, and bad input is
// rejected with a status.
#include "core/graph/session.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <random>

#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"
#include "methods/lazyllm/lazyllm.h"
#include "tests/core/small_models.h"

namespace dynsparse {
namespace {

using testing_models::RandomIds;

ModelConfig LlamaGqaConfig() { return testing_models::SmallLlama(2, 64); }

ModelConfig OptConfig(bool pre_norm) {
  return testing_models::SmallOpt(pre_norm, 2, 64);
}

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

std::vector<float> FullLogits(const ModelConfig& c, const ModelWeights& w,
                              Method& method, const std::vector<int32_t>& ids) {
  CpuBackend backend(2);
  Session session(c, w, backend, method, static_cast<int64_t>(ids.size()));
  auto logits = session.Forward(ids, 0);
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits->ToF32Vector();
}

class SessionFamilyTest : public ::testing::TestWithParam<ModelConfig> {};

TEST_P(SessionFamilyTest, IncrementalDecodeMatchesFullForward) {
  const ModelConfig c = GetParam();
  const ModelWeights w = RandomWeights(c, 11);
  const std::vector<int32_t> ids = RandomIds(20, c.vocab_size, 3);
  DenseMethod dense;
  const std::vector<float> full = FullLogits(c, w, dense, ids);

  CpuBackend backend(2);
  Session session(c, w, backend, dense, 32);
  std::vector<float> stepwise;
  // A 12-token prefill, then one token at a time.
  auto prefill = session.Forward(absl::MakeConstSpan(ids).subspan(0, 12), 0);
  ASSERT_TRUE(prefill.ok()) << prefill.status();
  stepwise = prefill->ToF32Vector();
  for (size_t t = 12; t < ids.size(); ++t) {
    auto step = session.Forward(absl::MakeConstSpan(&ids[t], 1), 0);
    ASSERT_TRUE(step.ok()) << step.status();
    const std::vector<float> row = step->ToF32Vector();
    stepwise.insert(stepwise.end(), row.begin(), row.end());
  }
  EXPECT_EQ(session.length(), 20);
  EXPECT_LT(MaxAbsDiff(full, stepwise), 1e-4f);
  // The logits are not degenerate (a test on all-equal outputs proves little).
  const auto [lo, hi] = std::minmax_element(full.begin(), full.end());
  EXPECT_GT(*hi - *lo, 1.0f);
}

TEST_P(SessionFamilyTest, TruncatedPrefixScoresLikeAFreshSequence) {
  const ModelConfig c = GetParam();
  const ModelWeights w = RandomWeights(c, 12);
  const std::vector<int32_t> ids = RandomIds(16, c.vocab_size, 4);
  std::vector<int32_t> other = ids;
  for (size_t t = 10; t < other.size(); ++t) other[t] = (other[t] + 7) % 50;
  DenseMethod dense;
  const std::vector<float> fresh = FullLogits(c, w, dense, other);

  CpuBackend backend(2);
  Session session(c, w, backend, dense, 16);
  ASSERT_TRUE(session.Forward(ids, 15).ok());
  ASSERT_TRUE(session.Truncate(10).ok());
  EXPECT_EQ(session.length(), 10);
  auto tail = session.Forward(absl::MakeConstSpan(other).subspan(10), 0);
  ASSERT_TRUE(tail.ok()) << tail.status();
  const std::vector<float> fresh_tail(fresh.begin() + 10 * c.vocab_size,
                                      fresh.end());
  EXPECT_LT(MaxAbsDiff(fresh_tail, tail->ToF32Vector()), 1e-4f);
  EXPECT_FALSE(session.Truncate(17).ok());  // Past the end.
}

TEST_P(SessionFamilyTest, HalfPrecisionWeightsStayCloseToF32) {
  const ModelConfig c = GetParam();
  const std::vector<int32_t> ids = RandomIds(10, c.vocab_size, 5);
  DenseMethod dense;
  const std::vector<float> ref =
      FullLogits(c, RandomWeights(c, 11), dense, ids);
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const std::vector<float> got =
        FullLogits(c, RandomWeights(c, 11, dtype), dense, ids);
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    EXPECT_LT(std::sqrt(num / den), dtype == DType::kF16 ? 5e-3 : 3e-2)
        << DTypeName(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SessionFamilyTest,
                         ::testing::Values(LlamaGqaConfig(), OptConfig(true),
                                           OptConfig(false)));

// Keeps a fixed unit set for every row at one layer.
class FixedUnitsMethod : public Method {
 public:
  FixedUnitsMethod(bool heads, int64_t layer, std::vector<int32_t> units)
      : heads_(heads), layer_(layer), units_(std::move(units)) {}
  std::string name() const override { return "fixed-units"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection* sel) override {
    if (heads_) Fill(site, x, sel);
  }
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection* sel) override {
    if (!heads_) Fill(site, x, sel);
  }

 private:
  void Fill(const LayerSite& site, const Tensor& x, UnitSelection* sel) {
    if (site.layer != layer_) return;
    sel->all = false;
    sel->per_row = static_cast<int64_t>(units_.size());
    for (int64_t r = 0; r < x.dim(0); ++r) {
      sel->indices.insert(sel->indices.end(), units_.begin(), units_.end());
    }
  }
  bool heads_;
  int64_t layer_;
  std::vector<int32_t> units_;
};

// A CPU backend that takes Session's norm-fusing route (FusesInputNorm)
// with Backend's default ops, counting them, so the route's bookkeeping of
// the residual (no pending output, x updated in place) is checked on CPU.
class NormRouteBackend : public CpuBackend {
 public:
  NormRouteBackend() : CpuBackend(2) {}
  bool FusesInputNorm() const override { return true; }
  void NormLinearGroup(const Tensor& x, const InputNorm& norm,
                       absl::Span<const Tensor* const> w,
                       absl::Span<const Tensor* const> b,
                       std::optional<Activation> activation,
                       absl::Span<Tensor* const> y) override {
    ++fused_ops;
    Backend::NormLinearGroup(x, norm, w, b, activation, y);
  }
  void LinearAccumulate(const Tensor& x, const Tensor& w, const Tensor& bias,
                        Tensor* residual) override {
    ++fused_ops;
    Backend::LinearAccumulate(x, w, bias, residual);
  }
  void NormGatedMlp(Tensor* residual, const InputNorm& norm, const Tensor& w_up,
                    const Tensor& w_gate, const Tensor& b_up,
                    const Tensor& b_gate, Activation activation,
                    const Tensor& w_down, const Tensor& b_down, Tensor* up,
                    Tensor* gate) override {
    ++fused_ops;
    Backend::NormGatedMlp(residual, norm, w_up, w_gate, b_up, b_gate,
                          activation, w_down, b_down, up, gate);
  }
  int64_t fused_ops = 0;
};

// The route computes what AddNorm's does, also when a layer leaves it (a
// method keeping some units at one layer) and comes back, and on a token-
// pruned step's one-row layers between layers that move rows (lazyllm
// revives dropped tokens in decode steps).
TEST_P(SessionFamilyTest, NormFusingRouteMatchesAddNormRoute) {
  const ModelConfig c = GetParam();
  const ModelWeights w = RandomWeights(c, 13);
  const std::vector<int32_t> ids = RandomIds(12, c.vocab_size, 6);
  DenseMethod dense;
  FixedUnitsMethod some_heads(/*heads=*/true, /*layer=*/0, {1, 2});
  FixedUnitsMethod some_neurons(/*heads=*/false, /*layer=*/1, {0, 3, 5});
  LazyLlmOptions lazy_options;
  lazy_options.schedule = PruneSchedule{{1, 0.5}};
  LazyLlmMethod lazy(lazy_options);
  CpuBackend attach(1);
  ASSERT_TRUE(lazy.Attach(c, attach).ok());
  for (Method* method :
       std::vector<Method*>{&dense, &some_heads, &some_neurons, &lazy}) {
    SCOPED_TRACE(method->name());
    CpuBackend plain(2);
    NormRouteBackend fusing;
    Session a(c, w, plain, *method, 16);
    Session b(c, w, fusing, *method, 16);
    auto prefill_a = a.Forward(absl::MakeConstSpan(ids).subspan(0, 8), 0);
    auto prefill_b = b.Forward(absl::MakeConstSpan(ids).subspan(0, 8), 0);
    ASSERT_TRUE(prefill_a.ok() && prefill_b.ok());
    EXPECT_EQ(MaxAbsDiff(prefill_a->ToF32Vector(), prefill_b->ToF32Vector()),
              0.0f);
    for (size_t t = 8; t < ids.size(); ++t) {
      auto step_a = a.Forward(absl::MakeConstSpan(&ids[t], 1), 0);
      auto step_b = b.Forward(absl::MakeConstSpan(&ids[t], 1), 0);
      ASSERT_TRUE(step_a.ok() && step_b.ok());
      EXPECT_LT(MaxAbsDiff(step_a->ToF32Vector(), step_b->ToF32Vector()),
                1e-6f);
    }
    // Pre-norm models take the route on decode steps; post-norm ones never.
    if (c.pre_norm) {
      EXPECT_GT(fusing.fused_ops, 0);
    } else {
      EXPECT_EQ(fusing.fused_ops, 0);
    }
  }
}

// Zeroes columns [begin, end) of a [rows, cols] f32 weight.
void ZeroColumns(Tensor* w, int64_t begin, int64_t end) {
  const int64_t cols = w->dim(1);
  for (int64_t r = 0; r < w->dim(0); ++r) {
    for (int64_t c = begin; c < end; ++c) w->data<float>()[r * cols + c] = 0.0f;
  }
}

TEST(SessionMaskTest, MaskedHeadsEqualZeroedOutputProjection) {
  const ModelConfig c = LlamaGqaConfig();
  const std::vector<int32_t> ids = RandomIds(9, c.vocab_size, 8);
  FixedUnitsMethod keep_0_and_2(/*heads=*/true, /*layer=*/1, {2, 0});
  const std::vector<float> masked =
      FullLogits(c, RandomWeights(c, 4), keep_0_and_2, ids);

  ModelWeights zeroed = RandomWeights(c, 4);
  zeroed.layers[1].wo =
      zeroed.layers[1].wo.ConvertTo(DType::kF32);  // Own copy.
  ZeroColumns(&zeroed.layers[1].wo, 1 * c.head_dim, 2 * c.head_dim);
  ZeroColumns(&zeroed.layers[1].wo, 3 * c.head_dim, 4 * c.head_dim);
  DenseMethod dense;
  EXPECT_LT(MaxAbsDiff(masked, FullLogits(c, zeroed, dense, ids)), 1e-5f);
  EXPECT_GT(MaxAbsDiff(masked, FullLogits(c, RandomWeights(c, 4), dense, ids)),
            1e-3f);
}

TEST(SessionMaskTest, MaskedNeuronsEqualZeroedDownColumns) {
  const ModelConfig c = OptConfig(true);
  const std::vector<int32_t> ids = RandomIds(9, c.vocab_size, 9);
  std::vector<int32_t> kept(c.intermediate_size / 4);
  std::iota(kept.begin(), kept.end(), 0);
  FixedUnitsMethod keep_quarter(/*heads=*/false, /*layer=*/0, kept);
  const std::vector<float> masked =
      FullLogits(c, RandomWeights(c, 6), keep_quarter, ids);

  ModelWeights zeroed = RandomWeights(c, 6);
  zeroed.layers[0].w_down = zeroed.layers[0].w_down.ConvertTo(DType::kF32);
  ZeroColumns(&zeroed.layers[0].w_down, kept.size(), c.intermediate_size);
  DenseMethod dense;
  EXPECT_LT(MaxAbsDiff(masked, FullLogits(c, zeroed, dense, ids)), 1e-5f);
}

TEST(SessionMaskTest, SelectingEveryUnitExplicitlyEqualsDense) {
  const ModelConfig c = LlamaGqaConfig();
  const std::vector<int32_t> ids = RandomIds(7, c.vocab_size, 10);
  std::vector<int32_t> all(c.intermediate_size);
  std::iota(all.rbegin(), all.rend(), 0);  // Order must not matter.
  FixedUnitsMethod every(/*heads=*/false, /*layer=*/0, all);
  DenseMethod dense;
  const ModelWeights w = RandomWeights(c, 2);
  EXPECT_EQ(
      MaxAbsDiff(FullLogits(c, w, every, ids), FullLogits(c, w, dense, ids)),
      0.0f);
}

TEST(SessionErrorTest, RejectsTokensOutsideTheVocabulary) {
  const ModelConfig c = LlamaGqaConfig();
  const ModelWeights w = RandomWeights(c, 1);
  CpuBackend backend(1);
  DenseMethod dense;
  Session session(c, w, backend, dense, 8);
  const std::vector<int32_t> ids = {1, 97};
  auto out = session.Forward(ids, 0);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "token id 97 at index 1 is outside the vocabulary [0, 97)");
}

TEST(SessionErrorTest, RejectsSequencesLongerThanTheCache) {
  const ModelConfig c = LlamaGqaConfig();
  const ModelWeights w = RandomWeights(c, 1);
  CpuBackend backend(1);
  DenseMethod dense;
  Session session(c, w, backend, dense, 4);
  auto out = session.Forward(RandomIds(5, c.vocab_size, 1), 4);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "sequence of 5 tokens exceeds the session's 4-token KV cache");
}

TEST(SessionErrorTest, RejectsPositionsBeyondOptsLearnedTable) {
  ModelConfig c = OptConfig(true);
  c.max_position_embeddings = 6;
  const ModelWeights w = RandomWeights(c, 1);
  CpuBackend backend(1);
  DenseMethod dense;
  Session session(c, w, backend, dense, 16);
  auto out = session.Forward(RandomIds(7, c.vocab_size, 1), 6);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(
      out.status().message(),
      "sequence of 7 tokens exceeds this OPT model's 6 learned positions");
}

}  // namespace
}  // namespace dynsparse
