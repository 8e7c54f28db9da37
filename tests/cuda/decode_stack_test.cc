// The persistent decode kernel (decode_stack.h) against the layer-by-layer
// kernels it replaces, run by a second backend with decode_stack off on the
// same random model: every decode step's logits agree to f32 summation
// noise, over CUDA-graph replays and past several 32-key attention items,
// for Llama shapes (GQA, RoPE, SwiGLU) and OPT shapes (LayerNorm, biases,
// ReLU) in f16 and bf16; the stack really ran each step; and shapes it does
// not take (head_dim 64) fall back to the layer loop.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/session.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend.h"
#include "methods/dense/dense.h"
#include "tests/cuda/cuda_test_util.h"

namespace dynsparse::cuda {
namespace {

struct StackCase {
  std::string name;
  ModelConfig config;
  DType dtype;
};

ModelConfig Llama(int64_t hidden, int64_t heads, int64_t kv_heads,
                  int64_t inter, int64_t layers) {
  return LlamaConfigFromShape({.vocab_size = 101,
                               .hidden_size = hidden,
                               .intermediate_size = inter,
                               .num_layers = layers,
                               .num_heads = heads,
                               .num_kv_heads = kv_heads,
                               .max_position_embeddings = 512});
}

ModelConfig Opt(int64_t hidden, int64_t heads, int64_t inter, int64_t layers) {
  return OptConfigFromShape({.vocab_size = 101,
                             .hidden_size = hidden,
                             .intermediate_size = inter,
                             .num_layers = layers,
                             .num_heads = heads,
                             .max_position_embeddings = 512});
}

std::vector<StackCase> Cases() {
  return {
      // Widths below one chunk a thread (hidden 512: 64 of 512 threads).
      {"llama gqa f16", Llama(512, 4, 2, 1376, 2), DType::kF16},
      {"llama gqa bf16", Llama(512, 4, 2, 1376, 2), DType::kBF16},
      // Four chunks a thread in the down projection (16384 wide).
      {"opt f16", Opt(512, 4, 16384, 2), DType::kF16},
      // Llama-2-7B's layer widths: every thread busy, three down chunks.
      {"llama-2-7b layer f16", Llama(4096, 32, 32, 11008, 1), DType::kF16},
  };
}

class DecodeStackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CudaBackendOptions options;
    options.decode_stack = true;
    auto on = CudaBackend::Create(options);
    if (!on.ok()) {
      GTEST_SKIP() << "skipping CUDA test: " << on.status().message();
    }
    stack_ = std::move(*on);
    // The stack reads f32 caches only, so its backend keeps them f32.
    EXPECT_EQ(stack_->KvCacheDtype(DType::kF16), DType::kF32);
    // The layer loop, on the stack's f32 KV caches (an f16 cache would move
    // the logits by more than the summation order does).
    CudaBackendOptions layer_loop;
    layer_loop.f16_kv_cache = false;
    auto off = CudaBackend::Create(layer_loop);
    ASSERT_TRUE(off.ok()) << off.status();
    layers_ = std::move(*off);
  }

  static int32_t Argmax(const Tensor& logits) {
    const std::vector<float> v = logits.ToF32Vector();
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) -
                                v.begin());
  }

  std::unique_ptr<CudaBackend> stack_;
  std::unique_ptr<CudaBackend> layers_;
};

TEST_F(DecodeStackTest, MatchesTheLayerLoopOverGraphReplays) {
  for (const StackCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const ModelWeights host = RandomWeights(c.config, 11, c.dtype);
    auto w_stack = stack_->UploadWeights(host);
    auto w_layers = layers_->UploadWeights(host);
    ASSERT_TRUE(w_stack.ok() && w_layers.ok());
    DenseMethod dense_a, dense_b;
    const int64_t prompt = 21, steps = 80;  // Keys 22 .. 101: 1-4 items.
    Session a(c.config, *w_stack, *stack_, dense_a, prompt + steps + 1);
    Session b(c.config, *w_layers, *layers_, dense_b, prompt + steps + 1);
    std::vector<int32_t> ids(prompt);
    for (int64_t i = 0; i < prompt; ++i) ids[i] = (7 * i + 3) % 101;
    auto la = a.Forward(ids, prompt - 1);
    auto lb = b.Forward(ids, prompt - 1);
    ASSERT_TRUE(la.ok() && lb.ok()) << la.status() << lb.status();
    const int64_t ran = stack_->decode_stack_steps();
    const int64_t replays = stack_->graph_stats().replays;
    double worst = 0.0;
    for (int64_t s = 0; s < steps; ++s) {
      const std::vector<int32_t> one = {Argmax(*lb)};
      la = a.Forward(one, 0);
      lb = b.Forward(one, 0);
      ASSERT_TRUE(la.ok() && lb.ok()) << la.status() << lb.status();
      worst = std::max(
          worst, testutil::RelativeError(la->ToF32Vector(), lb->ToF32Vector()));
    }
    std::cout << c.name << ": stack vs layer loop, max rel " << worst << "\n";
    EXPECT_LT(worst, 1e-4);
    // A captured step that reruns eagerly counts twice.
    EXPECT_GE(stack_->decode_stack_steps() - ran, steps)
        << "the stack kernel did not take every decode step";
    EXPECT_GE(stack_->graph_stats().replays - replays, steps - 4);
    EXPECT_EQ(layers_->decode_stack_steps(), 0);
  }
}

TEST_F(DecodeStackTest, OtherHeadDimsKeepTheLayerLoop) {
  const ModelConfig c = Llama(512, 8, 8, 1376, 1);  // head_dim 64
  auto w = stack_->UploadWeights(RandomWeights(c, 5, DType::kF16));
  ASSERT_TRUE(w.ok());
  DenseMethod dense;
  Session s(c, *w, *stack_, dense, 16);
  const std::vector<int32_t> ids = {1, 2, 3};
  ASSERT_TRUE(s.Forward(ids, 2).ok());
  const int32_t next = 4;
  ASSERT_TRUE(s.Forward(absl::MakeConstSpan(&next, 1), 0).ok());
  EXPECT_EQ(stack_->decode_stack_steps(), 0);
}

}  // namespace
}  // namespace dynsparse::cuda
