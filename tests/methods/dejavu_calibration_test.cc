// DejaVu calibration and predictor training end to end on models/ref-opt
// (CI-sized: ~1.5k tokens of the model card, a few epochs, one thread): the
// files hold the real token count and the labels the model produces, the
// trained predictors beat chance by a wide margin, and the dejavu method
// loads them and runs.
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/graph/session.h"
#include "core/io/model_loader.h"
#include "core/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/dejavu/calibration.h"
#include "methods/dejavu/labels.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/dejavu/train_predictors.h"
#include "methods/registry.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

namespace fs = std::filesystem;
using testing::SourcePath;

class DejavuCalibrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto model = LoadModel(SourcePath("models/ref-opt"), LoadOptions{});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = new LoadedModel(*std::move(model));
    auto tok = LoadHfTokenizer(SourcePath("models/ref-opt"));
    ASSERT_TRUE(tok.ok()) << tok.status();
    std::ifstream in(SourcePath("models/ref-opt/README.md"));
    std::stringstream text;
    text << in.rdbuf();
    ids_ = new std::vector<int32_t>((*tok)->Encode(text.str(), false));
    ids_->resize(std::min<size_t>(ids_->size(), 1500));
    dir_ = new std::string(
        (fs::temp_directory_path() / absl::StrCat("dejavu_calib_", getpid()))
            .string());
    fs::remove_all(*dir_);

    CpuBackend backend(1);
    CalibrationOptions options;
    options.context = 256;
    options.bos_id = 0;
    options.corpus = "models/ref-opt/README.md";
    auto meta = RecordCalibration(model_->config, model_->weights, backend,
                                  *ids_, options, *dir_);
    ASSERT_TRUE(meta.ok()) << meta.status();
    meta_ = new nlohmann::json(*meta);
  }

  // Training is slow next to recording: only the tests that need predictors
  // train them, once per process (ctest runs this binary as one entry).
  static void Train() {
    if (trained_ != nullptr) return;
    TrainAllOptions train;
    train.mlp.rank = 48;
    train.heads.rank = 16;
    for (TrainOptions* o : {&train.mlp, &train.heads}) {
      o->epochs = 4;
      o->batch = 256;
      o->lr = 3e-3;
      o->val_fraction = 0.2;
    }
    auto trained = TrainAllPredictors(*dir_, model_->config, train);
    ASSERT_TRUE(trained.ok()) << trained.status();
    trained_ = new nlohmann::json(*trained);
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
  }

  static LoadedModel* model_;
  static std::vector<int32_t>* ids_;
  static std::string* dir_;
  static nlohmann::json* meta_;
  static nlohmann::json* trained_;
};

LoadedModel* DejavuCalibrationTest::model_ = nullptr;
std::vector<int32_t>* DejavuCalibrationTest::ids_ = nullptr;
std::string* DejavuCalibrationTest::dir_ = nullptr;
nlohmann::json* DejavuCalibrationTest::meta_ = nullptr;
nlohmann::json* DejavuCalibrationTest::trained_ = nullptr;

TEST_F(DejavuCalibrationTest, RecordsTheRealTokenCountAndFileSizes) {
  ASSERT_NE(meta_, nullptr);
  // 255 text tokens per window plus one BOS each.
  const int64_t windows = (static_cast<int64_t>(ids_->size()) + 254) / 255;
  const int64_t tokens = static_cast<int64_t>(ids_->size()) + windows;
  EXPECT_EQ((*meta_)["tokens"], tokens);
  EXPECT_EQ((*meta_)["windows"], windows);
  const ModelConfig& c = model_->config;
  const std::string calib = *dir_ + "/calibration/";
  EXPECT_EQ(fs::file_size(calib + "layer5.mlp_x.f16"),
            static_cast<uintmax_t>(tokens * c.hidden_size * 2));
  EXPECT_EQ(fs::file_size(calib + "layer0.heads_y.bits"),
            static_cast<uintmax_t>(tokens * BitmapRowBytes(c.num_heads)));
  EXPECT_EQ((*meta_)["mlp_label"], "activation > 0 (ReLU non-zeros)");
}

