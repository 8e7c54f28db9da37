#include "methods/lazyllm/lazyllm.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace dynsparse {

const std::vector<std::string>& LazyLlmMethod::Parameters() {
  static const auto* const kParameters = new std::vector<std::string>{
      "schedule", "stages", "keep", "revive", "selector", "seed", "keys"};
  return *kParameters;
}

absl::StatusOr<LazyLlmOptions> LazyLlmMethod::ParseOptions(
    const MethodArgs& args) {
  LazyLlmOptions o;
  if (args.Has("schedule") && (args.Has("stages") || args.Has("keep"))) {
    return absl::InvalidArgumentError(
        "lazyllm: give either schedule=LAYER:KEEP,... or stages= and keep=");
  }
  if (args.Has("schedule")) {
    auto schedule = ParseSchedule(args.GetString("schedule", ""));
    if (!schedule.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("lazyllm schedule: ", schedule.status().message()));
    }
    o.schedule = *schedule;
  }
  auto stages = args.GetInt("stages", o.stages);
  if (!stages.ok()) return stages.status();
  auto keep = args.GetDouble("keep", o.keep);
  if (!keep.ok()) return keep.status();
  auto revive = args.GetBool("revive", o.revive);
  if (!revive.ok()) return revive.status();
  auto seed = args.GetInt("seed", 0);
  if (!seed.ok()) return seed.status();
  const std::string selector = args.GetString("selector", "attention");
  if (selector != "attention" && selector != "random") {
    return absl::InvalidArgumentError(absl::StrCat(
        "lazyllm selector '", selector, "' (valid: attention, random)"));
  }
  if (*stages < 1 || !(*keep > 0.0 && *keep <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lazyllm: stages must be >= 1 and keep in (0, 1] (got stages=", *stages,
        " keep=", *keep, ")"));
  }
  o.stages = *stages;
  o.keep = *keep;
  o.revive = *revive;
  o.random = selector == "random";
  const std::string keys = args.GetString("keys", "selected");
  if (keys != "selected" && keys != "cached") {
    return absl::InvalidArgumentError(
        absl::StrCat("lazyllm keys '", keys, "' (valid: selected, cached)"));
  }
  o.keys_cached = keys == "cached";
  o.seed = static_cast<uint64_t>(*seed);
  return o;
}

absl::StatusOr<std::unique_ptr<Method>> LazyLlmMethod::Create(
    const MethodArgs& args) {
  auto options = ParseOptions(args);
  if (!options.ok()) return options.status();
  return std::make_unique<LazyLlmMethod>(*options);
}

LazyLlmMethod::LazyLlmMethod(LazyLlmOptions options)
    : options_(std::move(options)) {}

absl::Status LazyLlmMethod::Attach(const ModelConfig& config,
                                   Backend& backend) {
  if (options_.schedule.has_value()) {
    schedule_ = *options_.schedule;
  } else {
    auto staged =
        StagedSchedule(options_.stages, options_.keep, config.num_layers);
    if (!staged.ok()) return staged.status();
    schedule_ = *staged;
  }
  for (const auto& [layer, keep] : schedule_) {
    if (layer >= config.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("lazyllm schedule layer ", layer, " is not below the ",
                       config.num_layers, " layers of the model"));
    }
  }
  return absl::OkStatus();
}

void LazyLlmMethod::BeginSequence() {
  // A fresh draw per sequence: with one seed for all, every prompt of a
  // given length would drop the same positions, and trials of a random-drop
  // measurement would not be independent.
  rng_.seed(options_.seed + sequences_++);
  static_kept_.clear();
}

std::vector<int32_t> LazyLlmMethod::Choose(TokenCandidates& candidates,
                                           int64_t limit, int64_t count) {
  std::vector<int32_t> chosen;
  chosen.reserve(static_cast<size_t>(count));
  if (options_.random) {
    std::vector<int32_t> order(static_cast<size_t>(limit));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    std::vector<uint8_t> marked(static_cast<size_t>(limit), 0);
    for (int64_t i = 0; i < count; ++i) marked[order[i]] = 1;
    for (int32_t i = 0; i < static_cast<int32_t>(limit); ++i) {
      if (marked[i]) chosen.push_back(i);
    }
    return chosen;
  }
  if (count >= limit || count == 0) {
    for (int32_t i = 0; i < static_cast<int32_t>(count); ++i) {
      chosen.push_back(i);
    }
    return chosen;
  }
  // The `count` highest probabilities, ties keeping the earlier token
  // (limit is first_protected()): picked with the probe where Session could
  // (ProbeTopCount), else from the scores on the host.
  return candidates.TopLastQueryAttention(count);
}

bool LazyLlmMethod::MayProbeBefore(const LayerSite& site) const {
  // Random drop never reads the scores; static pruning reads them in the
  // prompt's step only.
  return schedule_.count(site.layer) > 0 && !options_.random &&
         (options_.revive || site.phase == Phase::kPrefill);
}

int64_t LazyLlmMethod::KeepCount(double keep, int64_t candidates,
                                 int64_t prunable) {
  const int64_t target =
      static_cast<int64_t>(std::ceil(keep * static_cast<double>(candidates)));
  return std::clamp<int64_t>(target - (candidates - prunable), 0, prunable);
}

int64_t LazyLlmMethod::ProbeTopCount(const LayerSite& site, int64_t candidates,
                                     int64_t prunable) const {
  if (!MayProbeBefore(site)) return -1;
  const int64_t count =
      KeepCount(schedule_.at(site.layer), candidates, prunable);
  // Choose reads no score for these.
  return count > 0 && count < prunable ? count : -1;
}

void LazyLlmMethod::SelectTokens(const LayerSite& site,
                                 TokenCandidates& candidates,
                                 TokenSelection* keep) {
  auto it = schedule_.find(site.layer);
  if (it == schedule_.end()) return;
  const absl::Span<const int32_t> positions = candidates.positions();
  const int64_t n = static_cast<int64_t>(positions.size());
  const int64_t prunable = candidates.first_protected();
  const bool prompt_step = candidates.first_new() == 0;
  keep->all = false;
  keep->keep_rows.clear();

  if (!options_.revive && !prompt_step) {
    // Static pruning: what the prompt's step dropped stays dropped.
    const std::vector<bool>& kept = static_kept_[site.layer];
    for (int64_t i = 0; i < prunable; ++i) {
      const size_t p = static_cast<size_t>(positions[i]);
      if (p >= kept.size() || kept[p]) {
        keep->keep_rows.push_back(static_cast<int32_t>(i));
      }
    }
    return;
  }

  // Keep the top fraction of the current set; protected rows count in it.
  const int64_t count = KeepCount(it->second, n, prunable);
  keep->keep_rows = Choose(candidates, prunable, count);

  if (!options_.revive && prompt_step) {
    std::vector<bool>& kept = static_kept_[site.layer];
    kept.assign(static_cast<size_t>(positions.back()) + 1, false);
    for (int32_t i : keep->keep_rows) kept[positions[i]] = true;
    for (int64_t i = prunable; i < n; ++i) kept[positions[i]] = true;
  }
}

}  // namespace dynsparse
