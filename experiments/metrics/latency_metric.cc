#include "experiments/metrics/latency_metric.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dynsparse {

absl::StatusOr<std::unique_ptr<Metric>> LatencyMetric::Create(
    const MetricParams& params) {
  BenchOptions o;
  // `prompt` may list several lengths (one set of rows each), as in
  // `prompt: [128, 2048]`; the other parameters are single values.
  absl::StatusOr<std::vector<int64_t>> prompts =
      params.GetIntList("prompt", {o.prompt});
  if (!prompts.ok()) return prompts.status();
  if (prompts->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(params.path(), ".prompt: needs at least one length"));
  }
  for (int64_t p : *prompts) {
    if (p < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(params.path(), ".prompt: must be >= 1, got ", p));
    }
  }
  for (auto [key, field] : {std::pair{"new_tokens", &o.new_tokens},
                            {"batch", &o.batch},
                            {"repeats", &o.repeats}}) {
    absl::StatusOr<int64_t> v = params.GetInt(key, *field);
    if (!v.ok()) return v.status();
    if (*v < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(params.path(), ".", key, ": must be >= 1, got ", *v));
    }
    *field = *v;
  }
  absl::StatusOr<double> bw = params.GetDouble("bandwidth_gbps", 0.0);
  if (!bw.ok()) return bw.status();
  if (*bw < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        params.path(), ".bandwidth_gbps: must be >= 0 (0 = measure)"));
  }
  o.bandwidth_gbps = *bw;
  return std::unique_ptr<Metric>(
      std::make_unique<LatencyMetric>(o, *std::move(prompts)));
}

std::string LatencyMetric::Protocol() const {
  return absl::StrCat("latency: prompt ", absl::StrJoin(prompts_, "/"), ", ",
                      options_.new_tokens, " decode steps of batch ",
                      options_.batch, " x ", options_.repeats,
                      " repeats (median wall time per step)");
}

absl::StatusOr<std::vector<MetricRow>> LatencyMetric::Run(
    const MetricModel& model, const ProgressFn& progress) {
  if (model.model == nullptr || model.backend == nullptr ||
      model.method == nullptr) {
    return absl::InvalidArgumentError(
        "latency: needs a model, backend and method");
  }
  std::vector<MetricRow> rows;
  const int64_t total = static_cast<int64_t>(prompts_.size());
  for (int64_t i = 0; i < total; ++i) {
    if (progress) progress(i, total);
    BenchOptions options = options_;
    options.prompt = prompts_[i];
    absl::StatusOr<BenchResult> r =
        RunBench(model.model->config, model.model->weights, *model.backend,
                 *model.method, options);
    if (!r.ok()) return r.status();
    r->model = model.model->source;
    const nlohmann::json details = r->ToJson();
    const int64_t steps = static_cast<int64_t>(r->decode_ms.size());
    auto add = [&](const char* name, double value, int64_t n) {
      MetricRow row;
      row.metric = name;
      row.task =
          absl::StrCat("prompt", options.prompt, "_batch", options.batch);
      row.value = value;
      row.n = n;
      row.details = details;
      rows.push_back(std::move(row));
    };
    add("ttft_ms", r->ttft_ms, options.repeats);
    add("decode_ms_median", r->decode_ms_median, steps);
    add("decode_ms_p10", r->decode_ms_p10, steps);
    add("decode_ms_p90", r->decode_ms_p90, steps);
    add("tokens_per_s", r->tokens_per_s, steps);
    add("achieved_gbps", r->achieved_gbps, steps);
    add("floor_ms", r->floor_ms, steps);
    if (!r->token_work.empty()) {  // Token pruning (LazyLLM) instrumentation.
      add("computed_fraction", r->token_work["prefill_computed_fraction"],
          options.repeats);
      add("ideal_ttft_speedup", r->token_work["ideal_ttft_speedup"],
          options.repeats);
    }
  }
  if (progress) progress(total, total);
  return rows;
}

MetricInfo LatencyMetricInfo() {
  return {"latency",
          "time to first token and decode ms/token vs the bandwidth floor",
          {"prompt", "new_tokens", "batch", "repeats", "bandwidth_gbps"},
          &LatencyMetric::Create};
}

}  // namespace dynsparse
