#include "experiments/metrics/perplexity_metric.h"

#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"
#include "datasets/corpus_registry.h"
#include "experiments/metrics/perplexity.h"

namespace dynsparse {

absl::StatusOr<std::unique_ptr<Metric>> PerplexityMetric::Create(
    const MetricParams& params) {
  PerplexityMetricOptions o;
  auto corpus = params.GetString("corpus", "");
  if (!corpus.ok()) return corpus.status();
  if (corpus->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        params.path(), ".corpus: required (a registered corpus or a file)"));
  }
  if (absl::Status s = CheckCorpusName(*corpus); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat(params.path(), ".corpus: ", s.message()));
  }
  o.corpus = *corpus;
  auto context = params.GetInt("context", o.context);
  auto stride = params.GetInt("stride", o.stride);
  auto max_tokens = params.GetInt("max_tokens", o.max_tokens);
  auto add_special = params.GetBool("add_special", o.add_special);
  if (!context.ok()) return context.status();
  if (!stride.ok()) return stride.status();
  if (!max_tokens.ok()) return max_tokens.status();
  if (!add_special.ok()) return add_special.status();
  if (*context < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(params.path(), ".context: must be >= 2, got ", *context));
  }
  if (*stride < 1 || *stride > *context) {
    return absl::InvalidArgumentError(absl::StrCat(
        params.path(), ".stride: must be in [1, context=", *context, "], got ",
        *stride));
  }
  if (*max_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        params.path(), ".max_tokens: must be >= 0, got ", *max_tokens));
  }
  o.context = *context;
  o.stride = *stride;
  o.max_tokens = *max_tokens;
  o.add_special = *add_special;
  return std::make_unique<PerplexityMetric>(std::move(o));
}

std::string PerplexityMetric::Protocol() const {
  return absl::StrCat(
      "token ppl of ", options_.corpus, ", sliding window context ",
      options_.context, " stride ", options_.stride,
      options_.max_tokens > 0
          ? absl::StrCat(", first ", options_.max_tokens, " tokens")
          : "");
}

absl::StatusOr<std::vector<MetricRow>> PerplexityMetric::Run(
    const MetricModel& model, const ProgressFn& progress) {
  auto corpus = LoadCorpus(options_.corpus);
  if (!corpus.ok()) return corpus.status();
  std::vector<int32_t> ids =
      model.tokenizer->Encode(corpus->text, options_.add_special);
  const bool truncated = options_.max_tokens > 0 &&
                         static_cast<int64_t>(ids.size()) > options_.max_tokens;
  if (truncated) ids.resize(options_.max_tokens);
  const bool bos = options_.add_special && model.tokenizer->adds_bos();
  if (ids.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(corpus->path, ": ", ids.size(),
                     " tokens; perplexity needs at least 2"));
  }
  Session session(model.model->config, model.model->weights, *model.backend,
                  *model.method,
                  std::min<int64_t>(options_.context, ids.size()));
  PerplexityOptions popts{
      .context = std::min<int64_t>(options_.context, ids.size()),
      .stride = options_.stride};
  if (popts.stride > popts.context) popts.stride = popts.context;
  auto result = SlidingWindowPerplexity(session, ids, popts, progress);
  if (!result.ok()) {
    return absl::Status(
        result.status().code(),
        absl::StrCat(corpus->name, ": ", result.status().message()));
  }

  nlohmann::json details = {
      {"protocol", Protocol()},
      {"corpus", corpus->name},
      {"path", corpus->path},
      {"context", options_.context},
      {"stride", options_.stride},
      {"windows", result->windows},
      {"nll_sum", result->nll_sum},
      {"text_tokens", ids.size()},
      {"bos", bos ? "prepended once" : "none"},
  };
  std::vector<MetricRow> rows(1);
  rows[0].metric = "perplexity";
  rows[0].task = corpus->name;
  rows[0].value = result->perplexity();
  rows[0].n = result->tokens;
  rows[0].details = details;
  // Bits per UTF-8 byte needs every byte of the text scored: the whole text,
  // and a BOS so that the first text token is predicted too.
  if (!truncated && bos && !corpus->text.empty()) {
    MetricRow& bpb = rows.emplace_back(rows[0]);
    bpb.metric = "bits_per_byte";
    bpb.value = result->nll_sum / std::numbers::ln2 /
                static_cast<double>(corpus->text.size());
    bpb.n = static_cast<int64_t>(corpus->text.size());
  }
  return rows;
}

MetricInfo PerplexityMetricInfo() {
  return {"perplexity",
          "token-level sliding-window perplexity of a corpus",
          {"corpus", "context", "stride", "max_tokens", "add_special"},
          &PerplexityMetric::Create};
}

}  // namespace dynsparse
