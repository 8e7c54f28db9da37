// Backend::TopCount on CUDA (top_count.h) against the host reference
// core/graph/top_count.h, index for index: distinct, tied, signed-zero and
// probability-like scores from 2 to 70000 of them; and a LazyLLM session on
// CudaBackend choosing its tokens on the device or on the host
// (DYNSPARSE_CUDA_TOP_COUNT) selects the same tokens at every boundary.
#include "kernels/cuda/top_count.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"
#include "core/graph/top_count.h"
#include "core/io/model_loader.h"
#include "kernels/cuda/cuda_backend.h"
#include "methods/lazyllm/lazyllm.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/test_paths.h"

namespace dynsparse::cuda {
namespace {

class TopCountTest : public testutil::CudaTest {
 protected:
  enum class Kind { kNormal, kFewValues, kSignedZeros, kProbabilities };

  std::vector<float> Scores(Kind kind, int64_t n) {
    std::vector<float> s = RandomValues(n);
    switch (kind) {
      case Kind::kNormal:
        break;
      case Kind::kFewValues:  // Ties across every pass of the select.
        for (float& x : s) x = std::floor(std::fabs(x) * 2.f) / 7.f;
        break;
      case Kind::kSignedZeros:
        for (float& x : s) x = x > 0.5f ? 0.f : x < -0.5f ? -0.f : x;
        break;
      case Kind::kProbabilities: {  // A softmax, as the probe gives.
        double total = 0;
        for (float& x : s) total += (x = std::exp(4.f * x));
        for (float& x : s) x = static_cast<float>(x / total);
        break;
      }
    }
    return s;
  }

  void Check(Kind kind, int64_t n, int64_t count) {
    SCOPED_TRACE(absl::StrCat("kind ", static_cast<int>(kind), " n ", n,
                              " count ", count, " ", SeedMessage()));
    const std::vector<float> scores = Scores(kind, n);
    const std::vector<int32_t> want = TopCountIndices(scores, count);
    const Tensor device_scores = Upload(Tensor::FromF32(scores, {n}));
    Tensor top = PoisonedDevice(DType::kI32, {count});
    ASSERT_TRUE(TopCountDevice(ctx(), device_scores, count, &top).ok());
    const std::vector<float> got = Download(top);
    ASSERT_EQ(got.size(), want.size());
    int64_t wrong = 0, first_wrong = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != static_cast<float>(want[i])) {
        if (wrong++ == 0) first_wrong = static_cast<int64_t>(i);
      }
    }
    EXPECT_EQ(wrong, 0) << "first at " << first_wrong;
  }
};

TEST_F(TopCountTest, MatchesTheHostChoice) {
  for (const Kind kind : {Kind::kNormal, Kind::kFewValues, Kind::kSignedZeros,
                          Kind::kProbabilities}) {
    for (const int64_t n : {2, 33, 1023, 1024, 1025, 4097, 16384, 70001}) {
      for (const int64_t count : {int64_t{1}, n / 4, n / 2, n - 1}) {
        if (count >= 1) Check(kind, n, count);
      }
    }
  }
}

TEST_F(TopCountTest, RejectsCountsOutsideTheScores) {
  const Tensor scores = Upload(Tensor::FromF32({0.1f, 0.2f, 0.3f}, {3}));
  Tensor top = PoisonedDevice(DType::kI32, {3});
  EXPECT_FALSE(TopCountDevice(ctx(), scores, 3, &top).ok());
  Tensor none = PoisonedDevice(DType::kI32, {1});
  EXPECT_FALSE(TopCountDevice(ctx(), scores, 0, &none).ok());
}

