// Pipelined greedy decoding on CudaBackend (Session::DecodeGreedy with
// EndStepAsync): step t + 1 is staged into the other half of the pinned
// buffers and launched while step t runs, and the graph's host copies are
// re-pointed at each step's half. The tokens, and the cache a decode leaves,
// must equal those of a Forward loop on the same backend bit for bit, for
// dense and for sparse (lazy K/V, side-work predictors) decoding, after a
// stop, and after a download buffer grows under a captured graph.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/graph/sampler.h"
#include "core/graph/session.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "experiments/bench/lowrank_predictor_method.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend.h"
#include "methods/dense/dense.h"

namespace dynsparse::cuda {
namespace {

ModelConfig Config(bool llama, int64_t max_positions = 256) {
  return llama
             ? LlamaConfigFromShape({.vocab_size = 97,
                                     .hidden_size = 128,
                                     .intermediate_size = 256,
                                     .num_layers = 3,
                                     .num_heads = 8,
                                     .num_kv_heads = 4,
                                     .max_position_embeddings = max_positions})
             : OptConfigFromShape({.vocab_size = 97,
                                   .hidden_size = 128,
                                   .intermediate_size = 512,
                                   .num_layers = 3,
                                   .num_heads = 4,
                                   .max_position_embeddings = max_positions});
}

class PipelinedDecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = CudaBackend::Create();
    if (!b.ok()) GTEST_SKIP() << "skipping CUDA test: " << b.status().message();
    gpu_ = std::move(*b);
    ASSERT_TRUE(gpu_->PipelinesSteps());
  }

  std::unique_ptr<Method> MakeMethod(const ModelConfig& c, bool sparse) {
    std::unique_ptr<Method> m;
    if (sparse) {
      auto made = LowRankPredictorMethod::Create(
          {"mlp_keep=0.25", "head_keep=0.5", "predictors=random:32",
           "dense_first_heads=1"});
      EXPECT_TRUE(made.ok()) << made.status();
      m = *std::move(made);
    } else {
      m = std::make_unique<DenseMethod>();
    }
    EXPECT_TRUE(m->Attach(c, *gpu_).ok());
    return m;
  }

  // The host's greedy choice from the last logits row.
  static int32_t Greedy(const Tensor& logits) {
    const int64_t vocab = logits.dim(1);
    return Sampler(SamplingOptions{})
        .Next(absl::MakeConstSpan(
            logits.data<float>() + (logits.dim(0) - 1) * vocab, vocab));
  }

  // The reference: `steps` Forward calls, each feeding the previous choice
  // (`first` to begin with); returns the choices.
  static std::vector<int32_t> ForwardLoop(Session& session, int32_t first,
                                          int steps) {
    std::vector<int32_t> out;
    int32_t next = first;
    for (int s = 0; s < steps; ++s) {
      auto logits = session.Forward(absl::MakeConstSpan(&next, 1), 0);
      EXPECT_TRUE(logits.ok()) << logits.status();
      if (!logits.ok()) break;
      next = Greedy(*logits);
      out.push_back(next);
    }
    return out;
  }

  std::unique_ptr<CudaBackend> gpu_;
};

TEST_F(PipelinedDecodeTest, TokensAndCacheEqualAForwardLoop) {
  for (bool llama : {false, true}) {
    for (bool sparse : {false, true}) {
      SCOPED_TRACE(std::string(llama ? "llama" : "opt") +
                   (sparse ? " sparse" : " dense"));
      const ModelConfig c = Config(llama);
      auto w = gpu_->UploadWeights(RandomWeights(c, 3));
      ASSERT_TRUE(w.ok()) << w.status();
      auto m_pipe = MakeMethod(c, sparse);
      auto m_loop = MakeMethod(c, sparse);
      Session pipe(c, *w, *gpu_, *m_pipe, 128);
      Session loop(c, *w, *gpu_, *m_loop, 128);
      const std::vector<int32_t> prompt = {5, 17, 3, 88, 41, 2, 60};
      // Each session's steps replay its own graph; switching sessions
      // recaptures, so run them one after the other.
      auto first = pipe.Forward(prompt, 6);
      ASSERT_TRUE(first.ok()) << first.status();
      const int32_t token0 = Greedy(*first);
      const int steps = 40;
      std::vector<int32_t> got;
      const int64_t replays = gpu_->graph_stats().replays;
      ASSERT_TRUE(pipe.DecodeGreedy(token0, steps,
                                    [&](int32_t t) {
                                      got.push_back(t);
                                      return true;
                                    })
                      .ok());
      EXPECT_GE(gpu_->graph_stats().replays - replays, steps - 4)
          << "pipelined steps did not replay";
      EXPECT_EQ(pipe.length(), 7 + steps);

      ASSERT_TRUE(loop.Forward(prompt, 6).ok());
      const std::vector<int32_t> want = ForwardLoop(loop, token0, steps);
      ASSERT_EQ(want.size(), static_cast<size_t>(steps));
      EXPECT_EQ(got, want);
      const int32_t next = want.back();
      // The cache each left: the same logits for the same next token.
      auto a = pipe.Forward(absl::MakeConstSpan(&next, 1), 0);
      auto b = loop.Forward(absl::MakeConstSpan(&next, 1), 0);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->ToF32Vector(), b->ToF32Vector());
    }
  }
}

