// Predictor training on synthetic samples
// (tests/methods/dejavu_test_samples.h): the CPU trainer learns a low-rank
// teacher, is deterministic for a seed and reports what it validated; bad
// options, samples and devices are errors that say what is wrong (device "cuda"
// without a GPU or without CUDA in the build names --train-device). The CUDA
// trainer against this one: tests/cuda/predictor_trainer_test.cc.
#include <memory>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "methods/dejavu/recall_curve.h"
#include "methods/dejavu/train_device.h"
#include "methods/dejavu/train_predictors.h"
#include "methods/dejavu/trainer.h"
#include "tests/methods/dejavu_test_samples.h"

namespace dynsparse {
namespace {

using ::testing::HasSubstr;

TrainOptions SmallOptions() { return testing::TeacherTrainOptions(); }

TEST(DejavuTrainerTest, CpuTrainerLearnsATeacherAndReportsIt) {
  const LayerSamples s = testing::TeacherSamples(2000, 48, 100, 1);
  const TrainOptions o = SmallOptions();
  auto result = TrainPredictorCpu(s, o);
  ASSERT_TRUE(result.ok()) << result.status();
  const nlohmann::json& m = result->metrics;
  EXPECT_EQ(m["device"], "cpu");
  EXPECT_EQ(m["train_rows"], 1800);
  EXPECT_EQ(m["rows"], 200);
  EXPECT_GE(result->best_epoch, 1);
  // Random K = 25 of 100 units would recall 0.25.
  EXPECT_GT(result->best_recall, 0.6);
  EXPECT_EQ(result->epochs_run, 6);
  EXPECT_EQ(result->weights.w1.shape(), (Shape{8, 48}));
  EXPECT_EQ(result->weights.w2.shape(), (Shape{100, 8}));
  // The metrics are those of the returned weights.
  const nlohmann::json again =
      EvaluatePredictor(result->weights, s, 1800, 2000, {0.25});
  EXPECT_EQ(again["at_keep"][0]["recall"].get<double>(), result->best_recall);
}

TEST(DejavuTrainerTest, CpuTrainerIsDeterministicForASeed) {
  const LayerSamples s = testing::TeacherSamples(600, 32, 40, 2);
  TrainOptions o = SmallOptions();
  o.epochs = 2;
  auto a = TrainPredictorCpu(s, o);
  auto b = TrainPredictorCpu(s, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->weights.w1.ToF32Vector(), b->weights.w1.ToF32Vector());
  EXPECT_EQ(a->weights.w2.ToF32Vector(), b->weights.w2.ToF32Vector());
}

TEST(DejavuTrainerTest, BadOptionsAndSamplesAreErrors) {
  const LayerSamples s = testing::TeacherSamples(50, 16, 12, 3);
  TrainOptions o = SmallOptions();
  o.rank = 0;
  auto bad_rank = TrainPredictorCpu(s, o);
  EXPECT_EQ(bad_rank.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_rank.status().message(), HasSubstr("rank"));

  LayerSamples short_x = s;
  short_x.x.pop_back();
  auto bad_x = TrainPredictorCpu(short_x, SmallOptions());
  EXPECT_EQ(bad_x.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_x.status().message(), HasSubstr("layer samples"));

  LayerSamples one_row = testing::TeacherSamples(1, 16, 12, 3);
  auto no_train = TrainPredictorCpu(one_row, SmallOptions());
  EXPECT_EQ(no_train.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_train.status().message(), HasSubstr("none for training"));
}

TEST(DejavuTrainerTest, UnknownTrainDeviceNamesTheFlag) {
  const LayerSamples s = testing::TeacherSamples(50, 16, 12, 4);
  TrainOptions o = SmallOptions();
  o.device = "tpu";
  auto result = TrainPredictor(s, o);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("--train-device 'tpu' (valid: cpu, cuda)"));
}

TEST(DejavuTrainerTest, AnOpenedDeviceTrainsOnlyOptionsNamingIt) {
  const LayerSamples s = testing::TeacherSamples(50, 16, 12, 6);
  absl::StatusOr<std::unique_ptr<TrainDevice>> cpu = TrainDevice::Open("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  // Two predictors on one opened device, as TrainAllPredictors does.
  TrainOptions o = SmallOptions();
  ASSERT_TRUE((*cpu)->Train(s, o).ok());
  auto again = (*cpu)->Train(s, o);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->metrics["device"], "cpu");
  o.device = "cuda";
  auto other = (*cpu)->Train(s, o);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.status().message(), HasSubstr("opened on cpu"));
}

TEST(DejavuTrainerTest, CudaWithoutAGpuIsAClearError) {
  if (CheckTrainDevice("cuda").ok()) {
    GTEST_SKIP() << "a GPU is usable here: tests/cuda/predictor_trainer_test";
  }
  const LayerSamples s = testing::TeacherSamples(50, 16, 12, 5);
  TrainOptions o = SmallOptions();
  o.device = "cuda";
  auto result = TrainPredictor(s, o);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("--train-device cuda: "));
  // Either no CUDA in this build or no device: the message says which.
  EXPECT_THAT(result.status().message(),
              CudaTrainingBuiltIn() ? HasSubstr("no CUDA device")
                                    : HasSubstr("this build has no CUDA"));

  // Training every layer checks the device before opening the calibration.
  TrainAllOptions all;
  all.mlp.device = "cuda";
  auto all_result =
      TrainAllPredictors("/nonexistent/dejavu", ModelConfig(), all);
  EXPECT_EQ(all_result.status().code(), absl::StatusCode::kFailedPrecondition)
      << all_result.status();
  EXPECT_THAT(all_result.status().message(), HasSubstr("--train-device"));
}

// Rows ranked in parallel (a call of >= 2^20 logits) count as rows ranked
// one call at a time.
TEST(DejavuTrainerTest, ParallelRecallCurveEqualsRowByRow) {
  constexpr int64_t kRows = 600, kUnits = 2000;
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(kRows * kUnits);
  for (float& z : logits) z = normal(rng);
  // A few exact ties (ties rank the lower id first).
  for (int64_t r = 0; r < kRows; ++r)
    logits[r * kUnits + 7] = logits[r * kUnits + 3];
  const int64_t bytes = BitmapRowBytes(kUnits);
  std::vector<uint8_t> labels(kRows * bytes);
  for (uint8_t& b : labels) b = static_cast<uint8_t>(rng());
  RecallCurve whole, by_row;
  AddToRecallCurve(logits.data(), labels.data(), kRows, kUnits, &whole);
  for (int64_t r = 0; r < kRows; ++r) {
    AddToRecallCurve(logits.data() + r * kUnits, labels.data() + r * bytes, 1,
                     kUnits, &by_row);
  }
  EXPECT_EQ(whole.hits, by_row.hits);
  EXPECT_EQ(whole.positives, by_row.positives);
  EXPECT_EQ(whole.rows, kRows);
  EXPECT_EQ(by_row.rows, kRows);
}

}  // namespace
}  // namespace dynsparse
