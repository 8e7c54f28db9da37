// The lazyllm method's parameters and schedules, and the combined method's
// composition: with dense on one side it is exactly the other method.
#include "methods/lazyllm/lazyllm.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/graph/session.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/lazyllm/schedule.h"
#include "methods/registry.h"

namespace dynsparse {
namespace {

std::unique_ptr<Method> Make(const std::string& name,
                             const std::vector<std::string>& items) {
  auto args = MethodArgs::Parse(items);
  EXPECT_TRUE(args.ok()) << args.status();
  auto method = CreateMethod(name, *args);
  EXPECT_TRUE(method.ok()) << method.status();
  return method.ok() ? std::move(*method) : nullptr;
}

absl::Status MakeError(const std::string& name,
                       const std::vector<std::string>& items) {
  auto args = MethodArgs::Parse(items);
  EXPECT_TRUE(args.ok()) << args.status();
  return CreateMethod(name, *args).status();
}

TEST(LazyLlmScheduleTest, StagesSplitThirtyThirtyThirtyTen) {
  // Llama-2-7B: 32 layers, boundaries at 9.6, 19.2, 28.8 layers.
  auto s = StagedSchedule(4, 0.7, 32);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(FormatSchedule(*s), "10:0.7,19:0.7,29:0.7");
  auto one = StagedSchedule(1, 0.7, 32);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->empty());
  // Computed fraction of that schedule: (10 + 9*.7 + 10*.49 + 3*.343) / 32.
  EXPECT_NEAR(ScheduleComputedFraction(*s, 32),
              (10 + 9 * 0.7 + 10 * 0.49 + 3 * 0.343) / 32, 1e-12);
}

TEST(LazyLlmScheduleTest, ParsesExplicitScheduleAndRejectsBadOnes) {
  auto s = ParseSchedule("10:0.7,19:0.5");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->at(19), 0.5);
  EXPECT_FALSE(ParseSchedule("10-0.7").ok());
  EXPECT_FALSE(ParseSchedule("0:0.7").ok());
  EXPECT_FALSE(ParseSchedule("3:1.5").ok());
  EXPECT_FALSE(ParseSchedule("3:0.5,3:0.6").ok());
}

TEST(LazyLlmMethodTest, ParametersAreChecked) {
  EXPECT_TRUE(MakeError("lazyllm", {"stages=4", "keep=0.7"}).ok());
  EXPECT_TRUE(MakeError("lazyllm", {"schedule=2:0.5", "revive=false",
                                    "selector=random", "seed=3"})
                  .ok());
  EXPECT_EQ(MakeError("lazyllm", {"schedule=2:0.5", "keep=0.5"}).message(),
            "lazyllm: give either schedule=LAYER:KEEP,... or stages= and "
            "keep=");
  EXPECT_EQ(MakeError("lazyllm", {"selector=best"}).message(),
            "lazyllm selector 'best' (valid: attention, random)");
  EXPECT_EQ(MakeError("lazyllm", {"keys=all"}).message(),
            "lazyllm keys 'all' (valid: selected, cached)");
  EXPECT_FALSE(Make("lazyllm", {"stages=2"})->AttendsToCachedTokens());
  EXPECT_TRUE(Make("lazyllm", {"keys=cached"})->AttendsToCachedTokens());
  EXPECT_FALSE(MakeError("lazyllm", {"keep=0"}).ok());
  EXPECT_FALSE(MakeError("lazyllm", {"kep=0.5"}).ok());
  auto method = Make("lazyllm", {"schedule=9:0.5"});
  ModelConfig c;
  c.num_layers = 8;
  CpuBackend backend(1);
  EXPECT_EQ(method->Attach(c, backend).message(),
            "lazyllm schedule layer 9 is not below the 8 layers of the model");
}

ModelConfig Tiny() {
  return LlamaConfigFromShape({.vocab_size = 61,
                               .hidden_size = 32,
                               .intermediate_size = 48,
                               .num_layers = 4,
                               .num_heads = 4,
                               .num_kv_heads = 2,
                               .max_position_embeddings = 128});
}

