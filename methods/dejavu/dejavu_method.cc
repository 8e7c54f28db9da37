#include "methods/dejavu/dejavu_method.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace dynsparse {

absl::StatusOr<std::unique_ptr<Method>> DejavuMethod::Create(
    const MethodArgs& args) {
  ASSIGN_OR_RETURN(DejavuOptions options, ParseDejavuOptions(args));
  return std::make_unique<DejavuMethod>(std::move(options));
}

absl::Status DejavuMethod::Attach(const ModelConfig& config, Backend& backend) {
  backend_ = &backend;
  num_heads_ = config.num_heads;
  intermediate_ = config.intermediate_size;
  ASSIGN_OR_RETURN(mlp_kept_, KeptUnitsPerLayer(options_, false, config));
  ASSIGN_OR_RETURN(head_kept_, KeptUnitsPerLayer(options_, true, config));
  rng_.seed(static_cast<uint64_t>(options_.seed));
  if (options_.selector != Selector::kPredictor) return absl::OkStatus();
  return LoadPredictorWeights(config);
}

absl::Status DejavuMethod::LoadPredictorWeights(const ModelConfig& config) {
  const int64_t layers = config.num_layers;
  mlp_.assign(layers, {});
  heads_.assign(layers, {});
  auto upload = [&](const PredictorWeights& host,
                    PredictorWeights* device) -> absl::Status {
    ASSIGN_OR_RETURN(device->w1, backend_->Upload(host.w1));
    ASSIGN_OR_RETURN(device->w2, backend_->Upload(host.w2));
    return absl::OkStatus();
  };
  if (options_.random_rank > 0) {
    // One layer at a time, so host memory holds one layer's weights.
    const uint64_t seed = static_cast<uint64_t>(options_.seed);
    for (int64_t l = 0; l < layers; ++l) {
      if (mlp_kept_[l] > 0) {
        RETURN_IF_ERROR(upload(
            RandomPredictorLayer(config, false, options_.random_rank, l, seed),
            &mlp_[l]));
      }
      if (head_kept_[l] > 0) {
        RETURN_IF_ERROR(upload(
            RandomPredictorLayer(config, true, options_.random_rank, l, seed),
            &heads_[l]));
      }
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(PredictorSet set,
                   LoadPredictors(options_.predictors, config));
  const std::string json =
      absl::StrCat(options_.predictors, "/", kPredictorsJson);
  if (options_.mlp_rank > 0 && options_.mlp_rank != set.mlp_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(json, ": field 'mlp_rank': ", set.mlp_rank,
                     " but the method asks for mlp_rank=", options_.mlp_rank,
                     " (remove the folder to recalibrate, or drop mlp_rank)"));
  }
  if (options_.head_rank > 0 && options_.head_rank != set.head_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(json, ": field 'head_rank': ", set.head_rank,
                     " but the method asks for head_rank=", options_.head_rank,
                     " (remove the folder to recalibrate, or drop head_rank)"));
  }
  for (int64_t l = 0; l < layers; ++l) {
    if (mlp_kept_[l] > 0) RETURN_IF_ERROR(upload(set.mlp[l], &mlp_[l]));
    if (head_kept_[l] > 0) RETURN_IF_ERROR(upload(set.heads[l], &heads_[l]));
  }
  return absl::OkStatus();
}

void DejavuMethod::Predict(const PredictorWeights& w, const Tensor& x,
                           int64_t k, UnitSelection* selection) {
  const int64_t rows = x.dim(0);
  // The ids are needed one sub-block later (lookahead): side work, beside
  // the sub-block in between. Session joins it before that sub-block's
  // residual add overwrites x (Backend::BeginSideWork).
  backend_->BeginSideWork();
  Tensor hidden = backend_->Allocate(DType::kF32, {rows, w.w1.dim(0)});
  backend_->Linear(x, w.w1, Tensor(), &hidden);
  Tensor logits = backend_->Allocate(DType::kF32, {rows, w.w2.dim(0)});
  backend_->Linear(hidden, w.w2, Tensor(), &logits);
  selection->ids = backend_->Allocate(DType::kI32, {rows, k});
  backend_->TopK(logits, k, &selection->ids);
  selection->side_work = backend_->EndSideWork();
}

void DejavuMethod::Fill(const PredictorWeights* w, const Tensor& x, int64_t k,
                        int64_t units, UnitSelection* selection) {
  *selection = UnitSelection::All();
  if (k == 0) return;
  selection->all = false;
  selection->per_row = k;
  switch (options_.selector) {
    case Selector::kOracle:
      selection->oracle = true;
      return;
    case Selector::kPredictor:
      Predict(*w, x, k, selection);
      return;
    case Selector::kRandom: {
      // K distinct uniform ids per row, ascending (a partial Fisher-Yates).
      const int64_t rows = x.dim(0);
      std::vector<int32_t> pool(units);
      selection->indices.resize(rows * k);
      for (int64_t r = 0; r < rows; ++r) {
        std::iota(pool.begin(), pool.end(), 0);
        for (int64_t i = 0; i < k; ++i) {
          std::uniform_int_distribution<int64_t> pick(i, units - 1);
          std::swap(pool[i], pool[pick(rng_)]);
        }
        std::sort(pool.begin(), pool.begin() + k);
        std::copy(pool.begin(), pool.begin() + k,
                  selection->indices.begin() + r * k);
      }
      return;
    }
  }
}

void DejavuMethod::SelectHeads(const LayerSite& site, const Tensor& x,
                               UnitSelection* heads) {
  const int64_t l = site.layer;
  const bool predictor = options_.selector == Selector::kPredictor;
  // x is layer l's attention input: what the MLP predictor of layer l reads
  // (and the head predictor of layer 0, which has nothing earlier).
  if (l == 0) {
    Fill(predictor ? &heads_[0] : nullptr, x, head_kept_[0], num_heads_,
         &next_heads_);
  }
  *heads = std::move(next_heads_);
  next_heads_ = UnitSelection::All();
  // Token pruning (combined with lazyllm) dropped or revived rows since the
  // previous layer's MLP input predicted these heads (even keeping their
  // count): predict from this layer's own input, one sub-block later.
  if (site.rows_changed) {
    Fill(predictor ? &heads_[l] : nullptr, x, head_kept_[l], num_heads_, heads);
  }
  Fill(predictor ? &mlp_[l] : nullptr, x, mlp_kept_[l], intermediate_,
       &next_mlp_);
}

void DejavuMethod::SelectNeurons(const LayerSite& site, const Tensor& x,
                                 UnitSelection* neurons) {
  const int64_t l = site.layer;
  *neurons = std::move(next_mlp_);
  next_mlp_ = UnitSelection::All();
  // x is layer l's MLP input: what the head predictor of layer l+1 reads.
  const int64_t next = l + 1;
  if (next < static_cast<int64_t>(head_kept_.size())) {
    Fill(options_.selector == Selector::kPredictor ? &heads_[next] : nullptr, x,
         head_kept_[next], num_heads_, &next_heads_);
  }
}

}  // namespace dynsparse
