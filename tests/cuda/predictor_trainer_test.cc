// The CUDA predictor trainer (kernels/cuda/predictor_trainer.h) against the
// CPU trainer (methods/dejavu/trainer.h) on the synthetic teacher samples of
// tests/methods/dejavu_test_samples.h, same options and seed: both draw the
// same initial weights and see the same shuffled batches
// (methods/dejavu/train_loop.h), so they differ only by f32 summation order
// (cuBLAS's GEMM reductions, the f64 RMS sum, expf against Eigen's exp,
// fused multiply-adds).
// Skips without a GPU.
#include "kernels/cuda/predictor_trainer.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "methods/dejavu/train_device.h"
#include "methods/dejavu/trainer.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/methods/dejavu_test_samples.h"

namespace dynsparse::cuda {
namespace {

using ::testing::HasSubstr;
using testutil::RelativeError;

// ||w_gpu - w_cpu|| / ||w_cpu|| after training. Summation order changes
// each GEMM output by about u * sum|a_i b_i| / sqrt(k) (u = 2^-24, a random
// walk of roundings); AdamW then divides by sqrt(v), and the differences
// compound over the steps. CPU runs of the two comparisons below with that
// error injected into all five GEMMs of every step moved the weights by 8e-8
// (1x), 1.5e-7 (10x) and 1.1e-6 (100x) relative and left recall and best
// epoch unchanged, while a negative weight of 1 or a missed bias correction
// moved them by 8e-2 to 2e-1 (experiment not committed; numbers from the
// CPU trainer of this change). 1e-4 sits between the two.
constexpr double kWeightTolerance = 1e-4;
// Validation recall: a near-tie of two logits can swap their ranks; each
// swap across K moves recall by 1 / positives (~1 / 5000 here), so this
// allows ten swaps (the noisy CPU runs above had none).
constexpr double kRecallTolerance = 2e-3;

// Every epoch runs on both (no early stop to diverge on).
TrainOptions Options() { return dynsparse::testing::TeacherTrainOptions(); }

const LayerSamples& Samples() {
  static const LayerSamples* s =
      new LayerSamples(dynsparse::testing::TeacherSamples(2000, 48, 100, 1));
  return *s;
}

double RecallAtKeep(const nlohmann::json& metrics, double keep) {
  for (const auto& at : metrics["at_keep"]) {
    if (at["keep"].get<double>() == keep) return at["recall"].get<double>();
  }
  return -1.0;
}

// Weights and validation recall of the two trainers within the bounds above.
void ExpectCloseToCpu(const TrainResult& gpu, const TrainResult& cpu) {
  EXPECT_LT(
      RelativeError(gpu.weights.w1.ToF32Vector(), cpu.weights.w1.ToF32Vector()),
      kWeightTolerance);
  EXPECT_LT(
      RelativeError(gpu.weights.w2.ToF32Vector(), cpu.weights.w2.ToF32Vector()),
      kWeightTolerance);
  EXPECT_NEAR(gpu.best_recall, cpu.best_recall, kRecallTolerance);
  for (double keep : {0.5, 0.25, 0.1}) {
    EXPECT_NEAR(RecallAtKeep(gpu.metrics, keep),
                RecallAtKeep(cpu.metrics, keep), kRecallTolerance)
        << "keep " << keep;
  }
}

class PredictorTrainerTest : public testutil::CudaTest {};

TEST_F(PredictorTrainerTest, MatchesTheCpuTrainer) {
  const LayerSamples& s = Samples();
  const TrainOptions o = Options();
  absl::StatusOr<TrainResult> cpu = TrainPredictorCpu(s, o);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  CudaTrainSettings settings;
  settings.eval_rows = 64;  // Validation in two chunks of 128 rows.
  absl::StatusOr<TrainResult> gpu = TrainPredictorCuda(
      ctx(), s, o, settings,
      [](const std::string& line) { std::printf("cuda %s\n", line.c_str()); });
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  std::printf("cpu metrics %s\ncuda metrics %s\n", cpu->metrics.dump().c_str(),
              gpu->metrics.dump().c_str());

  EXPECT_EQ(gpu->metrics["device"], "cuda");
  EXPECT_EQ(gpu->metrics["samples"], "resident");
  EXPECT_EQ(gpu->epochs_run, cpu->epochs_run);
  // The recall rises by 0.05-0.1 per epoch (TeacherTrainOptions), far more
  // than a few swapped near-ties, so the last epoch is the best on both.
  EXPECT_EQ(cpu->best_epoch, o.epochs);
  EXPECT_EQ(gpu->best_epoch, cpu->best_epoch);
  // Random K = 25 of 100 units would recall 0.25; 6 epochs reach ~0.69.
  EXPECT_GT(cpu->best_recall, 0.6);

  ExpectCloseToCpu(*gpu, *cpu);
  // The GPU's validation ranks the GPU's weights as the CPU does (logits
  // from cuBLAS against Eigen: near-ties only).
  const int64_t train = cpu->metrics["train_rows"].get<int64_t>();
  const nlohmann::json again =
      EvaluatePredictor(gpu->weights, s, train, s.rows, {0.25});
  EXPECT_NEAR(again["at_keep"][0]["recall"].get<double>(), gpu->best_recall,
              kRecallTolerance);
  EXPECT_EQ(again["label_density"], gpu->metrics["label_density"]);
}

// Streamed samples (batches gathered on the host) run the same kernels on
// the same values as resident ones, so cuBLAS (deterministic for one
// shape, stream and handle) gives the same bits.
TEST_F(PredictorTrainerTest, StreamedSamplesTrainLikeResidentOnes) {
  const LayerSamples& s = Samples();
  TrainOptions o = Options();
  o.epochs = 2;
  CudaTrainSettings settings;
  settings.eval_rows = 64;
  settings.residency = SampleResidency::kResident;
  absl::StatusOr<TrainResult> resident =
      TrainPredictorCuda(ctx(), s, o, settings);
  settings.residency = SampleResidency::kStreamed;
  absl::StatusOr<TrainResult> streamed =
      TrainPredictorCuda(ctx(), s, o, settings);
  ASSERT_TRUE(resident.ok()) << resident.status();
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(resident->metrics["samples"], "resident");
  EXPECT_EQ(streamed->metrics["samples"], "streamed");
  EXPECT_EQ(streamed->weights.w1.ToF32Vector(),
            resident->weights.w1.ToF32Vector());
  EXPECT_EQ(streamed->weights.w2.ToF32Vector(),
            resident->weights.w2.ToF32Vector());
  EXPECT_EQ(streamed->best_recall, resident->best_recall);
}

// A batch that does not divide the training rows and a unit count that does
// not fill its last bitmap byte (1800 = 14 x 127 + 22 rows; 77 units).
TEST_F(PredictorTrainerTest, RaggedBatchAndBitmapMatchTheCpu) {
  const LayerSamples s = dynsparse::testing::TeacherSamples(2000, 40, 77, 3);
  TrainOptions o = Options();
  o.batch = 127;
  o.epochs = 2;
  absl::StatusOr<TrainResult> cpu = TrainPredictorCpu(s, o);
  absl::StatusOr<TrainResult> gpu = TrainPredictorCuda(ctx(), s, o);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ExpectCloseToCpu(*gpu, *cpu);
}

// TF32 GEMMs train too (to a looser agreement that this test does not bound).
TEST_F(PredictorTrainerTest, Tf32Trains) {
  CudaTrainSettings settings;
  settings.allow_tf32 = true;
  absl::StatusOr<TrainResult> gpu =
      TrainPredictorCuda(ctx(), Samples(), Options(), settings);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->metrics["tf32"], true);
  EXPECT_GT(gpu->best_recall, 0.6);
}

// The device choice of calibrate --train-device reaches this trainer.
TEST_F(PredictorTrainerTest, TrainPredictorOnCudaUsesTheGpu) {
  TrainOptions o = Options();
  o.epochs = 1;
  o.device = "cuda";
  absl::StatusOr<TrainResult> gpu = TrainPredictor(Samples(), o);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->metrics["device"], "cuda");
}