// Prompt logits (last row) and 8 decode steps, as one vector.
std::vector<float> Logits(Method& method) {
  const ModelConfig c = Tiny();
  const ModelWeights w = RandomWeights(c, 21);
  CpuBackend backend(1);
  EXPECT_TRUE(method.Attach(c, backend).ok());
  Session session(c, w, backend, method, 80);
  std::vector<int32_t> prompt(50);
  for (int i = 0; i < 50; ++i) prompt[i] = (i * 7 + 3) % 61;
  std::vector<float> all;
  auto logits = session.Forward(prompt, 49);
  EXPECT_TRUE(logits.ok()) << logits.status();
  for (int s = 0; s < 8 && logits.ok(); ++s) {
    const std::vector<float> v = logits->ToF32Vector();
    all.insert(all.end(), v.begin(), v.end());
    logits = session.Forward({(s * 13 + 5) % 61}, 0);
    EXPECT_TRUE(logits.ok()) << logits.status();
  }
  return all;
}

TEST(CombinedMethodTest, DenseOnEitherSideIsTheOtherMethodExactly) {
  auto lazy = Make("lazyllm", {"schedule=1:0.6,3:0.5"});
  auto combined = Make(
      "combined",
      {"token=lazyllm", "token.schedule=1:0.6,3:0.5", "head_neuron=dense"});
  const std::vector<float> want = Logits(*lazy);
  EXPECT_EQ(Logits(*combined), want);
  auto dense = Make("dense", {});
  auto both_dense = Make("combined", {});
  EXPECT_EQ(Logits(*both_dense), Logits(*dense));
  EXPECT_NE(Logits(*dense), want);  // The schedule did prune.

  // The token side's keys choice passes through (the decode steps differ).
  auto cached = Make("lazyllm", {"schedule=1:0.6,3:0.5", "keys=cached"});
  auto combined_cached =
      Make("combined", {"token=lazyllm", "token.schedule=1:0.6,3:0.5",
                        "token.keys=cached", "head_neuron=dense"});
  EXPECT_TRUE(combined_cached->AttendsToCachedTokens());
  EXPECT_FALSE(combined->AttendsToCachedTokens());
  const std::vector<float> want_cached = Logits(*cached);
  EXPECT_EQ(Logits(*combined_cached), want_cached);
  EXPECT_NE(want_cached, want);
}

// DejaVu predicts a layer's heads from the previous layer's MLP input; token
// pruning (and revival at decode) changes the rows between the two, so the
// head selection must follow the rows of the layer it is used in.
TEST(CombinedMethodTest, DejavuHeadsFollowPrunedAndRevivedRows) {
  const std::vector<std::string> tokens = {"token=lazyllm",
                                           "token.schedule=1:0.6,3:0.5"};
  const std::vector<float> lazy_only =
      Logits(*Make("lazyllm", {"schedule=1:0.6,3:0.5"}));
  for (const char* selector : {"predictor", "random", "oracle"}) {
    for (const char* execution : {"masked", "sparse"}) {
      std::vector<std::string> items = tokens;
      items.insert(items.end(),
                   {"head_neuron=dejavu", "head_neuron.predictors=random:8",
                    std::string("head_neuron.selector=") + selector,
                    std::string("head_neuron.execution=") + execution});
      std::vector<std::string> keep_all = items;
      keep_all.push_back("head_neuron.mlp_keep=1");
      keep_all.push_back("head_neuron.head_keep=1");
      EXPECT_EQ(Logits(*Make("combined", keep_all)), lazy_only)
          << selector << " " << execution;
      items.push_back("head_neuron.mlp_keep=0.5");
      items.push_back("head_neuron.head_keep=0.5");
      const std::vector<float> sparse = Logits(*Make("combined", items));
      EXPECT_EQ(sparse.size(), lazy_only.size())
          << selector << " " << execution;
      EXPECT_NE(sparse, lazy_only) << selector << " " << execution;
    }
  }
}

