// The token path of Session (LazyLLM machinery): keep 1.0 is dense exactly,
// each (token, layer) is computed at most once over prefill + 64 decode
// steps, revived tokens are computed at their original positions, and the
// last-query probe and keyed attention match their plain definitions.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "core/graph/session.h"
#include "core/io/model_loader.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"
#include "methods/lazyllm/lazyllm.h"
#include "tests/core/small_models.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

using testing_models::RandomIds;

ModelConfig SixLayerLlama() { return testing_models::SmallLlama(6, 256, 48); }

ModelConfig Opt(bool pre_norm) {
  return testing_models::SmallOpt(pre_norm, 4, 128);
}

std::unique_ptr<Method> Lazy(const std::vector<std::string>& items,
                             const ModelConfig& config) {
  auto args = MethodArgs::Parse(items);
  EXPECT_TRUE(args.ok()) << args.status();
  auto method = LazyLlmMethod::Create(*args);
  EXPECT_TRUE(method.ok()) << method.status();
  static CpuBackend attach_backend(1);
  EXPECT_TRUE((*method)->Attach(config, attach_backend).ok());
  return std::move(*method);
}

struct Steps {
  std::vector<std::vector<float>> logits;
  std::unique_ptr<Session> session;
};

// Logits of a prompt (rows from first_logit_row) and of `steps` greedy decode
// steps after it.
Steps RunSteps(const ModelConfig& c, const ModelWeights& w, Method& method,
               const std::vector<int32_t>& prompt, int steps,
               int64_t first_logit_row) {
  static CpuBackend backend(1);
  auto session = std::make_unique<Session>(c, w, backend, method, 256);
  std::vector<std::vector<float>> out;
  auto logits = session->Forward(prompt, first_logit_row);
  EXPECT_TRUE(logits.ok()) << logits.status();
  out.push_back(logits->ToF32Vector());
  for (int s = 0; s < steps; ++s) {
    const std::vector<float>& last = out.back();
    const int32_t next = static_cast<int32_t>(
        (std::max_element(last.end() - c.vocab_size, last.end()) -
         (last.end() - c.vocab_size)));
    auto step = session->Forward({next}, 0);
    EXPECT_TRUE(step.ok()) << step.status();
    out.push_back(step->ToF32Vector());
  }
  return {std::move(out), std::move(session)};
}

class KeepOneTest : public ::testing::TestWithParam<ModelConfig> {};

TEST_P(KeepOneTest, KeepOneIsDenseExactly) {
  const ModelConfig c = GetParam();
  const ModelWeights w = RandomWeights(c, 5);
  const std::vector<int32_t> prompt = RandomIds(37, c.vocab_size, 9);
  DenseMethod dense;
  auto lazy = Lazy({"schedule=1:1.0,2:1.0,3:1.0"}, c);
  for (int64_t first_logit_row : {int64_t{0}, int64_t{36}}) {
    const auto want = RunSteps(c, w, dense, prompt, 6, first_logit_row).logits;
    const auto got = RunSteps(c, w, *lazy, prompt, 6, first_logit_row).logits;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], want[i]) << "step " << i;  // Bit for bit.
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, KeepOneTest,
                         ::testing::Values(SixLayerLlama(), Opt(true),
                                           Opt(false)));

