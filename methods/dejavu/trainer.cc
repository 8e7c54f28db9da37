#include "methods/dejavu/trainer.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/dtype.h"
#include "methods/dejavu/labels.h"
#include "methods/dejavu/train_loop.h"

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

// AdamW in adamw.h's expressions.
void AdamWUpdate(const Mat& g, const AdamWScalars& s, Mat* m, Mat* v, Mat* p) {
  *m = s.b1 * *m + s.one_minus_b1 * g;
  *v = s.b2 * *v + s.one_minus_b2 * g.cwiseProduct(g);
  *p *= s.decay;  // Decoupled weight decay.
  p->array() -=
      s.lr * (m->array() * s.c1) / ((v->array() * s.c2).sqrt() + s.eps);
}

Mat FromVector(const std::vector<float>& v, int64_t rows, int64_t cols) {
  Mat m(rows, cols);
  std::copy(v.begin(), v.end(), m.data());
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

// Adds the ranking of rows [begin, end) by the logits (x a^T) b^T.
void AddRows(const Mat& a, const Mat& b, const LayerSamples& s, int64_t begin,
             int64_t end, RecallCurve* curve) {
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
                     s.units, curve);
  }
}

class EigenMath : public PredictorMath {
 public:
  explicit EigenMath(const LayerSamples& s) : s_(s) {}

  std::string device() const override { return "cpu"; }

  absl::Status Start(const std::vector<float>& a,
                     const std::vector<float>& b) override {
    const int64_t rank = static_cast<int64_t>(a.size()) / s_.hidden;
    a_ = FromVector(a, rank, s_.hidden);
    b_ = FromVector(b, s_.units, rank);
    best_a_ = a_;
    best_b_ = b_;
    ma_ = va_ = Mat::Zero(a_.rows(), a_.cols());
    mb_ = vb_ = Mat::Zero(b_.rows(), b_.cols());
    return absl::OkStatus();
  }

  absl::Status BeginEpoch(const std::vector<int64_t>& order) override {
    order_ = &order;
    return absl::OkStatus();
  }

  absl::Status Step(const BatchStep& step) override {
    const int64_t* rows = order_->data() + step.start;
    GatherInputs(s_, rows, step.n, &x_);
    GatherLabels(s_, rows, step.n, &y_);
    h_.noalias() = x_ * a_.transpose();
    z_.noalias() = h_ * b_.transpose();
    // d(weighted mean BCE)/dz = w * (sigmoid(z) - y) / elements.
    g_ = (((-z_.array()).exp() + 1.0f).inverse() - y_.array()) *
         (y_.array() + step.neg_weight * (1.0f - y_.array())) *
         step.inv_elements;
    gh_.noalias() = g_ * b_;
    grad_b_.noalias() = g_.transpose() * h_;
    grad_a_.noalias() = gh_.transpose() * x_;
    AdamWUpdate(grad_b_, step.adam, &mb_, &vb_, &b_);
    AdamWUpdate(grad_a_, step.adam, &ma_, &va_, &a_);
    return absl::OkStatus();
  }

  absl::Status AddToCurve(WhichWeights which, int64_t begin, int64_t end,
                          RecallCurve* curve) override {
    const bool best = which == WhichWeights::kBest;
    AddRows(best ? best_a_ : a_, best ? best_b_ : b_, s_, begin, end, curve);
    return absl::OkStatus();
  }

  absl::Status KeepBest() override {
    best_a_ = a_;
    best_b_ = b_;
    return absl::OkStatus();
  }

  absl::StatusOr<PredictorWeights> BestWeights() override {
    return PredictorWeights{ToTensor(best_a_), ToTensor(best_b_)};
  }

 private:
  const LayerSamples& s_;
  const std::vector<int64_t>* order_ = nullptr;
  Mat a_, b_, best_a_, best_b_, ma_, va_, mb_, vb_;
  Mat x_, y_, h_, z_, g_, gh_, grad_a_, grad_b_;  // Step scratch.
};

}  // namespace

nlohmann::json EvaluatePredictor(const PredictorWeights& weights,
                                 const LayerSamples& samples, int64_t begin,
                                 int64_t end,
                                 const std::vector<double>& keeps) {
  const Mat a = FromTensor(weights.w1), b = FromTensor(weights.w2);
  RecallCurve curve;
  curve.hits.assign(samples.units, 0);
  AddRows(a, b, samples, begin, end, &curve);
  return RecallCurveMetrics(curve, samples.units, keeps);
}

absl::StatusOr<TrainResult> TrainPredictorCpu(const LayerSamples& samples,
                                              const TrainOptions& options,
                                              const TrainLog& log) {
  EigenMath math(samples);
  return RunTraining(samples, options, math, log);
}

}  // namespace dynsparse
