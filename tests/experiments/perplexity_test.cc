// Sliding-window perplexity against a direct computation of the same
// windows' token log-likelihoods.
#include "experiments/metrics/perplexity.h"

#include <cmath>
#include <random>

#include "core/random_weights.h"
#include "core/model_shapes.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"

namespace dynsparse {
namespace {

ModelConfig SmallLlama() {
  return LlamaConfigFromShape({.vocab_size = 50,
                               .hidden_size = 16,
                               .intermediate_size = 32,
                               .num_layers = 1,
                               .num_heads = 2,
                               .max_position_embeddings = 64});
}

// -log p(ids[t] | ids[begin..t-1]) with a fresh session.
double DirectNll(const ModelConfig& c, const ModelWeights& w,
                 const std::vector<int32_t>& ids, int64_t begin, int64_t t) {
  CpuBackend backend(1);
  DenseMethod dense;
  Session session(c, w, backend, dense, 64);
  auto logits = session.Forward(
      absl::MakeConstSpan(ids).subspan(begin, t - begin), t - begin - 1);
  EXPECT_TRUE(logits.ok());
  const std::vector<float> row = logits->ToF32Vector();
  double max_l = row[0];
  for (float v : row) max_l = std::max<double>(max_l, v);
  double sum = 0;
  for (float v : row) sum += std::exp(v - max_l);
  return std::log(sum) + max_l - row[ids[t]];
}

TEST(PerplexityTest, MatchesDirectWindowedComputation) {
  const ModelConfig c = SmallLlama();
  const ModelWeights w = RandomWeights(c, 3);
  std::mt19937 rng(1);
  std::vector<int32_t> ids(23);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % c.vocab_size);

  // context 8, stride 5: windows [0,8) [5,13) [10,18) [15,23).
  double expected = 0;
  int64_t prev_end = 0, count = 0;
  for (int64_t begin = 0; prev_end < 23; begin += 5) {
    const int64_t end = std::min<int64_t>(begin + 8, 23);
    for (int64_t t = std::max(prev_end, begin + 1); t < end; ++t) {
      expected += DirectNll(c, w, ids, begin, t);
      ++count;
    }
    prev_end = end;
  }
  CpuBackend backend(2);
  DenseMethod dense;
  Session session(c, w, backend, dense, 8);
  auto result =
      SlidingWindowPerplexity(session, ids, {.context = 8, .stride = 5});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->tokens, 22);  // Every token but the first, once.
  EXPECT_EQ(count, 22);
  EXPECT_EQ(result->windows, 4);
  EXPECT_NEAR(result->nll_sum, expected, 1e-6 * expected);
  EXPECT_NEAR(result->perplexity(), std::exp(expected / 22),
              1e-6 * result->perplexity());
}

TEST(PerplexityTest, RejectsBadProtocols) {
  const ModelConfig c = SmallLlama();
  const ModelWeights w = RandomWeights(c, 3);
  CpuBackend backend(1);
  DenseMethod dense;
  Session session(c, w, backend, dense, 8);
  const std::vector<int32_t> ids = {1, 2, 3};
  EXPECT_EQ(SlidingWindowPerplexity(session, ids, {.context = 8, .stride = 9})
                .status()
                .message(),
            "--stride must be in [1, context=8], got 9");
  EXPECT_EQ(SlidingWindowPerplexity(session, ids, {.context = 16, .stride = 8})
                .status()
                .message(),
            "--context 16 exceeds the session's 8-token capacity");
  EXPECT_EQ(
      SlidingWindowPerplexity(session, {ids[0]}, {.context = 8, .stride = 4})
          .status()
          .message(),
      "text has 1 tokens; perplexity needs at least 2");
}

}  // namespace
}  // namespace dynsparse
