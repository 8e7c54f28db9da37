#include "methods/dejavu/profile.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/graph/session.h"
#include "core/status_macros.h"
#include "methods/dejavu/labels.h"
#include "methods/dejavu/recall_curve.h"

namespace dynsparse {
namespace {

// Per layer and part: recall curve, exact zeros, mass-coverage counts.
struct PartStats {
  RecallCurve curve;
  int64_t zeros = 0;
  int64_t values = 0;
  double units_95 = 0.0, units_99 = 0.0;  // Sums over rows.
  Tensor pending_logits;                  // From the lookahead input.
};

// Smallest number of entries of `v` (magnitudes) holding `share` of the sum.
int64_t UnitsForMass(std::vector<float>* v, double share) {
  std::sort(v->begin(), v->end(), std::greater<float>());
  double total = 0.0;
  for (float x : *v) total += x;
  double sum = 0.0;
  for (size_t i = 0; i < v->size(); ++i) {
    sum += (*v)[i];
    if (sum >= share * total) return static_cast<int64_t>(i) + 1;
  }
  return static_cast<int64_t>(v->size());
}

class Profiler : public Method {
 public:
  Profiler(const ModelConfig& config, const PredictorSet& predictors,
           const ProfileOptions& options)
      : config_(config),
        predictors_(predictors),
        positive_(UsesPositiveMlpLabel(config, options.labels.mlp_label)),
        mlp_k_(LabelCount(options.labels.mlp_label_fraction,
                          config.intermediate_size)),
        head_k_(
            LabelCount(options.labels.head_label_fraction, config.num_heads)),
        mlp_(config.num_layers),
        heads_(config.num_layers) {}

  std::string name() const override { return "dejavu-profile"; }
  absl::Status Attach(const ModelConfig&, Backend& backend) override {
    backend_ = &backend;
    return absl::OkStatus();
  }
  bool observes() const override { return true; }
  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection*) override {
    if (site.layer == 0)
      heads_[0].pending_logits = Logits(predictors_.heads[0], x);
    mlp_[site.layer].pending_logits = Logits(predictors_.mlp[site.layer], x);
  }
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection*) override {
    const int64_t next = site.layer + 1;
    if (next < config_.num_layers) {
      heads_[next].pending_logits = Logits(predictors_.heads[next], x);
    }
  }
  void ObserveHeads(const LayerSite& site, const Tensor& context) override {
    const int64_t rows = context.dim(0), units = config_.num_heads;
    const std::vector<float> norms =
        HeadNorms(context.data<float>(), rows, units, config_.head_dim);
    Accumulate(&heads_[site.layer], norms, rows, units, /*positive=*/false,
               head_k_);
  }
  void ObserveNeurons(const LayerSite& site, const Tensor& act) override {
    const int64_t rows = act.dim(0), units = config_.intermediate_size;
    std::vector<float> values = act.ToF32Vector();
    PartStats& s = mlp_[site.layer];
    for (float v : values) s.zeros += v == 0.0f;
    if (!positive_) {
      for (float& v : values) v = std::fabs(v);
    }
    Accumulate(&s, values, rows, units, positive_, mlp_k_);
  }

  nlohmann::json Report(const ProfileOptions& options) const {
    nlohmann::json layers = nlohmann::json::array();
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      layers.push_back({{"layer", l},
                        {"mlp", PartJson(mlp_[l], config_.intermediate_size,
                                         options.mlp_keeps)},
                        {"heads", PartJson(heads_[l], config_.num_heads,
                                           options.head_keeps)}});
    }
    return layers;
  }

 private:
  Tensor Logits(const PredictorWeights& w, const Tensor& x) {
    const int64_t rows = x.dim(0);
    Tensor h = backend_->Allocate(DType::kF32, {rows, w.w1.dim(0)});
    backend_->Linear(x, w.w1, Tensor(), &h);
    Tensor z = backend_->Allocate(DType::kF32, {rows, w.w2.dim(0)});
    backend_->Linear(h, w.w2, Tensor(), &z);
    return backend_->ToHost(z);
  }

  // `scores`: activations (positive rule) or magnitudes (top-k rule).
  void Accumulate(PartStats* s, const std::vector<float>& scores, int64_t rows,
                  int64_t units, bool positive, int64_t k) {
    std::vector<uint8_t> bits(rows * BitmapRowBytes(units));
    std::vector<float> mass(units);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = scores.data() + r * units;
      uint8_t* out = bits.data() + r * BitmapRowBytes(units);
      if (positive) {
        PositiveBits(row, units, out);
      } else {
        TopKBits(row, units, k, &order_, out);
      }
      for (int64_t j = 0; j < units; ++j) mass[j] = std::fabs(row[j]);
      s->units_95 += UnitsForMass(&mass, 0.95);
      for (int64_t j = 0; j < units; ++j) mass[j] = std::fabs(row[j]);
      s->units_99 += UnitsForMass(&mass, 0.99);
    }
    s->values += rows * units;
    AddToRecallCurve(s->pending_logits.data<float>(), bits.data(), rows, units,
                     &s->curve);
  }

  static nlohmann::json PartJson(const PartStats& s, int64_t units,
                                 const std::vector<double>& keeps) {
    const double rows = std::max<int64_t>(1, s.curve.rows);
    // Recall, precision and the K for 95/99% recall as training reports
    // them; "tokens" here for the curve's rows.
    nlohmann::json out = RecallCurveMetrics(s.curve, units, keeps);
    out.erase("rows");
    out["units"] = units;
    out["tokens"] = s.curve.rows;
    out["zero_fraction"] = s.values > 0 ? double(s.zeros) / s.values : 0.0;
    out["units_for_95pct_mass"] = s.units_95 / rows;
    out["units_for_99pct_mass"] = s.units_99 / rows;
    return out;
  }

  const ModelConfig& config_;
  const PredictorSet& predictors_;
  const bool positive_;
  const int64_t mlp_k_, head_k_;
  Backend* backend_ = nullptr;
  std::vector<PartStats> mlp_, heads_;
  std::vector<int32_t> order_;
};

}  // namespace

absl::StatusOr<nlohmann::json> ProfilePredictors(
    const ModelConfig& config, const ModelWeights& weights, Backend& backend,
    const PredictorSet& predictors, const std::vector<int32_t>& ids,
    const ProfileOptions& options,
    const std::function<void(int64_t, int64_t)>& progress) {
  if (backend.device() != Device::kCpu) {
    return absl::UnimplementedError("profile runs on the CPU backend");
  }
  Profiler profiler(config, predictors, options);
  RETURN_IF_ERROR(profiler.Attach(config, backend));
  RETURN_IF_ERROR(RunWindows(config, weights, backend, profiler, ids,
                             options.context, options.bos_id, progress)
                      .status());
  return nlohmann::json{{"layers", profiler.Report(options)}};
}

}  // namespace dynsparse