// A stop at token 9 leaves the steps already launched past it forgotten:
// the sequence goes on exactly as a Forward loop that stopped there.
TEST_F(PipelinedDecodeTest, StopForgetsStepsRunPastIt) {
  const ModelConfig c = Config(/*llama=*/true);
  auto w = gpu_->UploadWeights(RandomWeights(c, 4));
  ASSERT_TRUE(w.ok()) << w.status();
  auto m_pipe = MakeMethod(c, /*sparse=*/true);
  auto m_loop = MakeMethod(c, /*sparse=*/true);
  Session pipe(c, *w, *gpu_, *m_pipe, 128);
  Session loop(c, *w, *gpu_, *m_loop, 128);
  const std::vector<int32_t> prompt = {9, 1, 44, 70};
  auto first = pipe.Forward(prompt, 3);
  ASSERT_TRUE(first.ok());
  const int32_t token0 = Greedy(*first);
  std::vector<int32_t> got;
  ASSERT_TRUE(pipe.DecodeGreedy(token0, 30,
                                [&](int32_t t) {
                                  got.push_back(t);
                                  return got.size() < 9;
                                })
                  .ok());
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(pipe.length(), 4 + 9);
  // Twenty more steps from the stop, pipelined, against the loop.
  std::vector<int32_t> more;
  ASSERT_TRUE(pipe.DecodeGreedy(got.back(), 20,
                                [&](int32_t t) {
                                  more.push_back(t);
                                  return true;
                                })
                  .ok());
  ASSERT_TRUE(loop.Forward(prompt, 3).ok());
  const std::vector<int32_t> want = ForwardLoop(loop, token0, 9 + 20);
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(got, want);
}

// A prefill whose logits outgrow the pinned download buffer reallocates it;
// the graph captured before wrote into the old buffer, so it must be dropped
// and the decode that follows still right.
TEST_F(PipelinedDecodeTest, GrowingTheDownloadBufferDropsTheGraph) {
  const ModelConfig c = Config(/*llama=*/true, /*max_positions=*/4096);
  auto w = gpu_->UploadWeights(RandomWeights(c, 5));
  ASSERT_TRUE(w.ok());
  auto m = MakeMethod(c, /*sparse=*/false);
  Session small(c, *w, *gpu_, *m, 64);
  Session big(c, *w, *gpu_, *m, 4096);
  auto decode = [&](Session& s, int32_t from) {
    std::vector<int32_t> out;
    EXPECT_TRUE(s.DecodeGreedy(from, 12, [&](int32_t t) {
                   out.push_back(t);
                   return true;
                 }).ok());
    return out;
  };
  ASSERT_TRUE(small.Forward({1, 2, 3}, 2).ok());
  const std::vector<int32_t> before = decode(small, 7);
  EXPECT_GT(gpu_->graph_stats().replays, 0);
  // 3000 rows x 97 logits x 4 bytes > the first buffer's 1 MiB.
  std::vector<int32_t> long_prompt(3000);
  for (size_t i = 0; i < long_prompt.size(); ++i) long_prompt[i] = i % 97;
  ASSERT_TRUE(big.Forward(long_prompt, 0).ok());
  small.Reset();
  ASSERT_TRUE(small.Forward({1, 2, 3}, 2).ok());
  EXPECT_EQ(decode(small, 7), before);
}

}  // namespace
}  // namespace dynsparse::cuda