// Random drop draws a fresh subset per sequence, reproducibly from its seed;
// the attention selector depends on the sequence alone.
// Candidates with given probe scores; the last `protected_count` are kept.
class ScoredCandidates : public TokenCandidates {
 public:
  ScoredCandidates(std::vector<float> scores, int64_t protected_count)
      : scores_(std::move(scores)), protected_(protected_count) {
    positions_.resize(scores_.size());
    std::iota(positions_.begin(), positions_.end(), 0);
  }
  absl::Span<const int32_t> positions() const override { return positions_; }
  int32_t first_new() const override { return 1 << 20; }  // A decode step.
  int64_t first_protected() const override {
    return static_cast<int64_t>(scores_.size()) - protected_;
  }
  absl::Span<const float> LastQueryAttention() override { return scores_; }

 private:
  std::vector<float> scores_;
  std::vector<int32_t> positions_;
  int64_t protected_;
};

// lazyllm keeps the highest-scoring prunable candidates (ties to the earlier
// token), as many as keep * candidates minus the protected ones: checked
// against a full sort on scores with many exact ties.
TEST(LazyLlmMethodTest, KeepsTheHighestScoresTiesToTheEarlier) {
  std::mt19937 rng(11);
  for (const int64_t n : {1, 2, 7, 64, 1000, 16384}) {
    for (const double keep : {0.1, 0.25, 0.5, 0.9, 1.0}) {
      std::vector<float> scores(static_cast<size_t>(n));
      for (float& v : scores) v = static_cast<float>(rng() % 13) / 13.0f;
      const int64_t protected_count = std::min<int64_t>(n, 1);
      auto method = Make("lazyllm", {"schedule=1:" + std::to_string(keep)});
      ASSERT_NE(method, nullptr);
      CpuBackend backend(1);
      ASSERT_TRUE(method->Attach(Tiny(), backend).ok());
      ScoredCandidates candidates(scores, protected_count);
      TokenSelection selection;
      method->SelectTokens({1, Phase::kDecode}, candidates, &selection);

      const int64_t prunable = n - protected_count;
      const int64_t count = std::clamp<int64_t>(
          static_cast<int64_t>(std::ceil(keep * static_cast<double>(n))) -
              protected_count,
          0, prunable);
      std::vector<int32_t> order(static_cast<size_t>(prunable));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return scores[a] > scores[b];
      });
      order.resize(static_cast<size_t>(count));
      std::sort(order.begin(), order.end());
      EXPECT_FALSE(selection.all);
      EXPECT_EQ(selection.keep_rows, order) << "n " << n << " keep " << keep;
    }
  }
}

TEST(LazyLlmMethodTest, RandomDropDrawsPerSequenceReproducibly) {
  const std::vector<std::string> random = {"schedule=1:0.5", "selector=random",
                                           "seed=4"};
  auto a = Make("lazyllm", random);
  auto b = Make("lazyllm", random);
  const std::vector<float> first = Logits(*a);
  EXPECT_NE(Logits(*a), first);
  EXPECT_EQ(Logits(*b), first);
  auto attention = Make("lazyllm", {"schedule=1:0.5"});
  EXPECT_EQ(Logits(*attention), Logits(*attention));
}

TEST(CombinedMethodTest, SideParametersAreChecked) {
  EXPECT_EQ(MakeError("combined", {"token=lazyllm", "token.kep=1"}).message(),
            "combined token: method 'lazyllm' has no parameter 'kep' (valid: "
            "schedule, stages, keep, revive, selector, seed, keys)");
  EXPECT_FALSE(MakeError("combined", {"head_neuron=lazyllm"}).ok());
  EXPECT_FALSE(MakeError("combined", {"tokens.keep=1"}).ok());
  EXPECT_FALSE(MakeError("combined", {"token=nope"}).ok());
}

}  // namespace
}  // namespace dynsparse