TEST(TokenPathTest, KeepOneIsDenseOnFixtureModel) {
  auto model = LoadModel(testing::FixturePath("models/llama-gqa-llama3rope"),
                         LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<int32_t> prompt = RandomIds(50, 512, 4);
  DenseMethod dense;
  auto lazy = Lazy({"schedule=1:1.0"}, model->config);
  EXPECT_EQ(
      RunSteps(model->config, model->weights, *lazy, prompt, 4, 49).logits,
      RunSteps(model->config, model->weights, dense, prompt, 4, 49).logits);
}

TEST(TokenPathTest, EachTokenLayerComputedAtMostOnceWithRevival) {
  const ModelConfig c = SixLayerLlama();
  const ModelWeights w = RandomWeights(c, 7);
  const std::vector<int32_t> prompt = RandomIds(60, c.vocab_size, 2);
  for (const char* selector : {"attention", "random"}) {
    auto lazy =
        Lazy({"schedule=2:0.6,4:0.5", std::string("selector=") + selector}, c);
    Steps run = RunSteps(c, w, *lazy, prompt, 64, 59);
    const TokenState& state = *run.session->token_state();
    const TokenStats& stats = state.stats();
    // Counted where rows are computed, over prefill and every decode step.
    EXPECT_EQ(stats.max_computations, 1) << selector;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      for (int32_t p = 0; p < 124; ++p) {
        ASSERT_LE(state.computations(l, p), 1) << l << " " << p;
      }
    }
    // Decode steps re-selected tokens the prefill dropped (revival), and
    // the schedule saved work: 2 layers full, 2 at 60%, 2 at 30%.
    EXPECT_GT(stats.revived, 0) << selector;
    EXPECT_EQ(stats.prompt_tokens, 60);
    EXPECT_NEAR(stats.PrefillFraction(), (2 + 2 * 0.6 + 2 * 0.3) / 6, 0.02);
    EXPECT_GT(stats.GenerationFraction(), stats.PrefillFraction());
    EXPECT_LE(stats.GenerationFraction(), 1.0);
  }
}

