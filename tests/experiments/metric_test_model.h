// Opens a model (the tiny-llama-chat fixture by default) on the CPU in f32
// with the dense method, as a MetricModel for metric tests.
#ifndef DYNSPARSE_TESTS_EXPERIMENTS_METRIC_TEST_MODEL_H_
#define DYNSPARSE_TESTS_EXPERIMENTS_METRIC_TEST_MODEL_H_

#include <memory>

#include "core/io/model_loader.h"
#include "core/tokenizer/tokenizer.h"
#include "experiments/metrics/metric.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dense/dense.h"
#include "tests/test_paths.h"

namespace dynsparse::testing {

// Sanitized builds run model-heavy parity tests on fewer documents: they are
// ~20x slower there, and the full comparison runs in the plain build.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

struct TestModel {
  LoadedModel model;
  std::unique_ptr<Tokenizer> tokenizer;
  CpuBackend backend{1};  // Tiny model: threads only add spin-waits.
  DenseMethod method;
  MetricModel view() {
    return {.model = &model,
            .tokenizer = tokenizer.get(),
            .backend = &backend,
            .method = &method,
            .device = "cpu",
            .dtype = "f32"};
  }
};

// A Hugging Face model folder (config, safetensors, tokenizer.json).
inline std::unique_ptr<TestModel> OpenModelDir(const std::string& dir) {
  auto m = std::make_unique<TestModel>();
  auto model = LoadModel(dir, LoadOptions{});
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  m->model = *std::move(model);
  auto tok = LoadHfTokenizer(dir);
  EXPECT_TRUE(tok.ok()) << tok.status();
  if (!tok.ok()) return nullptr;
  m->tokenizer = *std::move(tok);
  EXPECT_TRUE(m->method.Attach(m->model.config, m->backend).ok());
  return m;
}

inline std::unique_ptr<TestModel> OpenTinyLlama() {
  return OpenModelDir(FixturePath("models/tiny-llama-chat"));
}

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_EXPERIMENTS_METRIC_TEST_MODEL_H_
