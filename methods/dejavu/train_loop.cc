#include "methods/dejavu/train_loop.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "methods/dejavu/labels.h"

namespace dynsparse {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// U(-1/sqrt(cols), 1/sqrt(cols)), row-major, drawn in element order.
std::vector<float> UniformWeights(int64_t rows, int64_t cols,
                                  std::mt19937_64* rng) {
  const float a = 1.0f / std::sqrt(static_cast<float>(cols));
  std::uniform_real_distribution<float> u(-a, a);
  std::vector<float> w(rows * cols);
  for (float& x : w) x = u(*rng);
  return w;
}

// Labelled units of each of the first `rows` rows (bits past `units` in a
// row's last byte do not count).
std::vector<int32_t> RowPositives(const LayerSamples& s, int64_t rows) {
  const int64_t bytes = BitmapRowBytes(s.units);
  const unsigned last_mask =
      s.units % 8 == 0 ? 0xFFu : (1u << (s.units % 8)) - 1u;
  std::vector<int32_t> positives(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = s.y.data() + r * bytes;
    int count = 0;
    for (int64_t j = 0; j + 1 < bytes; ++j) {
      count += std::popcount(static_cast<unsigned>(row[j]));
    }
    count += std::popcount(static_cast<unsigned>(row[bytes - 1]) & last_mask);
    positives[r] = count;
  }
  return positives;
}

}  // namespace

absl::StatusOr<TrainSplit> CheckTrainInputs(const LayerSamples& s,
                                            const TrainOptions& o) {
  if (o.rank <= 0 || o.batch <= 0 || o.epochs <= 0) {
    return absl::InvalidArgumentError("rank, batch and epochs must be > 0");
  }
  if (s.hidden <= 0 || s.units <= 0 || s.rows < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer samples: rows %d, hidden %d, units %d (hidden and units must "
        "be > 0)",
        s.rows, s.hidden, s.units));
  }
  if (static_cast<int64_t>(s.x.size()) != s.rows * s.hidden ||
      static_cast<int64_t>(s.y.size()) != s.rows * BitmapRowBytes(s.units)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer samples: %d input values and %d label bytes for %d rows of "
        "hidden %d and units %d (expected %d and %d)",
        s.x.size(), s.y.size(), s.rows, s.hidden, s.units, s.rows * s.hidden,
        s.rows * BitmapRowBytes(s.units)));
  }
  TrainSplit split;
  split.val = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(o.val_fraction * s.rows)));
  split.train = s.rows - split.val;
  if (split.train < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d calibration tokens leave none for training after %d validation "
        "tokens",
        s.rows, split.val));
  }
  return split;
}

float NegativeWeight(int64_t positives, int64_t elements) {
  return std::min(
      1.0f,
      static_cast<float>(positives) / static_cast<float>(elements) + 0.005f);
}

absl::StatusOr<TrainResult> RunTraining(const LayerSamples& s,
                                        const TrainOptions& o,
                                        PredictorMath& math,
                                        const TrainLog& log) {
  ASSIGN_OR_RETURN(const TrainSplit split, CheckTrainInputs(s, o));
  const int64_t train = split.train;
  std::mt19937_64 rng(o.seed);
  {
    const std::vector<float> a = UniformWeights(o.rank, s.hidden, &rng);
    const std::vector<float> b = UniformWeights(s.units, o.rank, &rng);
    RETURN_IF_ERROR(math.Start(a, b));
  }
  const std::vector<int32_t> positives = RowPositives(s, train);
  const int64_t eval_k = LabelCount(o.eval_keep, s.units);
  auto validate = [&](WhichWeights which) -> absl::StatusOr<RecallCurve> {
    RecallCurve curve;
    curve.hits.assign(s.units, 0);
    RETURN_IF_ERROR(math.AddToCurve(which, train, s.rows, &curve));
    return curve;
  };

  TrainResult result;
  {
    ASSIGN_OR_RETURN(const RecallCurve initial,
                     validate(WhichWeights::kCurrent));
    result.best_recall = initial.RecallAt(eval_k);
  }
  std::vector<int64_t> order(train);
  std::iota(order.begin(), order.end(), 0);
  int64_t since_best = 0, steps = 0;
  double step_seconds = 0.0, validation_seconds = 0.0;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    const Clock::time_point begin = Clock::now();
    std::shuffle(order.begin(), order.end(), rng);
    RETURN_IF_ERROR(math.BeginEpoch(order));
    for (int64_t start = 0; start < train; start += o.batch) {
      BatchStep step;
      step.start = start;
      step.n = std::min(o.batch, train - start);
      int64_t batch_positives = 0;
      for (int64_t i = start; i < start + step.n; ++i) {
        batch_positives += positives[order[i]];
      }
      step.neg_weight = NegativeWeight(batch_positives, step.n * s.units);
      step.inv_elements = 1.0f / static_cast<float>(step.n * s.units);
      step.adam = AdamWStep(++steps, o.lr, o.weight_decay);
      RETURN_IF_ERROR(math.Step(step));
    }
    RETURN_IF_ERROR(math.Synchronize());
    const Clock::time_point stepped = Clock::now();
    ASSIGN_OR_RETURN(const RecallCurve curve, validate(WhichWeights::kCurrent));
    const double recall = curve.RecallAt(eval_k);
    const Clock::time_point validated = Clock::now();
    step_seconds += Seconds(begin, stepped);
    validation_seconds += Seconds(stepped, validated);
    result.epochs_run = epoch;
    if (log) {
      log(absl::StrFormat(
          "epoch %d: validation recall@%d %.4f (%s: steps %.2f s, validation "
          "%.2f s)",
          epoch, eval_k, recall, math.device(), Seconds(begin, stepped),
          Seconds(stepped, validated)));
    }
    if (recall > result.best_recall) {
      result.best_recall = recall;
      result.best_epoch = epoch;
      RETURN_IF_ERROR(math.KeepBest());
      since_best = 0;
    } else if (++since_best >= o.patience) {
      break;
    }
    if (recall >= o.stop_recall) break;
  }
  std::vector<double> keeps = o.report_keeps;
  if (std::find(keeps.begin(), keeps.end(), o.eval_keep) == keeps.end()) {
    keeps.push_back(o.eval_keep);
  }
  ASSIGN_OR_RETURN(const RecallCurve best, validate(WhichWeights::kBest));
  result.metrics = RecallCurveMetrics(best, s.units, keeps);
  result.metrics["train_rows"] = train;
  result.metrics["epochs_run"] = result.epochs_run;
  result.metrics["best_epoch"] = result.best_epoch;
  result.metrics["eval_k"] = eval_k;
  result.metrics["device"] = math.device();
  result.metrics["step_seconds"] = step_seconds;
  result.metrics["validation_seconds"] = validation_seconds;
  ASSIGN_OR_RETURN(result.weights, math.BestWeights());
  return result;
}

}  // namespace dynsparse