// Forwards to LazyLLM and records each boundary's kept candidates.
class RecordedLazyLlm : public Method {
 public:
  explicit RecordedLazyLlm(std::unique_ptr<Method> inner)
      : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  absl::Status Attach(const ModelConfig& c, Backend& b) override {
    return inner_->Attach(c, b);
  }
  void BeginSequence() override { inner_->BeginSequence(); }
  bool SelectsTokens() const override { return true; }
  bool AttendsToCachedTokens() const override {
    return inner_->AttendsToCachedTokens();
  }
  bool MayProbeBefore(const LayerSite& site) const override {
    return inner_->MayProbeBefore(site);
  }
  int64_t ProbeTopCount(const LayerSite& site, int64_t candidates,
                        int64_t prunable) const override {
    return inner_->ProbeTopCount(site, candidates, prunable);
  }
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override {
    inner_->SelectTokens(site, candidates, keep);
    if (!keep->all)
      kept[{candidates.first_new(), site.layer}] = keep->keep_rows;
  }
  std::map<std::pair<int32_t, int64_t>, std::vector<int32_t>> kept;

 private:
  std::unique_ptr<Method> inner_;
};

struct PrunedRun {
  std::map<std::pair<int32_t, int64_t>, std::vector<int32_t>> kept;
  std::vector<float> logits;
  TokenStats stats;
};

PrunedRun RunPruned(bool top_count, const std::string& keys,
                    bool bins = false) {
  PrunedRun run;
  CudaBackendOptions options;
  options.top_count = top_count;
  options.top_count_bins = bins;
  auto backend = CudaBackend::Create(options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  if (!backend.ok()) return run;
  auto model = LoadModel(testing::FixturePath("models/llama-gqa-llama3rope"),
                         LoadOptions());
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return run;
  auto device = (*backend)->UploadWeights(model->weights);
  EXPECT_TRUE(device.ok()) << device.status();
  auto args = MethodArgs::Parse({"schedule=1:0.4", "keys=" + keys});
  EXPECT_TRUE(args.ok()) << args.status();
  auto lazy = LazyLlmMethod::Create(*args);
  EXPECT_TRUE(lazy.ok()) << lazy.status();
  if (!device.ok() || !lazy.ok()) return run;
  RecordedLazyLlm method(std::move(*lazy));
  EXPECT_TRUE(method.Attach(model->config, **backend).ok());
  const int64_t prompt = 700, steps = 8;
  Session session(model->config, *device, **backend, method, prompt + steps);
  std::vector<int32_t> ids(prompt);
  for (int64_t i = 0; i < prompt; ++i) ids[i] = (i * 37 + 11) % 512;
  auto logits = session.Forward(ids, prompt - 1);
  EXPECT_TRUE(logits.ok()) << logits.status();
  for (int64_t s = 0; s < steps && logits.ok(); ++s) {
    const std::vector<float> row = logits->ToF32Vector();
    run.logits.insert(run.logits.end(), row.begin(), row.end());
    logits = session.Forward({static_cast<int32_t>(s * 5 + 1)}, 0);
    EXPECT_TRUE(logits.ok()) << logits.status();
  }
  run.kept = std::move(method.kept);
  run.stats = session.token_state()->stats();
  return run;
}

TEST_F(TopCountTest, LazyLlmSessionSelectsTheSameTokensOnDeviceOrHost) {
  ctx_.reset();  // Each backend owns its own context.
  for (const std::string keys : {"selected", "cached"}) {
    SCOPED_TRACE("keys=" + keys);
    const PrunedRun device = RunPruned(true, keys);
    const PrunedRun host = RunPruned(false, keys);
    // The prompt's step and every decode step prune at layer 1.
    EXPECT_EQ(device.kept.size(), 9u);
    EXPECT_EQ(device.kept, host.kept);
    EXPECT_EQ(device.stats.computed, host.stats.computed);
    EXPECT_EQ(device.stats.revived, host.stats.revived);
    EXPECT_LT(testutil::RelativeError(device.logits, host.logits), 1e-6);
    const PrunedRun bins = RunPruned(true, keys, /*bins=*/true);
    EXPECT_EQ(bins.kept, host.kept);
    EXPECT_LT(testutil::RelativeError(bins.logits, host.logits), 1e-6);
  }
}

}  // namespace
}  // namespace dynsparse::cuda
