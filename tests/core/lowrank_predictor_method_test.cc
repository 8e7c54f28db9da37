// The bench-only dejavu-timing method (experiments/bench): argument parsing,
// per-layer K, and its device-op predictors driving sparse execution to the
// same logits as masked execution.
#include "experiments/bench/lowrank_predictor_method.h"

#include <cmath>
#include <random>

#include "core/graph/session.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace dynsparse {
namespace {

ModelConfig Opt() {
  return OptConfigFromShape({.vocab_size = 61,
                             .hidden_size = 32,
                             .intermediate_size = 128,
                             .num_layers = 4,
                             .num_heads = 4,
                             .max_position_embeddings = 64});
}

std::unique_ptr<Method> Make(std::vector<std::string> args) {
  auto m = LowRankPredictorMethod::Create(args);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(LowRankPredictorMethodTest, KeepsPerLayerCountsWithDenseLayers) {
  const ModelConfig c = Opt();
  CpuBackend backend(1);
  auto m = Make({"mlp_keep=0.1", "dense_last_mlp=1", "head_keep=0.5",
                 "dense_first_heads=1", "predictors=random:8"});
  ASSERT_TRUE(m->Attach(c, backend).ok());
  auto* p = static_cast<LowRankPredictorMethod*>(m.get());
  EXPECT_EQ(p->mlp_k(0), 13);  // round(0.1 * 128)
  EXPECT_EQ(p->mlp_k(3), 0);
  EXPECT_EQ(p->head_k(0), 0);
  EXPECT_EQ(p->head_k(1), 2);
  EXPECT_EQ(m->execution(), SparseExecution::kSparse);
}

TEST(LowRankPredictorMethodTest, RejectsBadArguments) {
  for (const char* bad : {"mlp_keep", "mlp_keep=x", "predictors=dir",
                          "execution=fast", "colour=blue"}) {
    auto m = LowRankPredictorMethod::Create({bad});
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().message().find(bad), std::string::npos)
        << m.status().message();
  }
}

std::vector<std::vector<float>> Decode(const ModelConfig& c,
                                       const ModelWeights& w,
                                       std::vector<std::string> args) {
  CpuBackend backend(1);
  auto m = Make(args);
  EXPECT_TRUE(m->Attach(c, backend).ok());
  Session session(c, w, backend, *m, 32);
  std::mt19937 rng(3);
  std::vector<int32_t> prompt(6);
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % c.vocab_size);
  std::vector<std::vector<float>> out;
  auto logits = session.Forward(prompt, 5);
  EXPECT_TRUE(logits.ok());
  out.push_back(logits->ToF32Vector());
  for (int s = 0; s < 18; ++s) {
    const int32_t t[] = {static_cast<int32_t>(rng() % c.vocab_size)};
    logits = session.Forward(t, 0);
    EXPECT_TRUE(logits.ok());
    out.push_back(logits->ToF32Vector());
  }
  return out;
}

TEST(LowRankPredictorMethodTest, SparseEqualsMaskedAndDiffersFromDense) {
  const ModelConfig c = Opt();
  const ModelWeights w = RandomWeights(c, 4);
  const std::vector<std::string> base = {"mlp_keep=0.25", "head_keep=0.5",
                                         "predictors=random:16",
                                         "sparse_prefill=1"};
  std::vector<std::string> sparse = base, masked = base, dense = {};
  masked.push_back("execution=masked");
  const auto a = Decode(c, w, sparse), b = Decode(c, w, masked),
             d = Decode(c, w, dense);
  float diff = 0.f, from_dense = 0.f;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) {
      diff = std::max(diff, std::fabs(a[i][j] - b[i][j]));
      from_dense = std::max(from_dense, std::fabs(a[i][j] - d[i][j]));
    }
  }
  EXPECT_LT(diff, 1e-4f);
  EXPECT_GT(from_dense, 1e-3f) << "the selections changed nothing";
}

}  // namespace
}  // namespace dynsparse
