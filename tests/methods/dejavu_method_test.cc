// The dejavu method: keeping every unit equals dense bit for bit; each
// selector keeps K distinct in-range units per row at the layers it should;
// predictor ids are the top-K of the predictor read one sub-block ahead; and
// predictor folders that do not fit the model fail with the file and field.
#include "methods/dejavu/dejavu_method.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "core/graph/session.h"
#include "core/model_shapes.h"
#include "core/random_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/dense/dense.h"
#include "methods/registry.h"

namespace dynsparse {
namespace {

namespace fs = std::filesystem;

ModelConfig Opt() {
  return OptConfigFromShape({.vocab_size = 61,
                             .hidden_size = 32,
                             .intermediate_size = 64,
                             .num_layers = 3,
                             .num_heads = 4,
                             .max_position_embeddings = 64});
}

ModelConfig Llama() {
  return LlamaConfigFromShape({.vocab_size = 61,
                               .hidden_size = 32,
                               .intermediate_size = 48,
                               .num_layers = 3,
                               .num_heads = 4,
                               .num_kv_heads = 2,
                               .max_position_embeddings = 64});
}

absl::StatusOr<std::unique_ptr<Method>> Make(
    const std::vector<std::string>& items) {
  auto args = MethodArgs::Parse(items);
  if (!args.ok()) return args.status();
  return CreateMethod("dejavu", *args);
}

std::unique_ptr<Method> Attached(const std::vector<std::string>& items,
                                 const ModelConfig& config, Backend& backend) {
  auto method = Make(items);
  EXPECT_TRUE(method.ok()) << method.status();
  if (!method.ok()) return nullptr;
  absl::Status s = (*method)->Attach(config, backend);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(*method);
}

std::vector<int32_t> Ids(int n) {
  std::mt19937 rng(7);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 61);
  return ids;
}

// Prefill of 6 tokens, then 3 decode steps: every logit row.
std::vector<float> Logits(const ModelConfig& c, const ModelWeights& w,
                          Method& method) {
  CpuBackend backend(1);
  Session session(c, w, backend, method, 16);
  const std::vector<int32_t> ids = Ids(9);
  std::vector<float> out;
  auto prefill = session.Forward(absl::MakeConstSpan(ids).subspan(0, 6), 0);
  EXPECT_TRUE(prefill.ok()) << prefill.status();
  out = prefill->ToF32Vector();
  for (int i = 6; i < 9; ++i) {
    auto step = session.Forward(absl::MakeConstSpan(ids).subspan(i, 1), 0);
    EXPECT_TRUE(step.ok()) << step.status();
    const std::vector<float> v = step->ToF32Vector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

TEST(DejavuMethodTest, KeepingEverythingEqualsDenseExactly) {
  for (const ModelConfig& c : {Opt(), Llama()}) {
    const ModelWeights w = RandomWeights(c, 3);
    DenseMethod dense;
    const std::vector<float> expected = Logits(c, w, dense);
    CpuBackend backend(1);
    for (const char* selector : {"predictor", "oracle", "random"}) {
      auto method =
          Attached({absl::StrCat("selector=", selector), "predictors=random:8",
                    "mlp_keep=1.0", "head_keep=1.0", "execution=masked"},
                   c, backend);
      ASSERT_NE(method, nullptr);
      EXPECT_EQ(Logits(c, w, *method), expected) << selector;
    }
  }
}

TEST(DejavuMethodTest, SparseSelectionsChangeTheLogits) {
  const ModelConfig c = Opt();
  const ModelWeights w = RandomWeights(c, 3);
  DenseMethod dense;
  const std::vector<float> expected = Logits(c, w, dense);
  CpuBackend backend(1);
  for (const char* selector : {"predictor", "oracle", "random"}) {
    auto method =
        Attached({absl::StrCat("selector=", selector), "predictors=random:8",
                  "mlp_keep=0.25", "head_keep=0.5"},
                 c, backend);
    ASSERT_NE(method, nullptr);
    EXPECT_NE(Logits(c, w, *method), expected) << selector;
  }
}

// The graph's sparse execution of this method's selections (part B's
// kernels) gives the masked logits; both differ from dense.
TEST(DejavuMethodTest, SparseExecutionMatchesMasked) {
  for (const ModelConfig& c : {Opt(), Llama()}) {
    const ModelWeights w = RandomWeights(c, 3);
    CpuBackend backend(1);
    for (const char* selector : {"predictor", "oracle", "random"}) {
      // Masked, then sparse with DejaVu's lazy K/V window and a short one.
      std::vector<float> out[3];
      for (int sparse = 0; sparse < 3; ++sparse) {
        auto method = Attached(
            {absl::StrCat("selector=", selector), "predictors=random:8",
             "mlp_keep=0.25", "head_keep=0.5", "seed=2",
             sparse ? "execution=sparse" : "execution=masked",
             sparse == 2 ? "lazy_kv_window=3" : "lazy_kv_window=16"},
            c, backend);
        ASSERT_NE(method, nullptr);
        out[sparse] = Logits(c, w, *method);
      }
      for (int sparse = 1; sparse < 3; ++sparse) {
        ASSERT_EQ(out[0].size(), out[sparse].size());
        for (size_t i = 0; i < out[0].size(); ++i) {
          ASSERT_NEAR(out[0][i], out[sparse][i],
                      1e-4f * (1 + std::fabs(out[0][i])))
              << selector << " run " << sparse << " logit " << i;
        }
      }
    }
  }
}

// Rows of a host selection's ids (ids tensor or host indices).
std::vector<std::vector<int32_t>> Rows(const UnitSelection& s, int64_t rows) {
  const int32_t* ids = s.ids.empty() ? s.indices.data() : s.ids.data<int32_t>();
  std::vector<std::vector<int32_t>> out;
  for (int64_t r = 0; r < rows; ++r) {
    out.emplace_back(ids + r * s.per_row, ids + (r + 1) * s.per_row);
  }
  return out;
}

void ExpectDistinctInRange(const UnitSelection& s, int64_t rows, int64_t k,
                           int64_t units) {
  ASSERT_FALSE(s.all);
  ASSERT_EQ(s.per_row, k);
  if (s.ids.empty()) {
    ASSERT_EQ(static_cast<int64_t>(s.indices.size()), rows * k);
  } else {
    ASSERT_EQ(s.ids.shape(), (Shape{rows, k}));
  }
  for (const std::vector<int32_t>& row : Rows(s, rows)) {
    EXPECT_EQ(std::set<int32_t>(row.begin(), row.end()).size(),
              static_cast<size_t>(k));
    for (int32_t id : row) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, units);
    }
  }
}

Tensor RandomRows(int64_t rows, int64_t width, int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(rows * width);
  for (float& x : v) x = normal(rng);
  return Tensor::FromF32(v, {rows, width});
}

TEST(DejavuMethodTest, EachSelectorKeepsKDistinctUnitsPerRowWhereAsked) {
  const ModelConfig c = Opt();  // 3 layers, 4 heads, 64 neurons.
  CpuBackend backend(1);
  const int64_t rows = 5;
  for (const char* selector : {"predictor", "oracle", "random"}) {
    auto method =
        Attached({absl::StrCat("selector=", selector), "predictors=random:8",
                  "mlp_keep_layers=0.25,0.5,0.25", "head_keep=0.5",
                  "dense_last_mlp=1", "dense_first_heads=1"},
                 c, backend);
    ASSERT_NE(method, nullptr);
    for (int64_t l = 0; l < c.num_layers; ++l) {
      UnitSelection heads, neurons;
      method->SelectHeads({l, Phase::kPrefill}, RandomRows(rows, 32, l),
                          &heads);
      method->SelectNeurons({l, Phase::kPrefill}, RandomRows(rows, 32, 9 + l),
                            &neurons);
      SCOPED_TRACE(absl::StrCat(selector, " layer ", l));
      if (l == 0) {
        EXPECT_TRUE(heads.all);
      } else if (std::string(selector) == "oracle") {
        EXPECT_TRUE(heads.oracle);
        EXPECT_EQ(heads.per_row, 2);
      } else {
        ExpectDistinctInRange(heads, rows, 2, 4);
      }
      const int64_t k = l == 0 ? 16 : 32;
      if (l == 2) {
        EXPECT_TRUE(neurons.all);
      } else if (std::string(selector) == "oracle") {
        EXPECT_TRUE(neurons.oracle);
        EXPECT_EQ(neurons.per_row, k);
      } else {
        ExpectDistinctInRange(neurons, rows, k, 64);
      }
    }
  }
}

// Top-k ids of w2 (w1 x) per row, ascending, computed here in double.
std::vector<std::vector<int32_t>> ExpectedTopK(const PredictorWeights& p,
                                               const Tensor& x, int64_t k) {
  const std::vector<float> w1 = p.w1.ToF32Vector(), w2 = p.w2.ToF32Vector();
  const std::vector<float> xs = x.ToF32Vector();
  const int64_t rank = p.w1.dim(0), d = p.w1.dim(1), units = p.w2.dim(0);
  std::vector<std::vector<int32_t>> out;
  for (int64_t r = 0; r < x.dim(0); ++r) {
    std::vector<double> h(rank, 0.0), z(units, 0.0);
    for (int64_t i = 0; i < rank; ++i) {
      for (int64_t j = 0; j < d; ++j)
        h[i] += double(w1[i * d + j]) * xs[r * d + j];
    }
    for (int64_t u = 0; u < units; ++u) {
      for (int64_t i = 0; i < rank; ++i)
        z[u] += double(w2[u * rank + i]) * h[i];
    }
    std::vector<int32_t> order(units);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return z[a] > z[b]; });
    order.resize(k);
    std::sort(order.begin(), order.end());
    out.push_back(order);
  }
  return out;
}