// The recorded MLP labels of one window equal the ReLU non-zeros the graph
// computes, and every head row has exactly the labelled fraction.
TEST_F(DejavuCalibrationTest, LabelsMatchTheModelsActivations) {
  ASSERT_NE(meta_, nullptr);
  auto data = OpenCalibration(*dir_, model_->config);
  ASSERT_TRUE(data.ok()) << data.status();
  auto mlp = ReadLayerSamples(*data, model_->config, 3, false);
  ASSERT_TRUE(mlp.ok()) << mlp.status();

  class Capture : public Method {
   public:
    std::string name() const override { return "capture"; }
    absl::Status Attach(const ModelConfig&, Backend&) override {
      return absl::OkStatus();
    }
    bool observes() const override { return true; }
    void ObserveNeurons(const LayerSite& site, const Tensor& act) override {
      if (site.layer == 3) layer3 = act.ToF32Vector();
    }
    std::vector<float> layer3;
  } capture;
  CpuBackend backend(1);
  Session session(model_->config, model_->weights, backend, capture, 256);
  std::vector<int32_t> window = {0};
  window.insert(window.end(), ids_->begin(), ids_->begin() + 255);
  ASSERT_TRUE(session.Forward(window, 255).ok());
  const int64_t units = model_->config.intermediate_size;
  int64_t positives = 0;
  for (int64_t r = 0; r < 256; ++r) {
    for (int64_t j = 0; j < units; ++j) {
      const bool bit = TestBit(mlp->y.data() + r * BitmapRowBytes(units), j);
      ASSERT_EQ(bit, capture.layer3[r * units + j] > 0.0f)
          << "row " << r << " unit " << j;
      positives += bit;
    }
  }
  EXPECT_GT(positives, 0);
  auto heads = ReadLayerSamples(*data, model_->config, 2, true);
  ASSERT_TRUE(heads.ok());
  for (int64_t r = 0; r < heads->rows; ++r) {
    int count = 0;
    for (int64_t h = 0; h < model_->config.num_heads; ++h) {
      count += TestBit(heads->y.data() + r, h);
    }
    ASSERT_EQ(count, 3) << "row " << r;  // half of 6 heads
  }
}

TEST_F(DejavuCalibrationTest, TrainedPredictorsBeatChanceAndLoad) {
  Train();
  ASSERT_NE(trained_, nullptr);
  ASSERT_EQ((*trained_)["layers"].size(), 6u);
  // The training device is recorded: settings and per-layer metrics.
  EXPECT_EQ((*trained_)["training"]["mlp"]["device"], "cpu");
  EXPECT_EQ((*trained_)["training"]["heads"]["device"], "cpu");
  EXPECT_EQ((*trained_)["layers"][0]["heads"]["device"], "cpu");
  for (const auto& layer : (*trained_)["layers"]) {
    // K random units have recall K / units and precision = label density;
    // the predictors must beat both by half again.
    const double density = layer["mlp"]["label_density"].get<double>();
    for (const auto& at : layer["mlp"]["at_keep"]) {
      if (at["keep"] != 0.25) continue;
      EXPECT_GT(at["recall"].get<double>(), 1.5 * 0.25) << layer.dump();
      EXPECT_GT(at["precision"].get<double>(), 1.5 * density) << layer.dump();
    }
  }
  auto set = LoadPredictors(*dir_, model_->config);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->mlp_rank, 48);

  auto args =
      MethodArgs::Parse({absl::StrCat("predictors=", *dir_), "mlp_keep=0.25",
                         "head_keep=0.5", "execution=masked"});
  ASSERT_TRUE(args.ok());
  auto method = CreateMethod("dejavu", *args);
  ASSERT_TRUE(method.ok()) << method.status();
  CpuBackend backend(1);
  ASSERT_TRUE((*method)->Attach(model_->config, backend).ok());
  Session session(model_->config, model_->weights, backend, **method, 64);
  std::vector<int32_t> prompt(ids_->begin(), ids_->begin() + 32);
  auto logits = session.Forward(prompt, 0);
  ASSERT_TRUE(logits.ok()) << logits.status();
  for (float v : logits->ToF32Vector()) ASSERT_TRUE(std::isfinite(v));
}

TEST_F(DejavuCalibrationTest, CalibrationOfAnotherModelIsRejected) {
  ModelConfig other = model_->config;
  other.num_layers = 5;
  auto data = OpenCalibration(*dir_, other);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find(
                "calibration.json: field 'model_fingerprint'"),
            std::string::npos)
      << data.status();
}

// A token count that disagrees with the files is an error naming the file,
// found before anything is allocated: counts too large to allocate, or to
// multiply by the row size, must not crash the reader.
TEST_F(DejavuCalibrationTest, ACorruptTokenCountIsAnError) {
  auto opened = OpenCalibration(*dir_, model_->config);
  ASSERT_TRUE(opened.ok()) << opened.status();
  for (const int64_t tokens : {opened->tokens + 1, int64_t{1} << 40,
                               std::numeric_limits<int64_t>::max() / 3}) {
    CalibrationData data = *opened;
    data.tokens = tokens;
    auto samples = ReadLayerSamples(data, model_->config, 1, false);
    ASSERT_FALSE(samples.ok()) << tokens;
    EXPECT_NE(samples.status().message().find(tokens < (int64_t{1} << 50)
                                                  ? "layer1.mlp_x.f16"
                                                  : "calibration.json"),
              std::string::npos)
        << samples.status();
  }
}

}  // namespace
}  // namespace dynsparse