// One opened device trains predictor after predictor on the same context
// (TrainAllPredictors), each the same as on a fresh one.
TEST_F(PredictorTrainerTest, AnOpenedDeviceTrainsManyPredictors) {
  TrainOptions o = Options();
  o.epochs = 1;
  o.device = "cuda";
  absl::StatusOr<std::unique_ptr<TrainDevice>> device =
      TrainDevice::Open("cuda");
  ASSERT_TRUE(device.ok()) << device.status();
  absl::StatusOr<TrainResult> first = (*device)->Train(Samples(), o);
  absl::StatusOr<TrainResult> second = (*device)->Train(Samples(), o);
  absl::StatusOr<TrainResult> fresh = TrainPredictor(Samples(), o);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(second->metrics["device"], "cuda");
  // Same seed: the recall agrees up to reduction order.
  EXPECT_NEAR(second->best_recall, fresh->best_recall, 1e-3);
  EXPECT_NEAR(first->best_recall, fresh->best_recall, 1e-3);
}

TEST_F(PredictorTrainerTest, BadInputsAreErrors) {
  const LayerSamples& s = Samples();
  TrainOptions o = Options();
  o.rank = 0;
  EXPECT_EQ(TrainPredictorCuda(ctx(), s, o).status().code(),
            absl::StatusCode::kInvalidArgument);

  LayerSamples short_y = s;
  short_y.y.pop_back();
  absl::StatusOr<TrainResult> bad_y =
      TrainPredictorCuda(ctx(), short_y, Options());
  EXPECT_EQ(bad_y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_y.status().message(), HasSubstr("layer samples"));

  CudaTrainSettings no_rows;
  no_rows.eval_rows = 0;
  EXPECT_EQ(TrainPredictorCuda(ctx(), s, Options(), no_rows).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Weights of rank 2^28 cannot fit: refused before any allocation.
  TrainOptions huge = Options();
  huge.rank = int64_t{1} << 28;
  absl::StatusOr<TrainResult> too_big = TrainPredictorCuda(ctx(), s, huge);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(too_big.status().message(), HasSubstr("device memory needed"));
}

}  // namespace
}  // namespace dynsparse::cuda