TEST(DejavuMethodTest, PredictorsReadTheResidualOneSubBlockAhead) {
  const ModelConfig c = Opt();
  CpuBackend backend(1);
  auto method = Attached(
      {"predictors=random:8", "seed=4", "mlp_keep=0.25", "head_keep=0.5"}, c,
      backend);
  ASSERT_NE(method, nullptr);
  const Tensor attn_in0 = RandomRows(3, 32, 1), mlp_in0 = RandomRows(3, 32, 2);
  const Tensor attn_in1 = RandomRows(3, 32, 3);
  UnitSelection heads0, neurons0, heads1;
  method->SelectHeads({0, Phase::kPrefill}, attn_in0, &heads0);
  method->SelectNeurons({0, Phase::kPrefill}, mlp_in0, &neurons0);
  method->SelectHeads({1, Phase::kPrefill}, attn_in1, &heads1);
  auto layer = [&](bool heads, int64_t l) {
    return RandomPredictorLayer(c, heads, 8, l, 4);
  };
  EXPECT_EQ(Rows(heads0, 3), ExpectedTopK(layer(true, 0), attn_in0, 2));
  EXPECT_EQ(Rows(neurons0, 3), ExpectedTopK(layer(false, 0), attn_in0, 16));
  EXPECT_EQ(Rows(heads1, 3), ExpectedTopK(layer(true, 1), mlp_in0, 2));
}

