#include "methods/dejavu/trainer.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_format.h"
#include "core/dtype.h"
#include "methods/dejavu/labels.h"

namespace dynsparse {
namespace {

using Mat =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows `rows` of the samples as f32, each scaled to unit RMS.
void GatherInputs(const LayerSamples& s, const int64_t* rows, int64_t n,
                  Mat* x) {
  x->resize(n, s.hidden);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t* src = s.x.data() + rows[i] * s.hidden;
    float* dst = x->data() + i * s.hidden;
    double sum = 0.0;
    for (int64_t j = 0; j < s.hidden; ++j) {
      dst[j] = F16ToF32(src[j]);
      sum += double(dst[j]) * dst[j];
    }
    const float scale =
        static_cast<float>(1.0 / std::sqrt(sum / s.hidden + 1e-12));
    for (int64_t j = 0; j < s.hidden; ++j) dst[j] *= scale;
  }
}

void GatherLabels(const LayerSamples& s, const int64_t* rows, int64_t n,
                  Mat* y) {
  y->resize(n, s.units);
  const int64_t bytes = BitmapRowBytes(s.units);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* bits = s.y.data() + rows[i] * bytes;
    for (int64_t j = 0; j < s.units; ++j) {
      (*y)(i, j) = TestBit(bits, j) ? 1.0f : 0.0f;
    }
  }
}

struct AdamW {
  Mat m, v;
  int64_t t = 0;
  void Step(const Mat& g, double lr, double wd, Mat* p) {
    constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;
    if (m.size() == 0) {
      m = Mat::Zero(p->rows(), p->cols());
      v = Mat::Zero(p->rows(), p->cols());
    }
    ++t;
    m = kB1 * m + (1 - kB1) * g;
    v = kB2 * v + (1 - kB2) * g.cwiseProduct(g);
    const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(kB1, t)));
    const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(kB2, t)));
    *p *= static_cast<float>(1.0 - lr * wd);  // Decoupled weight decay.
    p->array() -= static_cast<float>(lr) * (m.array() * c1) /
                  ((v.array() * c2).sqrt() + static_cast<float>(kEps));
  }
};

Mat Uniform(int64_t rows, int64_t cols, std::mt19937_64* rng) {
  const float a = 1.0f / std::sqrt(static_cast<float>(cols));
  std::uniform_real_distribution<float> u(-a, a);
  Mat m(rows, cols);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = u(*rng);
  return m;
}

Tensor ToTensor(const Mat& m) {
  Tensor t = Tensor::Zeros(DType::kF32, {m.rows(), m.cols()});
  std::copy(m.data(), m.data() + m.size(), t.data<float>());
  return t;
}

Mat FromTensor(const Tensor& t) {
  const Tensor f = t.ConvertTo(DType::kF32);
  Mat m(f.dim(0), f.dim(1));
  std::copy(f.data<float>(), f.data<float>() + f.numel(), m.data());
  return m;
}

RecallCurve Curve(const Mat& a, const Mat& b, const LayerSamples& s,
                  int64_t begin, int64_t end) {
  RecallCurve curve;
  curve.hits.assign(s.units, 0);
  constexpr int64_t kChunk = 2048;
  std::vector<int64_t> rows;
  Mat x, z;
  for (int64_t r = begin; r < end; r += kChunk) {
    const int64_t n = std::min(kChunk, end - r);
    rows.resize(n);
    std::iota(rows.begin(), rows.end(), r);
    GatherInputs(s, rows.data(), n, &x);
    z.noalias() = (x * a.transpose()) * b.transpose();
    AddToRecallCurve(z.data(), s.y.data() + r * BitmapRowBytes(s.units), n,
                     s.units, &curve);
  }
  return curve;
}

nlohmann::json CurveMetrics(const RecallCurve& curve, int64_t units,
                            const std::vector<double>& keeps) {
  nlohmann::json out = {
      {"rows", curve.rows},
      {"label_density",
       curve.rows > 0 ? double(curve.positives) / (curve.rows * units) : 0.0},
      {"k_for_recall_0.95", curve.KForRecall(0.95)},
      {"k_for_recall_0.99", curve.KForRecall(0.99)},
  };
  nlohmann::json at = nlohmann::json::array();
  for (double keep : keeps) {
    const int64_t k = LabelCount(keep, units);
    at.push_back({{"keep", keep},
                  {"k", k},
                  {"recall", curve.RecallAt(k)},
                  {"precision", curve.PrecisionAt(k)}});
  }
  out["at_keep"] = at;
  return out;
}

}  // namespace

double RecallCurve::RecallAt(int64_t k) const {
  if (positives == 0) return 1.0;
  int64_t sum = 0;
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(hits.size()); ++i) {
    sum += hits[i];
  }
  return double(sum) / positives;
}

double RecallCurve::PrecisionAt(int64_t k) const {
  if (rows == 0 || k == 0) return 0.0;
  int64_t sum = 0;
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(hits.size()); ++i) {
    sum += hits[i];
  }
  return double(sum) / (double(rows) * k);
}

