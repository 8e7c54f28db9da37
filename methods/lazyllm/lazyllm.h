// The lazyllm method (LazyLLM, arXiv 2407.14057; shared/METHODS.md §2): at
// the schedule's layers, keep the given fraction of the tokens currently
// live, those the last token attends to most (probabilities of the previous
// layer averaged over all query heads). Session restarts every step from the
// full context and revives tokens from the Aux Cache; this class is only the
// policy.
//
// Parameters: schedule=10:0.7,19:0.7 | stages=4 keep=0.7 (default: 4 stages,
// keep 0.7); revive=false: the static pruning baseline (tokens pruned by the
// prompt's step stay pruned; later steps prune nothing else);
// selector=random (seed=N): the random-drop baseline at the same keep; each
// sequence draws its own subset (generator seeded with N + sequences begun);
// keys=cached: attention also over tokens cached at the layer by earlier
// steps (an ablation; default keys=selected, as Lazy-Llama implements it).
#ifndef DYNSPARSE_METHODS_LAZYLLM_LAZYLLM_H_
#define DYNSPARSE_METHODS_LAZYLLM_LAZYLLM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/method.h"
#include "methods/lazyllm/schedule.h"
#include "methods/method_args.h"

namespace dynsparse {

struct LazyLlmOptions {
  std::optional<PruneSchedule> schedule;  // Explicit; else from stages.
  int64_t stages = 4;
  double keep = 0.7;
  bool revive = true;
  bool random = false;       // selector=random
  bool keys_cached = false;  // keys=cached (Method::AttendsToCachedTokens)
  uint64_t seed = 0;
};

class LazyLlmMethod : public Method {
 public:
  static absl::StatusOr<std::unique_ptr<Method>> Create(const MethodArgs& args);
  static absl::StatusOr<LazyLlmOptions> ParseOptions(const MethodArgs& args);
  static const std::vector<std::string>& Parameters();

  explicit LazyLlmMethod(LazyLlmOptions options);

  std::string name() const override { return "lazyllm"; }
  absl::Status Attach(const ModelConfig& config, Backend& backend) override;
  void BeginSequence() override;
  bool SelectsTokens() const override { return true; }
  bool AttendsToCachedTokens() const override { return options_.keys_cached; }
  bool MayProbeBefore(const LayerSite& site) const override;
  int64_t ProbeTopCount(const LayerSite& site, int64_t candidates,
                        int64_t prunable) const override;
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override;

  // The resolved schedule (after Attach).
  const PruneSchedule& schedule() const { return schedule_; }

 private:
  // Candidates a boundary keeping `keep` of them keeps among the first
  // `prunable` (the protected ones count in the fraction).
  static int64_t KeepCount(double keep, int64_t candidates, int64_t prunable);
  // Indices of the `count` candidates in [0, limit) to keep, ascending.
  std::vector<int32_t> Choose(TokenCandidates& candidates, int64_t limit,
                              int64_t count);

  LazyLlmOptions options_;
  PruneSchedule schedule_;
  std::mt19937_64 rng_;
  uint64_t sequences_ = 0;  // BeginSequence calls so far (random drop).
  // revive=false: per boundary layer, whether each prompt position was kept
  // in the prompt's step.
  std::map<int64_t, std::vector<bool>> static_kept_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_LAZYLLM_LAZYLLM_H_