// A method that keeps scripted positions: before layers >= 1, in the step
// whose first new position is `first_new`, keep script[first_new].
// `cached`: Method::AttendsToCachedTokens.
class ScriptedMethod : public Method {
 public:
  explicit ScriptedMethod(std::map<int32_t, std::set<int32_t>> script,
                          bool cached = false)
      : script_(std::move(script)), cached_(cached) {}
  std::string name() const override { return "scripted"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  bool SelectsTokens() const override { return true; }
  bool AttendsToCachedTokens() const override { return cached_; }
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override {
    const std::set<int32_t>& kept = script_.at(candidates.first_new());
    keep->all = false;
    for (size_t i = 0; i < candidates.positions().size(); ++i) {
      if (kept.count(candidates.positions()[i])) {
        keep->keep_rows.push_back(static_cast<int32_t>(i));
      }
    }
  }

 private:
  std::map<int32_t, std::set<int32_t>> script_;
  bool cached_;
};

// Token 25 is dropped after layer 0 in the prefill and revived by the first
// decode step. Its K/V at every layer must equal those of a run on the same
// reduced token set that never dropped it: same inputs, same original
// position, same (causal) context.
TEST(TokenPathTest, RevivedTokenUsesItsOriginalPosition) {
  const ModelConfig c = SixLayerLlama();
  const ModelWeights w = RandomWeights(c, 3);
  const std::vector<int32_t> prompt = RandomIds(40, c.vocab_size, 8);
  std::set<int32_t> reduced;
  for (int32_t p = 0; p < 40; p += 3) reduced.insert(p);  // 0, 3, ..., 39
  reduced.insert(39);
  std::set<int32_t> with_revived = reduced;
  with_revived.insert(25);
  ASSERT_FALSE(reduced.count(25));

  ScriptedMethod revive({{0, reduced}, {40, with_revived}});
  ScriptedMethod never_dropped({{0, with_revived}, {40, with_revived}});
  Steps revived = RunSteps(c, w, revive, prompt, 1, 39);
  Steps reference = RunSteps(c, w, never_dropped, prompt, 1, 39);
  const Session* revived_run = revived.session.get();
  const Session* reference_run = reference.session.get();
  // One fetch from Aux(0); layers 2.. take it from the step's own rows.
  EXPECT_EQ(revived_run->token_state()->stats().revived, 1);
  EXPECT_EQ(reference_run->token_state()->stats().revived, 0);

  const int64_t kvd = c.kv_dim();
  auto row = [&](const Tensor& t, int64_t p) {
    const float* d = t.data<float>() + p * kvd;
    return std::vector<float>(d, d + kvd);
  };
  for (int64_t l = 1; l < c.num_layers; ++l) {
    ASSERT_EQ(revived_run->token_state()->computations(l, 25), 1);
    const auto got_k = row(revived_run->cache().keys(l), 25);
    const auto want_k = row(reference_run->cache().keys(l), 25);
    const auto got_v = row(revived_run->cache().values(l), 25);
    const auto want_v = row(reference_run->cache().values(l), 25);
    for (int64_t i = 0; i < kvd; ++i) {
      EXPECT_NEAR(got_k[i], want_k[i], 1e-4) << "layer " << l << " k " << i;
      EXPECT_NEAR(got_v[i], want_v[i], 1e-4) << "layer " << l << " v " << i;
    }
  }
}

// Attending to cached tokens: a decode step that selects B after a prefill
// that kept A attends over A and B at every pruned layer, so it equals a step
// that selects A and B with the published keys; its computed rows (B's
// revivals) are the same either way. With the published keys it differs.
TEST(TokenPathTest, AttendingToCachedTokensAddsThePrefillsSet) {
  const ModelConfig c = SixLayerLlama();
  const ModelWeights w = RandomWeights(c, 5);
  const std::vector<int32_t> prompt = RandomIds(40, c.vocab_size, 9);
  std::set<int32_t> a, b, both;
  for (int32_t p = 0; p < 40; p += 2) a.insert(p);
  for (int32_t p = 0; p < 40; p += 3) b.insert(p);
  a.insert(39);
  b.insert(39);
  both = a;
  both.insert(b.begin(), b.end());
  ScriptedMethod cached({{0, a}, {40, b}}, /*cached=*/true);
  ScriptedMethod reference({{0, a}, {40, both}});
  ScriptedMethod selected({{0, a}, {40, b}});
  Steps with_cached = RunSteps(c, w, cached, prompt, 1, 39);
  Steps with_both = RunSteps(c, w, reference, prompt, 1, 39);
  Steps published = RunSteps(c, w, selected, prompt, 1, 39);
  EXPECT_EQ(with_cached.logits[0], published.logits[0]);  // The prefill.
  EXPECT_EQ(with_cached.logits[1], with_both.logits[1]);
  EXPECT_NE(with_cached.logits[1], published.logits[1]);
  EXPECT_EQ(with_cached.session->token_state()->stats().computed,
            published.session->token_state()->stats().computed);
}

TEST(TokenPathTest, StaticPruningNeverRevives) {
  const ModelConfig c = SixLayerLlama();
  const ModelWeights w = RandomWeights(c, 7);
  const std::vector<int32_t> prompt = RandomIds(60, c.vocab_size, 2);
  auto lazy = Lazy({"schedule=2:0.6,4:0.5", "revive=false"}, c);
  Steps run = RunSteps(c, w, *lazy, prompt, 16, 59);
  const TokenStats& stats = run.session->token_state()->stats();
  EXPECT_EQ(stats.revived, 0);
  EXPECT_EQ(stats.computed, stats.prefill_computed);
}

// Sum over (token, layer) of the times it was computed.
int64_t TotalComputations(const TokenState& state, const ModelConfig& c,
                          int32_t capacity) {
  int64_t total = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    for (int32_t p = 0; p < capacity; ++p) total += state.computations(l, p);
  }
  return total;
}