int64_t RecallCurve::KForRecall(double recall) const {
  int64_t sum = 0;
  for (size_t i = 0; i < hits.size(); ++i) {
    sum += hits[i];
    if (double(sum) >= recall * positives) return static_cast<int64_t>(i) + 1;
  }
  return static_cast<int64_t>(hits.size());
}

void AddToRecallCurve(const float* logits, const uint8_t* labels, int64_t rows,
                      int64_t units, RecallCurve* curve) {
  if (curve->hits.size() < static_cast<size_t>(units)) {
    curve->hits.resize(units, 0);
  }
  std::vector<int32_t> order(units);
  const int64_t bytes = BitmapRowBytes(units);
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * units;
    const uint8_t* y = labels + r * bytes;
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [z](int32_t a, int32_t b) {
      return z[a] > z[b] || (z[a] == z[b] && a < b);
    });
    for (int64_t k = 0; k < units; ++k) {
      if (TestBit(y, order[k])) {
        ++curve->hits[k];
        ++curve->positives;
      }
    }
    ++curve->rows;
  }
}

nlohmann::json EvaluatePredictor(const PredictorWeights& weights,
                                 const LayerSamples& samples, int64_t begin,
                                 int64_t end,
                                 const std::vector<double>& keeps) {
  const Mat a = FromTensor(weights.w1), b = FromTensor(weights.w2);
  return CurveMetrics(Curve(a, b, samples, begin, end), samples.units, keeps);
}

absl::StatusOr<TrainResult> TrainPredictor(
    const LayerSamples& s, const TrainOptions& o,
    const std::function<void(const std::string&)>& log) {
  if (o.rank <= 0 || o.batch <= 0 || o.epochs <= 0) {
    return absl::InvalidArgumentError("rank, batch and epochs must be > 0");
  }
  const int64_t val = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(o.val_fraction * s.rows)));
  const int64_t train = s.rows - val;
  if (train < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d calibration tokens leave none for training after %d validation "
        "tokens",
        s.rows, val));
  }
  std::mt19937_64 rng(o.seed);
  Mat a = Uniform(o.rank, s.hidden, &rng);
  Mat b = Uniform(s.units, o.rank, &rng);
  AdamW adam_a, adam_b;
  const int64_t eval_k = LabelCount(o.eval_keep, s.units);

  TrainResult result;
  Mat best_a = a, best_b = b;
  result.best_recall = Curve(a, b, s, train, s.rows).RecallAt(eval_k);
  std::vector<int64_t> order(train);
  std::iota(order.begin(), order.end(), 0);
  Mat x, y, h, z, g, gh;
  int64_t since_best = 0;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t start = 0; start < train; start += o.batch) {
      const int64_t n = std::min(o.batch, train - start);
      GatherInputs(s, order.data() + start, n, &x);
      GatherLabels(s, order.data() + start, n, &y);
      h.noalias() = x * a.transpose();
      z.noalias() = h * b.transpose();
      const float neg_weight =
          std::min(1.0f, static_cast<float>(y.mean()) + 0.005f);
      // d(weighted mean BCE)/dz = w * (sigmoid(z) - y) / elements.
      const float inv = 1.0f / static_cast<float>(n * s.units);
      g = (((-z.array()).exp() + 1.0f).inverse() - y.array()) *
          (y.array() + neg_weight * (1.0f - y.array())) * inv;
      gh.noalias() = g * b;
      const Mat grad_b = g.transpose() * h;
      const Mat grad_a = gh.transpose() * x;
      adam_b.Step(grad_b, o.lr, o.weight_decay, &b);
      adam_a.Step(grad_a, o.lr, o.weight_decay, &a);
    }
    const double recall = Curve(a, b, s, train, s.rows).RecallAt(eval_k);
    result.epochs_run = epoch;
    if (log) {
      log(absl::StrFormat("epoch %d: validation recall@%d %.4f", epoch, eval_k,
                          recall));
    }
    if (recall > result.best_recall) {
      result.best_recall = recall;
      result.best_epoch = epoch;
      best_a = a;
      best_b = b;
      since_best = 0;
    } else if (++since_best >= o.patience) {
      break;
    }
    if (recall >= o.stop_recall) break;
  }
  result.weights = {ToTensor(best_a), ToTensor(best_b)};
  std::vector<double> keeps = o.report_keeps;
  if (std::find(keeps.begin(), keeps.end(), o.eval_keep) == keeps.end()) {
    keeps.push_back(o.eval_keep);
  }
  result.metrics =
      CurveMetrics(Curve(best_a, best_b, s, train, s.rows), s.units, keeps);
  result.metrics["train_rows"] = train;
  result.metrics["epochs_run"] = result.epochs_run;
  result.metrics["best_epoch"] = result.best_epoch;
  result.metrics["eval_k"] = eval_k;
  return result;
}

}  // namespace dynsparse
