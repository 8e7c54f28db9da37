// Session::DecodeGreedy: the tokens and the sequence it leaves equal a loop
// of Forward calls with the host's greedy choice (dense, sparse and token
// pruning methods), a stop keeps exactly the tokens fed before it, and bad
// arguments are errors. (tests/cuda covers
// the pipelined CUDA backend, where steps run ahead of the host.)
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/graph/sampler.h"
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

using testing_models::RandomIds;

enum class Kind {
  kDense,
  kSparse,  // DejaVu-style sparse execution with lazy K/V.
  kTokens,  // LazyLLM: token pruning with Aux Cache revival.
};

struct Case {
  const char* name;
  ModelConfig config;
  Kind kind;
};

std::unique_ptr<Method> MakeMethod(const Case& c, Backend& backend) {
  absl::StatusOr<std::unique_ptr<Method>> m;
  switch (c.kind) {
    case Kind::kDense:
      m = std::make_unique<DenseMethod>();
      break;
    case Kind::kSparse:
      m = LowRankPredictorMethod::Create(
          {"mlp_keep=0.25", "head_keep=0.5", "predictors=random:8"});
      break;
    case Kind::kTokens: {
      auto args = MethodArgs::Parse({"schedule=1:0.5"});
      EXPECT_TRUE(args.ok()) << args.status();
      m = CreateMethod("lazyllm", *args);
      break;
    }
  }
  EXPECT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->Attach(c.config, backend).ok());
  return *std::move(m);
}

int32_t Greedy(const Tensor& logits) {
  Sampler greedy(SamplingOptions{});
  return greedy.Next(absl::MakeConstSpan(logits.data<float>(), logits.dim(1)));
}

class GreedyDecodeTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    weights_ = RandomWeights(GetParam().config, 22);
    method_ = MakeMethod(GetParam(), backend_);
    ref_method_ = MakeMethod(GetParam(), ref_backend_);
    session_ = std::make_unique<Session>(GetParam().config, weights_, backend_,
                                         *method_, kCapacity);
    ref_ = std::make_unique<Session>(GetParam().config, weights_, ref_backend_,
                                     *ref_method_, kCapacity);
  }

  // Prefills both sessions; returns the first greedy token.
  int32_t Prefill() {
    const std::vector<int32_t> prompt =
        RandomIds(kPrompt, GetParam().config.vocab_size, 5);
    auto a = session_->Forward(prompt, kPrompt - 1);
    auto b = ref_->Forward(prompt, kPrompt - 1);
    EXPECT_TRUE(a.ok() && b.ok());
    return Greedy(*b);
  }

  // `steps` Forward calls on ref_, each feeding the previous choice.
  std::vector<int32_t> ForwardLoop(int32_t first, int steps) {
    std::vector<int32_t> out;
    int32_t next = first;
    for (int s = 0; s < steps; ++s) {
      auto logits = ref_->Forward(absl::MakeConstSpan(&next, 1), 0);
      EXPECT_TRUE(logits.ok()) << logits.status();
      next = Greedy(*logits);
      out.push_back(next);
    }
    return out;
  }

  // Both sessions fed the same token give the same logits.
  void ExpectSameNextLogits(int32_t token) {
    auto a = session_->Forward(absl::MakeConstSpan(&token, 1), 0);
    auto b = ref_->Forward(absl::MakeConstSpan(&token, 1), 0);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->ToF32Vector(), b->ToF32Vector());
  }

  static constexpr int64_t kPrompt = 6;
  static constexpr int64_t kCapacity = 64;
  CpuBackend backend_{1};
  CpuBackend ref_backend_{1};
  ModelWeights weights_;
  std::unique_ptr<Method> method_, ref_method_;
  std::unique_ptr<Session> session_, ref_;
};

TEST_P(GreedyDecodeTest, EqualsAForwardLoop) {
  const int32_t first = Prefill();
  const int steps = 24;
  std::vector<int32_t> got;
  ASSERT_TRUE(session_
                  ->DecodeGreedy(first, steps,
                                 [&](int32_t t) {
                                   got.push_back(t);
                                   return true;
                                 })
                  .ok());
  const std::vector<int32_t> want = ForwardLoop(first, steps);
  EXPECT_EQ(got, want);
  // The fed tokens are not all one (a stale token would then go unseen in
  // the cache the last check compares).
  EXPECT_NE(std::count(want.begin(), want.end() - 1, first),
            static_cast<int64_t>(want.size()) - 1);
  EXPECT_EQ(session_->length(), kPrompt + steps);
  ExpectSameNextLogits(want.back());
}

TEST_P(GreedyDecodeTest, StopKeepsTheTokensFedBeforeIt) {
  const int32_t first = Prefill();
  std::vector<int32_t> got;
  ASSERT_TRUE(session_
                  ->DecodeGreedy(first, 20,
                                 [&](int32_t t) {
                                   got.push_back(t);
                                   return got.size() < 7;
                                 })
                  .ok());
  ASSERT_EQ(got.size(), 7u);
  const std::vector<int32_t> want = ForwardLoop(first, 7);
  EXPECT_EQ(got, want);
  // Fed: first and the six choices before the stop.
  EXPECT_EQ(session_->length(), kPrompt + 7);
  ExpectSameNextLogits(want.back());
}

INSTANTIATE_TEST_SUITE_P(
    Models, GreedyDecodeTest,
    ::testing::Values(
        Case{"llama", testing_models::SmallLlama(2, 64), Kind::kDense},
        Case{"opt", testing_models::SmallOpt(true, 2, 64), Kind::kDense},
        Case{"opt_post_norm", testing_models::SmallOpt(false, 2, 64),
             Kind::kDense},
        Case{"llama_sparse", testing_models::SmallLlama(2, 64), Kind::kSparse},
        Case{"opt_sparse", testing_models::SmallOpt(true, 2, 64),
             Kind::kSparse},
        Case{"llama_tokens", testing_models::SmallLlama(2, 64), Kind::kTokens}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(GreedyDecodeErrorTest, RejectsBadArguments) {
  const ModelConfig c = testing_models::SmallLlama(1, 64);
  const ModelWeights w = RandomWeights(c, 3);
  CpuBackend backend(1);
  DenseMethod dense;
  Session session(c, w, backend, dense, 8);
  ASSERT_TRUE(session.Forward({1, 2, 3}, 2).ok());
  const auto keep = [](int32_t) { return true; };
  absl::Status s = session.DecodeGreedy(1, 0, keep);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = session.DecodeGreedy(97, 2, keep);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("outside the vocabulary"), std::string::npos);
  // 3 tokens + 6 steps exceed the 8-token cache; nothing runs.
  s = session.DecodeGreedy(1, 6, keep);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_EQ(session.length(), 3);
}

}  // namespace
}  // namespace dynsparse