// The opt-in profile sees every decode step's layers and rows (and nothing
// of the prefill), and its phases add up to the step.
TEST(TokenPathTest, ProfileAccountsForEveryDecodeRow) {
  const ModelConfig c = SixLayerLlama();
  const ModelWeights w = RandomWeights(c, 7);
  const std::vector<int32_t> prompt = RandomIds(60, c.vocab_size, 2);
  auto lazy = Lazy({"schedule=2:0.6,4:0.5"}, c);
  CpuBackend backend(1);
  const int32_t capacity = 80;
  Session session(c, w, backend, *lazy, capacity);
  EXPECT_EQ(session.token_state()->profile(), nullptr);
  session.EnableTokenProfile();
  ASSERT_TRUE(session.Forward(prompt, 59).ok());
  const TokenState& state = *session.token_state();
  const int64_t after_prefill = TotalComputations(state, c, capacity);
  const int steps = 12;
  const auto decode = [&](Session& on) {
    for (int s = 0; s < steps; ++s) {
      ASSERT_TRUE(on.Forward({static_cast<int32_t>(s + 3)}, 0).ok());
    }
  };
  decode(session);
  const TokenProfile& p = *state.profile();
  EXPECT_EQ(p.steps, steps);
  EXPECT_EQ(p.probes, steps * 2);  // Two boundaries, each probed.
  int64_t layers = 0, rows = 0;
  double phases = p.select_ms + p.move_ms;
  for (int b = 0; b < TokenProfile::kBuckets; ++b) {
    layers += p.layers[b];
    rows += p.rows[b];
    phases += p.layer_ms[b];
    EXPECT_LE(p.layer_host_ms[b], p.layer_ms[b]);
  }
  EXPECT_EQ(layers, steps * c.num_layers);
  EXPECT_EQ(rows, TotalComputations(state, c, capacity) - after_prefill);
  EXPECT_GT(rows, layers);  // Revived rows beside each new token.
  EXPECT_EQ(p.revived, state.stats().revived);
  EXPECT_NEAR(phases, p.steps_ms, 1e-6 * p.steps_ms + 1e-9);
  EXPECT_GT(p.probe_wait_ms, 0.0);
  EXPECT_LE(p.probe_wait_ms, p.select_ms);

  // Host only: the same steps, layers, rows and probes, phases that still
  // add up to the step, and each layer's host time is all of its time.
  auto host_lazy = Lazy({"schedule=2:0.6,4:0.5"}, c);
  Session host_session(c, w, backend, *host_lazy, capacity);
  host_session.EnableTokenProfile(/*host_only=*/true);
  ASSERT_TRUE(host_session.Forward(prompt, 59).ok());
  decode(host_session);
  const TokenProfile& h = *host_session.token_state()->profile();
  EXPECT_TRUE(h.host_only);
  EXPECT_FALSE(p.host_only);
  EXPECT_EQ(h.steps, p.steps);
  EXPECT_EQ(h.probes, p.probes);
  EXPECT_EQ(h.revived, p.revived);
  double host_phases = h.select_ms + h.move_ms;
  for (int b = 0; b < TokenProfile::kBuckets; ++b) {
    EXPECT_EQ(h.layers[b], p.layers[b]);
    EXPECT_EQ(h.rows[b], p.rows[b]);
    EXPECT_DOUBLE_EQ(h.layer_host_ms[b], h.layer_ms[b]);
    host_phases += h.layer_ms[b];
  }
  EXPECT_NEAR(host_phases, h.steps_ms, 1e-6 * h.steps_ms + 1e-9);
}

// A step the backend discards (CUDA graph mismatch) must leave no trace, or
// its rerun would skip rows as already computed.
TEST(TokenPathTest, RollbackUndoesADiscardedStep) {
  const ModelConfig c = SixLayerLlama();
  TokenState state(c, 16);
  state.BeginStep();
  state.BeginPrompt(4);
  const std::vector<int32_t> prompt = {0, 1, 2, 3};
  state.MarkComputed(0, prompt, 0);
  state.EndPrefill();
  const TokenStats before = state.stats();
  state.BeginStep();
  const std::vector<int32_t> rows = {2, 4};
  state.MarkComputed(1, rows, 1);
  state.MarkAux(0, prompt);
  EXPECT_TRUE(state.present(1, 2));
  state.Rollback();
  EXPECT_FALSE(state.present(1, 2));
  EXPECT_FALSE(state.present(1, 4));
  EXPECT_TRUE(state.present(0, 2));
  EXPECT_FALSE(state.in_aux(0, 1));
  EXPECT_EQ(state.computations(1, 2), 0);
  EXPECT_EQ(state.computations(0, 2), 1);
  EXPECT_EQ(state.stats().computed, before.computed);
  EXPECT_EQ(state.stats().revived, before.revived);
}

