// "dejavu-timing": a bench-only method that does the device work of DejaVu's
// predictors without trained weights, so decode timing of sparse execution
// can be measured before (and independently of) the `dejavu` method:
// per layer, two Backend::Linear GEMVs through a random rank-D factorisation
// (d -> D -> units, weights uploaded at Attach) and Backend::TopK, returning
// device ids. The selections are meaningless; the bytes and launches are the
// real ones. Its arguments are the speed-relevant subset of `dejavu`'s:
//   mlp_keep=F head_keep=F dense_first_mlp=N dense_last_mlp=N
//   dense_first_heads=N dense_last_heads=N predictors=random:D
//   execution=masked|sparse seed=S sparse_prefill=0|1 lazy_kv_window=W
// Unlike `dejavu`, it runs each predictor in line, right before the block it
// selects for (no lookahead, no side stream), so it times slower: OPT-66B
// decode 16.39 against 14.76 ms a token (results/bench/h200_run94).
// Prefill is dense unless sparse_prefill=1 (DejaVu's latency path).
#ifndef DYNSPARSE_EXPERIMENTS_BENCH_LOWRANK_PREDICTOR_METHOD_H_
#define DYNSPARSE_EXPERIMENTS_BENCH_LOWRANK_PREDICTOR_METHOD_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/method.h"

namespace dynsparse {

class LowRankPredictorMethod : public Method {
 public:
  struct Options {
    double mlp_keep = 1.0;
    double head_keep = 1.0;
    int64_t dense_first_mlp = 0, dense_last_mlp = 0;
    int64_t dense_first_heads = 0, dense_last_heads = 0;
    int64_t rank = 1000;
    bool sparse = true;
    bool sparse_prefill = false;
    int32_t lazy_kv_window = kDefaultLazyKvWindow;
    uint64_t seed = 1;
  };
  // Parses key=value arguments (errors name the argument).
  static absl::StatusOr<std::unique_ptr<Method>> Create(
      const std::vector<std::string>& args);
  explicit LowRankPredictorMethod(const Options& options) : options_(options) {}

  std::string name() const override { return "dejavu-timing"; }
  absl::Status Attach(const ModelConfig& config, Backend& backend) override;
  SparseExecution execution() const override {
    return options_.sparse ? SparseExecution::kSparse
                           : SparseExecution::kMasked;
  }
  int32_t LazyKvWindow() const override { return options_.lazy_kv_window; }
  bool MaySparsifyNeurons(int64_t layer) const override {
    return layer >= static_cast<int64_t>(layers_.size()) ||
           layers_[layer].mlp.k > 0;
  }
  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection* heads) override;
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection* neurons) override;

  // Units kept per row in `layer` (0: dense).
  int64_t mlp_k(int64_t layer) const { return layers_[layer].mlp.k; }
  int64_t head_k(int64_t layer) const { return layers_[layer].heads.k; }

 private:
  struct Predictor {
    int64_t k = 0;
    Tensor p1, p2;  // [D, hidden], [units, D] on the backend's device
  };
  struct Layer {
    Predictor mlp, heads;
  };
  absl::StatusOr<Predictor> Make(int64_t k, int64_t units, int64_t hidden,
                                 uint64_t seed);
  void Select(const Predictor& p, const LayerSite& site, const Tensor& x,
              UnitSelection* sel);

  Options options_;
  Backend* backend_ = nullptr;
  std::vector<Layer> layers_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_BENCH_LOWRANK_PREDICTOR_METHOD_H_
