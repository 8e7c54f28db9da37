// Where LazyLLM's probe puts the passkey follow-up task's secret number
// (docs/tasks.md, task passkey_followup). On an unpruned run it records, at
// one layer L, the score lazyllm prunes by: the last token's attention of
// layer L - 1 over every position, averaged over query heads. With no
// pruning before L (schedule L:keep), that is the score a pruned run sees
// there (layers < L are dense in both):
//   - at the prompt's last step: static pruning keeps this top `keep` for
//     good;
//   - at the steps that predict the secret number's tokens (the bridge's
//     last token, then the key's tokens teacher-forced): lazyllm keeps each
//     step's top `keep` afresh.
// Per depth it counts the trials where an occurrence of the secret number's
// tokens lies wholly inside the top set of: the prompt's step; the first
// answer step; every answer step; and with the kLead tokens before it; and
// where every bridge token scores inside it at every answer step. The top
// set's cut is taken over the prompt's positions. The steps are those of the
// metric's trial (RunPasskeyTrial), on an unpruned session.
//   dynsparse_passkey_probe MODEL_DIR CONTEXT LAYER KEEP TRIALS DEPTH...
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "core/graph/session.h"
#include "core/io/model_loader.h"
#include "core/tokenizer/tokenizer.h"
#include "experiments/metrics/passkey.h"
#include "experiments/metrics/passkey_trial.h"
#include "kernels/cpu/cpu_backend.h"

namespace dynsparse {
namespace {

// Tokens ahead of the key that an induction-style copy reads ("... secret
// number is"): the last column also asks for them.
constexpr int64_t kLead = 4;

// Keeps every token and records the probe before layer `layer` of each step.
class ProbeRecorder : public Method {
 public:
  explicit ProbeRecorder(int64_t layer) : layer_(layer) {}
  std::string name() const override { return "probe-recorder"; }
  absl::Status Attach(const ModelConfig&, Backend&) override {
    return absl::OkStatus();
  }
  bool SelectsTokens() const override { return true; }
  void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                    TokenSelection* keep) override {
    keep->all = true;
    if (site.layer != layer_) return;
    const absl::Span<const float> p = candidates.LastQueryAttention();
    const absl::Span<const int32_t> pos = candidates.positions();
    std::vector<float> by_position(pos.empty() ? 0 : pos.back() + 1, -1.0f);
    for (size_t i = 0; i < pos.size(); ++i) by_position[pos[i]] = p[i];
    steps.push_back(std::move(by_position));
  }
  std::vector<std::vector<float>> steps;  // Per step: score by position.

 private:
  int64_t layer_;
};

// One step's score and the lowest score of its top `keep` fraction of the
// first n positions (the prompt's).
struct StepScore {
  StepScore(std::vector<float> by_position, int64_t n, double keep)
      : score(std::move(by_position)) {
    std::vector<float> sorted(score.begin(), score.begin() + n);
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    const int64_t kept = static_cast<int64_t>(keep * static_cast<double>(n));
    cut = sorted[std::max<int64_t>(0, kept - 1)];
  }
  bool Kept(int64_t position) const { return score[position] >= cut; }
  std::vector<float> score;
  float cut;
};

// Whether some occurrence of `needle` in `tokens`, with the `before` tokens
// ahead of it, lies wholly in the step's top set.
bool OccurrenceKept(const std::vector<int32_t>& tokens,
                    const std::vector<int32_t>& needle, const StepScore& step,
                    int64_t before = 0) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t m = static_cast<int64_t>(needle.size());
  for (int64_t i = 0; i + m <= n; ++i) {
    if (!std::equal(needle.begin(), needle.end(), tokens.begin() + i)) continue;
    bool all = i >= before;
    for (int64_t j = i - before; all && j < i + m; ++j) all = step.Kept(j);
    if (all) return true;
  }
  return false;
}

