// Sparse execution (core/graph/sparse_blocks.h) against masked execution on
// the same selections: prefill + decode logits agree, selection "all" is
// bit-identical to dense, and the lazily completed K/V caches equal the dense
// ones once the ring has wrapped.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"
#include "core/graph/sparse_blocks.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"

namespace dynsparse {
namespace {

enum class Source { kIndices, kIds, kOracle };

// Keeps `k` random units per row (a different draw per layer, call and row),
// given as host indices, an ids tensor or the oracle. Layer 0's heads and
// the last layer's neurons stay dense so dense and sparse blocks mix.
class RandomSelection : public Method {
 public:
  RandomSelection(SparseExecution execution, Source source, int64_t heads_k,
                  int64_t neurons_k,
                  int32_t lazy_kv_window = kDefaultLazyKvWindow)
      : execution_(execution),
        source_(source),
        heads_k_(heads_k),
        neurons_k_(neurons_k),
        lazy_kv_window_(lazy_kv_window) {}
  std::string name() const override { return "random-selection-test"; }
  absl::Status Attach(const ModelConfig& config, Backend&) override {
    config_ = config;
    return absl::OkStatus();
  }
  void BeginSequence() override { calls_.clear(); }
  SparseExecution execution() const override { return execution_; }
  int32_t LazyKvWindow() const override { return lazy_kv_window_; }
  bool MaySparsifyNeurons(int64_t layer) const override {
    return neurons_k_ > 0 && layer != config_.num_layers - 1;
  }
  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection* sel) override {
    if (heads_k_ == 0 || site.layer == 0) return;
    Fill(site.layer, 0, x.dim(0), heads_k_, config_.num_heads, sel);
  }
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection* sel) override {
    if (neurons_k_ == 0 || site.layer == config_.num_layers - 1) return;
    Fill(site.layer, 1, x.dim(0), neurons_k_, config_.intermediate_size, sel);
  }

 private:
  void Fill(int64_t layer, int kind, int64_t rows, int64_t k, int64_t units,
            UnitSelection* sel) {
    sel->all = false;
    sel->per_row = k;
    if (source_ == Source::kOracle) {
      sel->oracle = true;
      return;
    }
    std::mt19937 rng(static_cast<uint32_t>(layer * 7919 + kind * 104729 +
                                           calls_[{layer, kind}]++));
    std::vector<int32_t> all(units), picked;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t u = 0; u < units; ++u) all[u] = static_cast<int32_t>(u);
      std::shuffle(all.begin(), all.end(), rng);
      std::sort(all.begin(), all.begin() + k);
      picked.insert(picked.end(), all.begin(), all.begin() + k);
    }
    if (source_ == Source::kIds) {
      sel->ids = Tensor::FromI32(picked, {rows, k});
    } else {
      sel->indices = picked;
    }
  }

  SparseExecution execution_;
  Source source_;
  int64_t heads_k_, neurons_k_;
  int32_t lazy_kv_window_;
  ModelConfig config_;
  std::map<std::pair<int64_t, int>, int> calls_;
};

// Counts the sparse ops, so a test knows the sparse path ran.
class CountingBackend : public CpuBackend {
 public:
  CountingBackend() : CpuBackend(1) {}
  void LazyKv(const LazyKvArgs& args) override {
    ++lazy_kv;
    CpuBackend::LazyKv(args);
  }
  void GatherLinearT(const Tensor& x, const Tensor& w_t, const Tensor& bias,
                     const Tensor& ids, Tensor* y) override {
    ++gather_t;
    CpuBackend::GatherLinearT(x, w_t, bias, ids, y);
  }
  int lazy_kv = 0, gather_t = 0, transposed = 0;

 protected:
  Tensor Transpose(const Tensor& w) override {
    ++transposed;
    return CpuBackend::Transpose(w);
  }
};

struct SeqRun {
  std::vector<std::vector<float>> logits;  // Per Forward.
  std::vector<std::vector<float>> keys;    // Per layer, rows [0, length).
  int lazy_kv = 0, gather_t = 0, transposed = 0;
};

