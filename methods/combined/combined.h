// The combined method: a token policy (e.g. lazyllm) and a head/neuron policy
// (e.g. dejavu) composed by configuration, generic over the registry:
//   --method combined --method-arg token=lazyllm --method-arg token.keep=0.7
//                     --method-arg head_neuron=dejavu --method-arg
//                     head_neuron.<param>=...
// Parameters prefixed `token.` / `head_neuron.` go to that side, unprefixed.
// Either side defaults to dense; with one side dense the composition makes
// exactly the other method's selections (tests/methods/combined_test.cc).
#ifndef DYNSPARSE_METHODS_COMBINED_COMBINED_H_
#define DYNSPARSE_METHODS_COMBINED_COMBINED_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/method.h"
#include "methods/method_args.h"

namespace dynsparse {

class CombinedMethod : public Method {
 public:
  static absl::StatusOr<std::unique_ptr<Method>> Create(const MethodArgs& args);
  // "token", "head_neuron" and the families "token.*", "head_neuron.*"
  // (each side checks its own keys).
  static const std::vector<std::string>& Parameters();
  // The parameters of one side ("token" or "head_neuron"), prefix removed.
  static MethodArgs SideArgs(const MethodArgs& args, const std::string& side);

  CombinedMethod(std::unique_ptr<Method> tokens,
                 std::unique_ptr<Method> head_neuron);

  std::string name() const override { return "combined"; }
  absl::Status Attach(const ModelConfig& config, Backend& backend) override;
  void BeginSequence() override;
  bool SelectsTokens() const override { return tokens_->SelectsTokens(); }
  bool AttendsToCachedTokens() const override {
    return tokens_->AttendsToCachedTokens();
  }
  bool MayProbeBefore(const LayerSite& site) const override {
    return tokens_->MayProbeBefore(site);
  }
  int64_t ProbeTopCount(const LayerSite& site, int64_t candidates,
                        int64_t prunable) const override {
    return tokens_->ProbeTopCount(site, candidates, prunable);
  }
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override {
    tokens_->SelectTokens(site, candidates, keep);
  }
  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection* heads) override {
    head_neuron_->SelectHeads(site, x, heads);
  }
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection* neurons) override {
    head_neuron_->SelectNeurons(site, x, neurons);
  }
  bool MaySparsifyNeurons(int64_t layer) const override {
    return head_neuron_->MaySparsifyNeurons(layer);
  }
  int32_t LazyKvWindow() const override { return head_neuron_->LazyKvWindow(); }
  SparseExecution execution() const override {
    return head_neuron_->execution();
  }
  // Token pruning keeps the layer loop (Session checks SelectsTokens first).
  bool KeepsEverything() const override {
    return head_neuron_->KeepsEverything();
  }
  // Calibration observes the head/neuron side's labels.
  bool observes() const override { return head_neuron_->observes(); }
  void ObserveHeads(const LayerSite& site, const Tensor& context) override {
    head_neuron_->ObserveHeads(site, context);
  }
  void ObserveNeurons(const LayerSite& site,
                      const Tensor& activation) override {
    head_neuron_->ObserveNeurons(site, activation);
  }

 private:
  std::unique_ptr<Method> tokens_;
  std::unique_ptr<Method> head_neuron_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_COMBINED_COMBINED_H_
