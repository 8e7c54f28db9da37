// Oracle unit selections (DejaVu's ideal top-K): the graph's TopK and
// UnitNorms ops, and an oracle run equals replaying, as host ids, the top-K
// of the activations the calibration hooks observed in that same run.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "core/graph/session.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"

namespace dynsparse {
namespace {

Tensor HostF32(int64_t rows, int64_t cols, std::vector<float> values) {
  Tensor t = Tensor::Zeros(DType::kF32, {rows, cols});
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

std::vector<int32_t> TopKOf(const Tensor& scores, int64_t k) {
  CpuBackend backend(1);
  Tensor ids = Tensor::Zeros(DType::kI32, {scores.dim(0), k});
  backend.TopK(scores, k, &ids);
  return std::vector<int32_t>(ids.data<int32_t>(),
                              ids.data<int32_t>() + ids.numel());
}

TEST(TopKTest, KeepsLargestPerRowAscendingByIdWithTiesToLowerId) {
  const Tensor scores = HostF32(
      2, 5, {0.1f, 3.0f, -5.0f, 3.0f, 2.0f, 1.0f, 1.0f, 1.0f, 0.f, 2.f});
  EXPECT_EQ(TopKOf(scores, 2), (std::vector<int32_t>{1, 3, 0, 4}));
  EXPECT_EQ(TopKOf(scores, 3), (std::vector<int32_t>{1, 3, 4, 0, 1, 4}));
  EXPECT_EQ(TopKOf(scores, 5),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
}

TEST(UnitNormsTest, L2NormPerBlockOfColumns) {
  CpuBackend backend(1);
  const Tensor x = HostF32(1, 4, {3.0f, -4.0f, 0.0f, -1.0f});
  Tensor norms = Tensor::Zeros(DType::kF32, {1, 2});
  backend.UnitNorms(x, 2, &norms);
  EXPECT_FLOAT_EQ(norms.data<float>()[0], 5.0f);
  EXPECT_FLOAT_EQ(norms.data<float>()[1], 1.0f);
  Tensor abs = Tensor::Zeros(DType::kF32, {1, 4});
  backend.UnitNorms(x, 1, &abs);
  EXPECT_FLOAT_EQ(abs.data<float>()[1], 4.0f);
}

// Selects `k` units per row at every layer: the oracle, or host ids replayed
// from a map (layer -> ids); records what the hooks observe.
class TopKMethod : public Method {
 public:
  TopKMethod(bool heads, int64_t k) : heads_(heads), k_(k) {}
  std::string name() const override { return "topk-test"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection* sel) override {
    if (heads_) Fill(site, x.dim(0), sel);
  }
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection* sel) override {
    if (!heads_) Fill(site, x.dim(0), sel);
  }
  bool observes() const override { return true; }
  void ObserveHeads(const LayerSite& site, const Tensor& context) override {
    if (heads_) observed[site.layer] = context.ConvertTo(DType::kF32);
  }
  void ObserveNeurons(const LayerSite& site, const Tensor& act) override {
    if (!heads_) observed[site.layer] = act.ConvertTo(DType::kF32);
  }

  std::map<int64_t, std::vector<int32_t>> replay;  // Empty: oracle.
  std::map<int64_t, Tensor> observed;

 private:
  void Fill(const LayerSite& site, int64_t rows, UnitSelection* sel) {
    sel->all = false;
    sel->per_row = k_;
    if (replay.empty()) {
      sel->oracle = true;
    } else {
      sel->indices = replay.at(site.layer);
    }
  }
  bool heads_;
  int64_t k_;
};

std::vector<float> Logits(const ModelConfig& c, const ModelWeights& w,
                          Method& method, const std::vector<int32_t>& ids) {
  CpuBackend backend(1);
  Session session(c, w, backend, method, static_cast<int64_t>(ids.size()));
  auto logits = session.Forward(ids, 0);
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.ok() ? logits->ToF32Vector() : std::vector<float>{};
}

std::vector<int32_t> Ids(int n, int vocab) {
  std::mt19937 rng(5);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % vocab);
  return ids;
}

void ExpectOracleEqualsReplay(const ModelConfig& c, bool heads, int64_t k,
                              int64_t unit_width) {
  const ModelWeights w = RandomWeights(c, 3);
  const std::vector<int32_t> ids = Ids(8, static_cast<int>(c.vocab_size));
  TopKMethod oracle(heads, k);
  const std::vector<float> oracle_logits = Logits(c, w, oracle, ids);
  ASSERT_EQ(static_cast<int64_t>(oracle.observed.size()), c.num_layers);

  TopKMethod replay(heads, k);
  CpuBackend backend(1);
  for (const auto& [layer, act] : oracle.observed) {
    Tensor norms =
        Tensor::Zeros(DType::kF32, {act.dim(0), act.dim(1) / unit_width});
    backend.UnitNorms(act, unit_width, &norms);
    replay.replay[layer] = TopKOf(norms, k);
  }
  EXPECT_EQ(oracle_logits, Logits(c, w, replay, ids));
  DenseMethod dense;
  const std::vector<float> dense_logits = Logits(c, w, dense, ids);
  float diff = 0.0f;
  for (size_t i = 0; i < dense_logits.size(); ++i) {
    diff = std::max(diff, std::fabs(dense_logits[i] - oracle_logits[i]));
  }
  EXPECT_GT(diff, 1e-4f) << "the oracle selection changed nothing";
}

ModelConfig Llama() {
  return LlamaConfigFromShape({.vocab_size = 61,
                               .hidden_size = 32,
                               .intermediate_size = 48,
                               .num_layers = 2,
                               .num_heads = 4,
                               .num_kv_heads = 2,
                               .max_position_embeddings = 32});
}

ModelConfig Opt() {
  return OptConfigFromShape({.vocab_size = 61,
                             .hidden_size = 32,
                             .intermediate_size = 64,
                             .num_layers = 2,
                             .num_heads = 4,
                             .max_position_embeddings = 32});
}

TEST(OracleSelectionTest, GatedNeuronsEqualReplayedTopKOfObservedActivation) {
  ExpectOracleEqualsReplay(Llama(), /*heads=*/false, 12, 1);
}

TEST(OracleSelectionTest, HeadsEqualReplayedTopKOfObservedHeadNorms) {
  const ModelConfig c = Opt();
  ExpectOracleEqualsReplay(c, /*heads=*/true, 2, c.head_dim);
}

TEST(OracleSelectionTest, KeepingEveryUnitEqualsDense) {
  const ModelConfig c = Opt();
  const ModelWeights w = RandomWeights(c, 3);
  const std::vector<int32_t> ids = Ids(6, static_cast<int>(c.vocab_size));
  TopKMethod every(/*heads=*/false, c.intermediate_size);
  DenseMethod dense;
  EXPECT_EQ(Logits(c, w, every, ids), Logits(c, w, dense, ids));
}

}  // namespace
}  // namespace dynsparse