// Prefill of `prompt` tokens, then `steps` single-token steps; with
// `truncate_to` >= 0 the session is truncated after the first half of the
// steps and decodes the rest from there.
SeqRun RunSequence(const ModelConfig& c, const ModelWeights& w, Method& method,
                   int prompt, int steps, int truncate_to = -1) {
  CountingBackend backend;
  EXPECT_TRUE(method.Attach(c, backend).ok());
  Session session(c, w, backend, method, prompt + steps);
  std::mt19937 rng(11);
  auto token = [&] { return static_cast<int32_t>(rng() % c.vocab_size); };
  std::vector<int32_t> ids(prompt);
  for (int32_t& id : ids) id = token();
  SeqRun run;
  auto forward = [&](absl::Span<const int32_t> t) {
    auto logits = session.Forward(t, 0);
    ASSERT_TRUE(logits.ok()) << logits.status();
    run.logits.push_back(logits->ToF32Vector());
  };
  forward(ids);
  for (int s = 0; s < steps; ++s) {
    if (truncate_to >= 0 && s == steps / 2) {
      EXPECT_TRUE(session.Truncate(truncate_to).ok());
    }
    const int32_t t[] = {token()};
    forward(t);
  }
  KvCache& cache = const_cast<KvCache&>(session.cache());
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const Tensor& k = cache.keys(l);
    run.keys.emplace_back(k.data<float>(),
                          k.data<float>() + session.length() * k.dim(1));
  }
  run.lazy_kv = backend.lazy_kv;
  run.gather_t = backend.gather_t;
  run.transposed = backend.transposed;
  return run;
}

void ExpectClose(const std::vector<float>& a, const std::vector<float>& b,
                 const char* what, size_t index) {
  ASSERT_EQ(a.size(), b.size()) << what << " " << index;
  float scale = 1e-3f, diff = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(a[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  }
  EXPECT_LE(diff, 2e-5f * scale) << what << " " << index;
}

ModelConfig Opt() {
  return OptConfigFromShape({.vocab_size = 61,
                             .hidden_size = 32,
                             .intermediate_size = 64,
                             .num_layers = 3,
                             .num_heads = 4,
                             .max_position_embeddings = 64});
}

ModelConfig Llama(int64_t kv_heads) {
  return LlamaConfigFromShape({.vocab_size = 61,
                               .hidden_size = 32,
                               .intermediate_size = 48,
                               .num_layers = 3,
                               .num_heads = 4,
                               .num_kv_heads = kv_heads,
                               .max_position_embeddings = 64});
}

class SparseExecutionTest
    : public ::testing::TestWithParam<std::tuple<int, Source>> {
 protected:
  ModelConfig Config() const {
    switch (std::get<0>(GetParam())) {
      case 0:
        return Opt();
      case 1:
        return Llama(4);  // MHA with RoPE.
      default:
        return Llama(2);  // GQA.
    }
  }
};

// b (sparse, lazy K/V window `window`) against a (masked) on the same
// selections.
void ExpectSparseRunMatches(const ModelConfig& c, const SeqRun& a,
                            const SeqRun& b, Source source, int32_t window) {
  ASSERT_EQ(a.logits.size(), b.logits.size());
  for (size_t i = 0; i < a.logits.size(); ++i) {
    ExpectClose(a.logits[i], b.logits[i], "logits of step", i);
  }
  if (source != Source::kOracle) {
    EXPECT_GT(b.lazy_kv, 0) << "the sparse head path did not run";
  }
  EXPECT_GT(b.gather_t, 0) << "the sparse MLP path did not run";
  // W2 is transposed for the layers whose MLP may be sparse only (the last
  // layer's stays dense).
  EXPECT_EQ(b.transposed, c.num_layers - 1);
  // Every head completes a token at the latest window - 1 steps after it:
  // after the last position (24) rows 0..24 - (window - 1) are complete in
  // the sparse cache.
  const int64_t complete = 5 + 20 - (window - 1);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const int64_t width = c.kv_dim();
    const std::vector<float> ka(a.keys[l].begin(),
                                a.keys[l].begin() + complete * width);
    const std::vector<float> kb(b.keys[l].begin(),
                                b.keys[l].begin() + complete * width);
    ExpectClose(ka, kb, "keys of layer", l);
  }
}

