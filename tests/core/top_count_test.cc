// LazyLLM's choice of the kept tokens: the host reference TopCountIndices
// (ties to the earlier index, -0 equal to +0), and Session picking them
// with the probe (Backend::TopCount) giving exactly the selections, logits
// and token counts of the host's choice from downloaded scores.
#include "core/graph/top_count.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "core/graph/session.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/lazyllm/lazyllm.h"
#include "tests/core/small_models.h"

namespace dynsparse {
namespace {

// The definition, by a stable sort: the first `count` indices in order of
// descending score (ties by index), ascending.
std::vector<int32_t> BySort(const std::vector<float>& scores, int64_t count) {
  std::vector<int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return scores[a] > scores[b]; });
  order.resize(static_cast<size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

TEST(TopCountIndicesTest, TiesGoToTheEarlierIndex) {
  const std::vector<float> scores = {0.5f, 0.1f, 0.5f, 0.9f, 0.5f, 0.0f};
  EXPECT_EQ(TopCountIndices(scores, 1), (std::vector<int32_t>{3}));
  EXPECT_EQ(TopCountIndices(scores, 2), (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(TopCountIndices(scores, 3), (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(TopCountIndices(scores, 4), (std::vector<int32_t>{0, 2, 3, 4}));
  EXPECT_EQ(TopCountIndices(scores, 0), (std::vector<int32_t>{}));
  EXPECT_EQ(TopCountIndices(scores, 6),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(TopCountIndicesTest, NegativeZeroTiesPositiveZero) {
  const std::vector<float> scores = {0.0f, -0.0f, -1.0f, -0.0f, 0.0f};
  EXPECT_EQ(TopCountIndices(scores, 2), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(TopCountIndices(scores, 3), (std::vector<int32_t>{0, 1, 3}));
}

TEST(TopCountIndicesTest, MatchesAStableSortOnRandomScores) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 3000);
    // Every third trial draws from 5 values: many ties.
    std::uniform_int_distribution<int> few(0, 4);
    std::uniform_real_distribution<float> any(-1.f, 1.f);
    std::vector<float> scores(static_cast<size_t>(n));
    for (float& s : scores) {
      s = trial % 3 == 0 ? static_cast<float>(few(rng)) / 7.f : any(rng);
    }
    const int64_t count = 1 + static_cast<int64_t>(rng() % (n - 1));
    EXPECT_EQ(TopCountIndices(scores, count), BySort(scores, count))
        << "n " << n << " count " << count;
  }
}

// A CPU backend whose TopCount can be turned off (the host then selects
// from downloaded scores) and whose calls are counted.
class CountingBackend : public CpuBackend {
 public:
  explicit CountingBackend(bool top_count)
      : CpuBackend(1), top_count_(top_count) {}
  void TopCount(const Tensor& scores, int64_t count, Tensor* indices) override {
    ++top_counts;
    CpuBackend::TopCount(scores, count, indices);
  }
  bool TopCountEnabled() const override { return top_count_; }
  int top_counts = 0;

 private:
  bool top_count_;
};

TEST(BackendTopCountTest, DefaultWritesTheHostChoice) {
  CpuBackend backend(1);
  const std::vector<float> values = {0.2f, 0.7f, 0.2f, 0.1f, 0.7f};
  Tensor scores = Tensor::Zeros(DType::kF32, {5});
  std::copy(values.begin(), values.end(), scores.data<float>());
  Tensor top = backend.Allocate(DType::kI32, {3});
  backend.TopCount(scores, 3, &top);
  EXPECT_EQ(std::vector<int32_t>(top.data<int32_t>(), top.data<int32_t>() + 3),
            (std::vector<int32_t>{0, 1, 4}));
}

// Announces keeping half of the prunable candidates before every layer and
// asks for that count (kAnnounced), for a third (kOther: the started
// TopCount answers nothing) or for the scores themselves (kScores).
class HalfByProbe : public Method {
 public:
  enum class Ask { kAnnounced, kOther, kScores };
  explicit HalfByProbe(Ask ask) : ask_(ask) {}
  std::string name() const override { return "half-by-probe"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  bool SelectsTokens() const override { return true; }
  bool MayProbeBefore(const LayerSite&) const override { return true; }
  int64_t ProbeTopCount(const LayerSite&, int64_t,
                        int64_t prunable) const override {
    return prunable / 2;
  }
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override {
    const int64_t prunable = candidates.first_protected();
    const int64_t count = ask_ == Ask::kOther ? prunable / 3 : prunable / 2;
    if (count <= 0) return;
    keep->all = false;
    keep->keep_rows =
        ask_ == Ask::kScores
            ? TopCountIndices(candidates.LastQueryAttention().first(
                                  static_cast<size_t>(prunable)),
                              count)
            : candidates.TopLastQueryAttention(count);
    kept[{candidates.first_new(), site.layer}] = keep->keep_rows;
  }
  std::map<std::pair<int32_t, int64_t>, std::vector<int32_t>> kept;

 private:
  Ask ask_;
};

struct SequenceRun {
  std::vector<std::vector<float>> logits;
  TokenStats stats;
  int top_counts = 0;
};

// A 40-token prompt and 6 decode steps (the next token fixed, so runs that
// select differently still feed the same tokens).
SequenceRun RunSequence(Method& method, bool top_count) {
  const ModelConfig c = testing_models::SmallLlama(5, 128, 48);
  const ModelWeights w = RandomWeights(c, 3);
  CountingBackend backend(top_count);
  Session session(c, w, backend, method, 128);
  SequenceRun run;
  auto logits =
      session.Forward(testing_models::RandomIds(40, c.vocab_size, 4), 39);
  EXPECT_TRUE(logits.ok()) << logits.status();
  if (!logits.ok()) return run;
  run.logits.push_back(logits->ToF32Vector());
  for (int32_t step = 0; step < 6; ++step) {
    const auto token = static_cast<int32_t>((11 * step + 5) % c.vocab_size);
    auto next = session.Forward({token}, 0);
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok()) return run;
    run.logits.push_back(next->ToF32Vector());
  }
  run.stats = session.token_state()->stats();
  run.top_counts = backend.top_counts;
  return run;
}

TEST(ProbeTopCountTest, DeviceChoiceEqualsTheHostChoice) {
  using Ask = HalfByProbe::Ask;
  std::map<Ask, HalfByProbe> on, off;
  for (const Ask ask : {Ask::kAnnounced, Ask::kOther, Ask::kScores}) {
    on.emplace(ask, ask);
    off.emplace(ask, ask);
    const SequenceRun with = RunSequence(on.at(ask), true);
    const SequenceRun without = RunSequence(off.at(ask), false);
    const int mode = static_cast<int>(ask);
    EXPECT_EQ(with.logits, without.logits) << "ask " << mode;
    EXPECT_EQ(on.at(ask).kept, off.at(ask).kept) << "ask " << mode;
    EXPECT_EQ(with.stats.computed, without.stats.computed) << "ask " << mode;
    EXPECT_EQ(with.stats.revived, without.stats.revived) << "ask " << mode;
    EXPECT_EQ(without.top_counts, 0) << "ask " << mode;
    // Every probe started with its TopCount, read or not.
    EXPECT_GT(with.top_counts, 0) << "ask " << mode;
  }
  // Answered from the started TopCount or from the scores: one choice.
  EXPECT_EQ(on.at(Ask::kAnnounced).kept, on.at(Ask::kScores).kept);
  EXPECT_NE(on.at(Ask::kAnnounced).kept, on.at(Ask::kOther).kept);
}

TEST(ProbeTopCountTest, LazyLlmSelectsTheSameTokensEitherWay) {
  for (const char* keys : {"selected", "cached"}) {
    SequenceRun runs[2];
    for (const bool top_count : {false, true}) {
      auto args = MethodArgs::Parse(
          {"schedule=2:0.5,4:0.5", std::string("keys=") + keys});
      ASSERT_TRUE(args.ok()) << args.status();
      auto method = LazyLlmMethod::Create(*args);
      ASSERT_TRUE(method.ok()) << method.status();
      CpuBackend attach(1);
      ASSERT_TRUE((*method)
                      ->Attach(testing_models::SmallLlama(5, 128, 48), attach)
                      .ok());
      runs[top_count] = RunSequence(**method, top_count);
    }
    EXPECT_EQ(runs[1].logits, runs[0].logits) << keys;
    EXPECT_EQ(runs[1].stats.computed, runs[0].stats.computed) << keys;
    EXPECT_EQ(runs[1].stats.revived, runs[0].stats.revived) << keys;
    EXPECT_GT(runs[1].stats.revived, 0) << keys;
    EXPECT_EQ(runs[0].top_counts, 0) << keys;
    // Two boundaries in the prompt's step and in each of 6 steps.
    EXPECT_EQ(runs[1].top_counts, 2 * 7) << keys;
  }
}

}  // namespace
}  // namespace dynsparse
