// Session's route to Backend::DecodeStack: a one-row step of a method that
// keeps every head and neuron, on a backend that fuses input norms, offers
// the backend all layers at once (the row's position, every layer's caches,
// the residual row); a backend that declines leaves the step to the layer
// loop with the same logits; prefill rows and methods that select units or
// tokens never reach it.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/graph/session.h"
#include "core/random_weights.h"
#include "experiments/bench/lowrank_predictor_method.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"
#include "methods/method_args.h"
#include "methods/registry.h"
#include "tests/core/small_models.h"

namespace dynsparse {
namespace {

// The CPU backend on the plain dense route (its default norm fusions), as
// a backend with a persistent decode kernel would be.
class FusingCpu : public CpuBackend {
 public:
  FusingCpu() : CpuBackend(1) {}
  bool FusesInputNorm() const override { return true; }
};

// ... which records each DecodeStack offer and declines it.
class StackProbe : public FusingCpu {
 public:
  struct Offer {
    int32_t position;
    size_t k_caches, v_caches, layers;
    Shape x_shape;
  };
  bool DecodeStack(const DecodeStackArgs& args) override {
    offers.push_back({args.position, args.k_caches.size(), args.v_caches.size(),
                      args.layers->size(), args.x->shape()});
    return false;
  }
  std::vector<Offer> offers;
};

TEST(DecodeStackRouteTest,
     DenseDecodeRowsAreOfferedAndDecliningChangesNothing) {
  const ModelConfig c = testing_models::SmallLlama(3, 64);
  const ModelWeights w = RandomWeights(c, 4);
  StackProbe probe;
  FusingCpu plain;
  DenseMethod m_probe, m_plain;
  Session a(c, w, probe, m_probe, 32);
  Session b(c, w, plain, m_plain, 32);
  const std::vector<int32_t> prompt = testing_models::RandomIds(6, 97, 2);
  auto la = a.Forward(prompt, 5);
  auto lb = b.Forward(prompt, 5);
  ASSERT_TRUE(la.ok() && lb.ok());
  EXPECT_TRUE(probe.offers.empty()) << "a prefill was offered";
  for (int32_t step = 0; step < 3; ++step) {
    const int32_t id = 11 + step;
    la = a.Forward(absl::MakeConstSpan(&id, 1), 0);
    lb = b.Forward(absl::MakeConstSpan(&id, 1), 0);
    ASSERT_TRUE(la.ok() && lb.ok());
    EXPECT_EQ(la->ToF32Vector(), lb->ToF32Vector()) << "step " << step;
  }
  ASSERT_EQ(probe.offers.size(), 3u);
  for (size_t i = 0; i < probe.offers.size(); ++i) {
    const StackProbe::Offer& o = probe.offers[i];
    EXPECT_EQ(o.position, static_cast<int32_t>(6 + i));
    EXPECT_EQ(o.k_caches, 3u);
    EXPECT_EQ(o.v_caches, 3u);
    EXPECT_EQ(o.layers, 3u);
    EXPECT_EQ(o.x_shape, (Shape{1, c.hidden_size}));
  }
}

TEST(DecodeStackRouteTest, MethodsThatSelectAreNeverOffered) {
  const ModelConfig c = testing_models::SmallLlama(2, 64);
  const ModelWeights w = RandomWeights(c, 5);
  auto sparse = LowRankPredictorMethod::Create(
      {"mlp_keep=0.5", "head_keep=0.5", "predictors=random:8"});
  auto args = MethodArgs::Parse({"schedule=1:0.5"});
  ASSERT_TRUE(sparse.ok() && args.ok());
  auto tokens = CreateMethod("lazyllm", *args);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  for (Method* m : {sparse->get(), tokens->get()}) {
    SCOPED_TRACE(m->name());
    StackProbe probe;
    ASSERT_TRUE(m->Attach(c, probe).ok());
    Session s(c, w, probe, *m, 32);
    const std::vector<int32_t> prompt = testing_models::RandomIds(5, 97, 3);
    ASSERT_TRUE(s.Forward(prompt, 4).ok());
    const int32_t id = 7;
    ASSERT_TRUE(s.Forward(absl::MakeConstSpan(&id, 1), 0).ok());
    EXPECT_TRUE(probe.offers.empty());
  }
}

}  // namespace
}  // namespace dynsparse