TEST_P(SparseExecutionTest, SparseEqualsMaskedOnTheSameSelection) {
  const ModelConfig c = Config();
  const ModelWeights w = RandomWeights(c, 7);
  const Source source = std::get<1>(GetParam());
  const int64_t heads_k = 1, neurons_k = c.intermediate_size / 4;
  RandomSelection masked(SparseExecution::kMasked, source, heads_k, neurons_k);
  const SeqRun a = RunSequence(c, w, masked, 5, 20);
  EXPECT_EQ(a.lazy_kv, 0);
  EXPECT_EQ(a.transposed, 0);
  // The lazy K/V windows: DejaVu's 16 and a short one.
  for (const int32_t window : {Method::kMaxLazyKvWindow, 5}) {
    SCOPED_TRACE(absl::StrCat("lazy K/V window ", window));
    RandomSelection sparse(SparseExecution::kSparse, source, heads_k, neurons_k,
                           window);
    // 5-token prefill (sparse MLP rows), 20 decode steps: the ring wraps
    // (at position 16 or 5), so the heads not kept complete older tokens as
    // it does, and K/V stay pending at the end.
    const SeqRun b = RunSequence(c, w, sparse, 5, 20);
    ExpectSparseRunMatches(c, a, b, source, window);
  }
}

TEST_P(SparseExecutionTest, TruncatedSequenceStaysEqual) {
  const ModelConfig c = Config();
  const ModelWeights w = RandomWeights(c, 9);
  const Source source = std::get<1>(GetParam());
  RandomSelection masked(SparseExecution::kMasked, source, 2, 16);
  RandomSelection sparse(SparseExecution::kSparse, source, 2, 16);
  // Truncating to 12 drops pending ring entries (positions 12..) and makes
  // the next position out of sequence.
  const SeqRun a = RunSequence(c, w, masked, 4, 24, 12);
  const SeqRun b = RunSequence(c, w, sparse, 4, 24, 12);
  for (size_t i = 0; i < a.logits.size(); ++i) {
    ExpectClose(a.logits[i], b.logits[i], "logits of step", i);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SparseExecutionTest,
    ::testing::Combine(::testing::Values(0, 1, 2),
                       ::testing::Values(Source::kIndices, Source::kIds,
                                         Source::kOracle)));

TEST(SparseExecutionDenseTest, SelectionAllEqualsDenseExactly) {
  for (const ModelConfig& c : {Opt(), Llama(2)}) {
    const ModelWeights w = RandomWeights(c, 3);
    RandomSelection all(SparseExecution::kSparse, Source::kIds, 0, 0);
    DenseMethod dense;
    const SeqRun a = RunSequence(c, w, all, 6, 10);
    const SeqRun b = RunSequence(c, w, dense, 6, 10);
    EXPECT_EQ(a.logits, b.logits);
  }
}

TEST(SparseExecutionDenseTest, MaskedFallbackOnLongPrefill) {
  // More prefill rows than SparseBlocks::kMaxRows run masked: still equal.
  const ModelConfig c = Opt();
  const ModelWeights w = RandomWeights(c, 5);
  RandomSelection masked(SparseExecution::kMasked, Source::kIndices, 2, 16);
  RandomSelection sparse(SparseExecution::kSparse, Source::kIndices, 2, 16);
  const SeqRun a = RunSequence(c, w, masked, 12, 3);
  const SeqRun b = RunSequence(c, w, sparse, 12, 3);
  for (size_t i = 0; i < a.logits.size(); ++i) {
    ExpectClose(a.logits[i], b.logits[i], "logits of step", i);
  }
}

}  // namespace
}  // namespace dynsparse
