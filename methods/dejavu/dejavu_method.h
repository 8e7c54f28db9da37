// dejavu: contextual sparsity (Liu et al., ICML 2023; ../shared/METHODS.md
// section 1). Per layer it keeps K MLP neurons and K' attention heads per
// token, chosen by low-rank predictors (or the oracle top-K, or at random for
// ablations). Predictors run as backend ops (Linear, Linear, TopK) on weights
// uploaded at Attach, so the same code runs on CPU and CUDA and the kept ids
// stay on the device. Each predictor reads the residual stream one sub-block
// ahead (predictor_set.h): the MLP ids of layer l are computed when layer l's
// attention starts, the head ids of layer l+1 when layer l's MLP starts.
#ifndef DYNSPARSE_METHODS_DEJAVU_DEJAVU_METHOD_H_
#define DYNSPARSE_METHODS_DEJAVU_DEJAVU_METHOD_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/method.h"
#include "methods/dejavu/dejavu_options.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/method_args.h"

namespace dynsparse {

class DejavuMethod : public Method {
 public:
  explicit DejavuMethod(DejavuOptions options) : options_(std::move(options)) {}
  static absl::StatusOr<std::unique_ptr<Method>> Create(const MethodArgs& args);

  std::string name() const override { return "dejavu"; }
  absl::Status Attach(const ModelConfig& config, Backend& backend) override;
  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection* heads) override;
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection* neurons) override;
  SparseExecution execution() const override { return options_.execution; }
  int32_t LazyKvWindow() const override {
    return static_cast<int32_t>(options_.lazy_kv_window);
  }
  bool MaySparsifyNeurons(int64_t layer) const override {
    return layer >= static_cast<int64_t>(mlp_kept_.size()) ||
           mlp_kept_[layer] > 0;
  }

  const DejavuOptions& options() const { return options_; }
  // Units kept per row at each layer (0 = dense), after Attach.
  const std::vector<int64_t>& mlp_kept() const { return mlp_kept_; }
  const std::vector<int64_t>& head_kept() const { return head_kept_; }

 private:
  absl::Status LoadPredictorWeights(const ModelConfig& config);
  // ids [rows, k] of the k largest predictor logits for x's rows.
  // The K top-scoring units' ids into selection->ids.
  void Predict(const PredictorWeights& w, const Tensor& x, int64_t k,
               UnitSelection* selection);
  void Fill(const PredictorWeights* w, const Tensor& x, int64_t k,
            int64_t units, UnitSelection* selection);

  DejavuOptions options_;
  Backend* backend_ = nullptr;
  int64_t num_heads_ = 0;
  int64_t intermediate_ = 0;
  std::vector<int64_t> mlp_kept_, head_kept_;
  std::vector<PredictorWeights> mlp_, heads_;  // On the backend's device.
  std::mt19937_64 rng_;
  // Lookahead: selections made one sub-block before they are used.
  UnitSelection next_mlp_;    // For the current layer's MLP.
  UnitSelection next_heads_;  // For the next layer's attention.
};

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_DEJAVU_METHOD_H_