TEST(DejavuMethodTest, BadArgumentsNameTheParameter) {
  auto expect_error = [](const std::vector<std::string>& items,
                         const std::string& needle) {
    auto m = Make(items);
    ASSERT_FALSE(m.ok()) << needle;
    EXPECT_NE(m.status().message().find(needle), std::string::npos)
        << m.status();
  };
  expect_error({"selector=oracle", "mlp_keep=1.5"}, "'mlp_keep'");
  expect_error({"selector=best"}, "'selector'");
  expect_error({"mlp_keep=0.5"}, "'predictors'");
  expect_error({"predictors=random:x"}, "random:D");
  expect_error({"selector=oracle", "execution=fast"}, "'execution'");
  expect_error({"selector=oracle", "train_device=tpu"}, "'train_device'");
  expect_error({"selector=oracle", "lazy_kv_window=1"}, "'lazy_kv_window'");
  expect_error({"selector=oracle", "lazy_kv_window=17"}, "'lazy_kv_window'");
  expect_error({"selector=oracle", "mlp_keep=0.5", "mlp_keep_layers=0.5"},
               "not both");
  auto m = Make({"selector=oracle", "head_keep_layers=0.5,0.5"});
  ASSERT_TRUE(m.ok());
  CpuBackend backend(1);
  const absl::Status s = (*m)->Attach(Opt(), backend);
  EXPECT_NE(s.message().find("'head_keep_layers': 2 values for a model of 3"),
            std::string::npos)
      << s;
}

class PredictorFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (fs::temp_directory_path() /
         absl::StrCat(
             "dejavu_predictors_", getpid(), "_",
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
            .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    SaveRandomPredictors(config_);
  }
  // Rank-8 MLP and rank-4 head predictors for `config` into dir_.
  void SaveRandomPredictors(const ModelConfig& config) {
    PredictorSet set;
    set.mlp_rank = 8;
    set.head_rank = 4;
    for (int64_t l = 0; l < config.num_layers; ++l) {
      set.mlp.push_back(RandomPredictorLayer(config, false, 8, l, 1));
      set.heads.push_back(RandomPredictorLayer(config, true, 4, l, 1));
    }
    ASSERT_TRUE(SavePredictors(dir_, config, set).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::Status Attach(const ModelConfig& config,
                      const std::string& extra = "") {
    std::vector<std::string> items = {absl::StrCat("predictors=", dir_),
                                      "mlp_keep=0.5"};
    if (!extra.empty()) items.push_back(extra);
    auto m = Make(items);
    if (!m.ok()) return m.status();
    CpuBackend backend(1);
    return (*m)->Attach(config, backend);
  }
  void ExpectError(const absl::Status& s, const std::string& a,
                   const std::string& b) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(a), std::string::npos) << s;
    EXPECT_NE(s.message().find(b), std::string::npos) << s;
  }
  void EditJson(const std::string& key, const nlohmann::json& value) {
    const std::string path = dir_ + "/predictors.json";
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in);
    j[key] = value;
    std::ofstream(path) << j.dump();
  }

  ModelConfig config_ = Opt();
  std::string dir_;
};

TEST_F(PredictorFileTest, LoadsForItsModel) {
  EXPECT_TRUE(Attach(config_).ok());
  auto set = LoadPredictors(dir_, config_);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->mlp[2].w2.shape(), (Shape{64, 8}));
  EXPECT_EQ(set->mlp[2].w1.ToF32Vector(),
            RandomPredictorLayer(config_, false, 8, 2, 1).w1.ToF32Vector());
}

TEST_F(PredictorFileTest, MissingFolderOrFile) {
  fs::remove(dir_ + "/predictors.json");
  ExpectError(Attach(config_), "predictors.json", "missing");
  fs::remove_all(dir_);
  ExpectError(Attach(config_), dir_, "no such folder");
}

TEST_F(PredictorFileTest, AnotherModelsPredictors) {
  ModelConfig other = config_;
  other.intermediate_size = 128;
  ExpectError(Attach(other), "predictors.json: field 'model_fingerprint'",
              "ffn64");
}

TEST_F(PredictorFileTest, SameArchitectureOtherWeights) {
  // Files record the weights' id when the model has one; a fine-tune of the
  // same shape is refused, a model without an id (or an old file) is not.
  ModelConfig base = config_;
  base.weights_id = "fnv1a64:base";
  SaveRandomPredictors(base);
  EXPECT_TRUE(Attach(base).ok());
  EXPECT_TRUE(Attach(config_).ok());  // No id to compare with.
  ModelConfig tuned = base;
  tuned.weights_id = "fnv1a64:tuned";
  ExpectError(Attach(tuned), "predictors.json: field 'weights_id'",
              "fnv1a64:base");
}

TEST_F(PredictorFileTest, WrongRankOrShape) {
  ExpectError(Attach(config_, "mlp_rank=16"), "field 'mlp_rank'",
              "mlp_rank=16");
  EditJson("head_rank", 5);
  ExpectError(Attach(config_),
              "predictors.safetensors: tensor 'layers.0.heads.w1'",
              "expected [5,32]");
}

TEST_F(PredictorFileTest, TruncatedTensorFile) {
  const std::string path = dir_ + "/predictors.safetensors";
  fs::resize_file(path, fs::file_size(path) - 100);
  ExpectError(Attach(config_), "predictors.safetensors", "");
}

}  // namespace
}  // namespace dynsparse