// Keeps the higher-scoring half of the candidates before every layer >= 1
// and records the probe per (step, layer). `early`: MayProbeBefore, so
// Session computes the probe at the end of the previous layer's attention;
// `ask_odd_only`: the scores are read before odd layers only, so the probes
// started for even layers go unread.
class ProbeTopHalf : public Method {
 public:
  ProbeTopHalf(bool early, bool ask_odd_only)
      : early_(early), ask_odd_only_(ask_odd_only) {}
  std::string name() const override { return "probe-top-half"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  bool SelectsTokens() const override { return true; }
  bool MayProbeBefore(const LayerSite&) const override { return early_; }
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override {
    if (ask_odd_only_ && site.layer % 2 == 0) return;
    const absl::Span<const float> scores = candidates.LastQueryAttention();
    probes[{candidates.first_new(), site.layer}].assign(scores.begin(),
                                                        scores.end());
    std::vector<float> sorted(scores.begin(), scores.end());
    std::sort(sorted.begin(), sorted.end());
    const float median = sorted[sorted.size() / 2];
    keep->all = false;
    for (size_t i = 0; i < scores.size(); ++i) {
      if (scores[i] >= median) keep->keep_rows.push_back(static_cast<int>(i));
    }
  }
  std::map<std::pair<int32_t, int64_t>, std::vector<float>> probes;

 private:
  bool early_;
  bool ask_odd_only_;
};

// The probe computed early (after the previous layer's attention) is the
// probe computed at the layer: same keys, same cache layer, same query.
TEST(TokenPathTest, EarlyProbeEqualsTheProbeAtTheLayer) {
  const ModelConfig c = SixLayerLlama();
  const ModelWeights w = RandomWeights(c, 5);
  const std::vector<int32_t> prompt = RandomIds(48, c.vocab_size, 9);
  for (const bool ask_odd_only : {false, true}) {
    ProbeTopHalf at_layer(false, ask_odd_only), early(true, ask_odd_only);
    const Steps a = RunSteps(c, w, at_layer, prompt, 4, 47);
    const Steps b = RunSteps(c, w, early, prompt, 4, 47);
    EXPECT_EQ(a.logits, b.logits) << "ask_odd_only " << ask_odd_only;
    EXPECT_EQ(early.probes, at_layer.probes) << "ask_odd_only " << ask_odd_only;
    EXPECT_EQ(at_layer.probes.size(), ask_odd_only ? 5u * 3 : 5u * 5);
  }
}

TEST(TokenPathTest, LastQueryProbeMatchesAttentionRow) {
  // The probe's per-head softmax over listed keys equals Attention's weights:
  // with V = one-hot rows, attention output column j is key j's probability.
  const int64_t heads = 4, kv_heads = 2, hd = 8, capacity = 12;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  Tensor q = Tensor::Zeros(DType::kF32, {1, heads * hd});
  Tensor k = Tensor::Zeros(DType::kF32, {capacity, kv_heads * hd});
  for (int64_t i = 0; i < q.numel(); ++i) q.data<float>()[i] = normal(rng);
  for (int64_t i = 0; i < k.numel(); ++i) k.data<float>()[i] = normal(rng);
  const std::vector<int32_t> keys = {0, 2, 3, 7, 11};
  CpuBackend backend(1);
  Tensor probs = Tensor::Zeros(DType::kF32, {5});
  LastQueryArgs args{&q, &k, keys, heads, kv_heads, hd, 0.5f, &probs};
  backend.LastQueryAttention(args);

  // Reference through Attention: V rows one-hot in the first 5 columns of
  // each kv head (key j -> column j), query at position 11.
  Tensor v = Tensor::Zeros(DType::kF32, {capacity, kv_heads * hd});
  for (size_t j = 0; j < keys.size(); ++j) {
    for (int64_t g = 0; g < kv_heads; ++g) {
      v.data<float>()[keys[j] * kv_heads * hd + g * hd + j] = 1.0f;
    }
  }
  Tensor out = Tensor::Zeros(DType::kF32, {1, heads * hd});
  const std::vector<int32_t> qpos = {11};
  AttentionArgs a;
  a.q = &q;
  a.k_cache = &k;
  a.v_cache = &v;
  a.num_keys = 5;
  a.query_positions = qpos;
  a.key_positions = keys;
  a.num_heads = heads;
  a.num_kv_heads = kv_heads;
  a.head_dim = hd;
  a.scale = 0.5f;
  a.out = &out;
  backend.Attention(a);
  float sum = 0.0f;
  for (size_t j = 0; j < keys.size(); ++j) {
    double mean = 0.0;
    for (int64_t h = 0; h < heads; ++h) mean += out.data<float>()[h * hd + j];
    EXPECT_NEAR(probs.data<float>()[j], mean / heads, 1e-6) << j;
    sum += probs.data<float>()[j];
  }
  EXPECT_NEAR(sum, 1.0f, 1e-6);
}

TEST(TokenPathTest, KeyedAttentionIsCausalByOriginalPosition) {
  // Listed keys give the same output as contiguous keys on a cache holding
  // only those rows, with masking by the listed positions.
  const int64_t heads = 2, hd = 4, capacity = 16;
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  Tensor k = Tensor::Zeros(DType::kF32, {capacity, heads * hd});
  Tensor v = Tensor::Zeros(DType::kF32, {capacity, heads * hd});
  Tensor q = Tensor::Zeros(DType::kF32, {3, heads * hd});
  for (Tensor* t : {&k, &v, &q}) {
    for (int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] = normal(rng);
  }
  const std::vector<int32_t> keys = {1, 4, 5, 9, 13};
  const std::vector<int32_t> qpos = {4, 9, 13};
  Tensor packed_k = Tensor::Zeros(DType::kF32, {5, heads * hd});
  Tensor packed_v = Tensor::Zeros(DType::kF32, {5, heads * hd});
  CpuBackend backend(1);
  const std::vector<int32_t> dst = {0, 1, 2, 3, 4};
  backend.CopyRows(k, keys, dst, &packed_k);
  backend.CopyRows(v, keys, dst, &packed_v);
  const std::vector<int32_t> packed_qpos = {1, 3, 4};  // Index of own key.

  auto attend = [&](const Tensor& kc, const Tensor& vc,
                    absl::Span<const int32_t> kp,
                    absl::Span<const int32_t> qp) {
    Tensor out = Tensor::Zeros(DType::kF32, {3, heads * hd});
    AttentionArgs a;
    a.q = &q;
    a.k_cache = &kc;
    a.v_cache = &vc;
    a.num_keys = 5;
    a.query_positions = qp;
    a.key_positions = kp;
    a.num_heads = heads;
    a.num_kv_heads = heads;
    a.head_dim = hd;
    a.scale = 0.5f;
    a.out = &out;
    backend.Attention(a);
    return out.ToF32Vector();
  };
  const auto keyed = attend(k, v, keys, qpos);
  const auto packed = attend(packed_k, packed_v, {}, packed_qpos);
  for (size_t i = 0; i < keyed.size(); ++i) {
    EXPECT_NEAR(keyed[i], packed[i], 1e-6) << i;
  }
}

}  // namespace
}  // namespace dynsparse