int Run(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: %s MODEL_DIR CONTEXT LAYER KEEP TRIALS DEPTH...\n",
                 argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t context = std::atoll(argv[2]);
  const int64_t layer = std::atoll(argv[3]);
  const double keep = std::atof(argv[4]);
  const int64_t trials = std::atoll(argv[5]);
  if (context < 64 || !(keep > 0 && keep <= 1) || trials < 1) {
    std::fprintf(stderr,
                 "CONTEXT must be >= 64, KEEP in (0, 1] and TRIALS >= 1 "
                 "(got %s %s %s)\n",
                 argv[2], argv[4], argv[5]);
    return 2;
  }
  auto model = LoadModel(dir, LoadOptions{});
  auto tokenizer = LoadHfTokenizer(dir);
  if (!model.ok() || !tokenizer.ok()) {
    std::fprintf(
        stderr, "%s\n",
        (model.ok() ? tokenizer.status() : model.status()).ToString().c_str());
    return 1;
  }
  if (layer < 1 || layer >= model->config.num_layers) {
    std::fprintf(stderr, "LAYER must be in [1, %lld)\n",
                 static_cast<long long>(model->config.num_layers));
    return 2;
  }
  CpuBackend backend(1);
  std::printf(
      "Top %.2f of layer %lld's probe (layer %lld's attention), %lld-token "
      "context: trials whose secret number lies in the top set\n\n"
      "| depth | trials | prompt's step (static keeps) | first answer step | "
      "every answer step (lazyllm keeps) | with the %d tokens before it: "
      "prompt's step | ... every answer step | every bridge token, every "
      "answer step | pass key at the prompt's step |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      keep, static_cast<long long>(layer), static_cast<long long>(layer - 1),
      static_cast<long long>(context), static_cast<int>(kLead));
  for (int a = 6; a < argc; ++a) {
    const double depth = std::atof(argv[a]);
    int prompt_kept = 0, answer_kept = 0, every_kept = 0, pass_kept = 0;
    int lead_kept = 0, prompt_lead_kept = 0, bridge_kept = 0;
    for (int64_t t = 0; t < trials; ++t) {
      PasskeySpec spec;
      spec.depth = depth;
      spec.seed = static_cast<uint64_t>(t);  // The metric's seeds for seed 0.
      spec.followup = true;
      auto p = MakePasskeyPrompt(**tokenizer, context - 8, spec);
      if (!p.ok()) {
        std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
        return 1;
      }
      ProbeRecorder recorder(layer);
      Session session(model->config, model->weights, backend, recorder,
                      context);
      // The metric's steps: the prompt, the bridge, and the key's tokens
      // teacher-forced (one greedy token, so greedy adds no step).
      auto trial =
          RunPasskeyTrial(session, p->tokens, p->bridge, p->answer, 1, {});
      if (!trial.ok()) {
        std::fprintf(stderr, "%s\n", trial.status().ToString().c_str());
        return 1;
      }
      const int64_t n = static_cast<int64_t>(p->tokens.size());
      std::vector<StepScore> steps;
      for (std::vector<float>& score : recorder.steps) {
        steps.emplace_back(std::move(score), n, keep);
      }
      const std::vector<int32_t> pass_tokens =
          (*tokenizer)->Encode(" " + p->pass_key, false);
      const size_t first_answer = steps.size() - p->answer.size();
      prompt_kept += OccurrenceKept(p->tokens, p->answer, steps.front());
      answer_kept += OccurrenceKept(p->tokens, p->answer, steps[first_answer]);
      bool every = true, every_with_lead = true, bridge = true;
      for (size_t s = first_answer; s < steps.size(); ++s) {
        every = every && OccurrenceKept(p->tokens, p->answer, steps[s]);
        every_with_lead = every_with_lead &&
                          OccurrenceKept(p->tokens, p->answer, steps[s], kLead);
        for (size_t b = 0; b < p->bridge.size(); ++b) {
          bridge = bridge && steps[s].Kept(n + static_cast<int64_t>(b));
        }
      }
      every_kept += every;
      lead_kept += every_with_lead;
      bridge_kept += bridge;
      prompt_lead_kept +=
          OccurrenceKept(p->tokens, p->answer, steps.front(), kLead);
      pass_kept += OccurrenceKept(p->tokens, pass_tokens, steps.front());
    }
    std::printf("| %.2f | %lld | %d | %d | %d | %d | %d | %d | %d |\n", depth,
                static_cast<long long>(trials), prompt_kept, answer_kept,
                every_kept, prompt_lead_kept, lead_kept, bridge_kept,
                pass_kept);
  }
  return 0;
}

}  // namespace
}  // namespace dynsparse

int main(int argc, char** argv) { return dynsparse::Run(argc, argv); }
