#include "experiments/metrics/perplexity_metric.h"

#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"
#include "datasets/corpus_registry.h"
#include "datasets/wikitext_documents.h"
#include "experiments/metrics/loglikelihood.h"
#include "experiments/metrics/perplexity.h"
#include "experiments/metrics/rolling_loglikelihood.h"

namespace dynsparse {

absl::StatusOr<std::unique_ptr<Metric>> PerplexityMetric::Create(
    const MetricParams& params) {
  PerplexityMetricOptions o;
  auto protocol = params.GetString("protocol", o.protocol);
  if (!protocol.ok()) return protocol.status();
  if (*protocol != "sliding" && *protocol != "wikitext") {
    return absl::InvalidArgumentError(
        absl::StrCat(params.path(), ".protocol: unknown protocol '", *protocol,
                     "' (valid: sliding, wikitext)"));
  }
  o.protocol = *protocol;
  auto limit = params.GetInt("limit", 0);
  if (!limit.ok()) return limit.status();
  if (*limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(params.path(), ".limit: must be >= 0, got ", *limit));
  }
  o.limit = *limit;
  auto corpus =
      params.GetString("corpus", o.protocol == "wikitext" ? "wikitext2" : "");
  if (!corpus.ok()) return corpus.status();
  if (o.protocol == "wikitext" && *corpus != "wikitext2") {
    return absl::InvalidArgumentError(
        absl::StrCat(params.path(),
                     ".corpus: the wikitext protocol reads wikitext2 only, "
                     "got '",
                     *corpus, "'"));
  }
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
  const bool context_given = params.Has("context");
  return std::make_unique<PerplexityMetric>(std::move(o), context_given);
}

std::string PerplexityMetric::Protocol() const {
  if (options_.protocol == "wikitext") {
    return absl::StrCat(
        "lm-eval wikitext: WikiText-2 test documents, detokenized, rolling "
        "windows of ",
        context_given_ ? absl::StrCat(options_.context) : "max_length",
        " tokens",
        options_.limit > 0 ? absl::StrCat(", first ", options_.limit, " docs")
                           : "");
  }
  return absl::StrCat(
      "token ppl of ", options_.corpus, ", sliding window context ",
      options_.context, " stride ", options_.stride,
      options_.max_tokens > 0
          ? absl::StrCat(", first ", options_.max_tokens, " tokens")
          : "");
}

absl::StatusOr<std::vector<MetricRow>> PerplexityMetric::Run(
    const MetricModel& model, const ProgressFn& progress) {
  if (options_.protocol == "wikitext") return RunWikitext(model, progress);
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

absl::StatusOr<std::vector<MetricRow>> PerplexityMetric::RunWikitext(
    const MetricModel& model, const ProgressFn& progress) {
  auto docs = LoadWikitextDocumentsFromData();
  if (!docs.ok()) return docs.status();
  if (options_.limit > 0 &&
      static_cast<int64_t>(docs->size()) > options_.limit) {
    docs->resize(options_.limit);
  }
  const Tokenizer& tok = *model.tokenizer;
  const std::optional<int32_t> prefix =
      tok.bos_id() ? tok.bos_id() : tok.eos_id();
  if (!prefix) {
    return absl::FailedPreconditionError(
        "the wikitext protocol needs a BOS or EOS token as prefix token");
  }
  const int64_t max_length =
      context_given_ ? options_.context : DefaultMaxLength(model.model->config);
  Session session(model.model->config, model.model->weights, *model.backend,
                  *model.method, max_length);
  double logprob = 0;
  int64_t words = 0, bytes = 0, tokens = 0, windows = 0;
  for (size_t d = 0; d < docs->size(); ++d) {
    const std::string& page = (*docs)[d];
    // lm-eval's tok_encode: no special tokens (add_bos_token=False).
    const std::vector<int32_t> ids =
        tok.Encode(WikitextDetokenize(page), false);
    auto r = RollingLoglikelihood(session, ids, *prefix, max_length);
    if (!r.ok()) return r.status();
    logprob += r->logprob;
    tokens += r->tokens;
    windows += r->windows;
    words += WikitextWordCount(page);
    bytes += static_cast<int64_t>(page.size());
    if (progress) progress(static_cast<int64_t>(d + 1), docs->size());
  }
  const nlohmann::json details = {
      {"protocol", Protocol()},   {"documents", docs->size()},
      {"tokens", tokens},         {"windows", windows},
      {"words", words},           {"bytes", bytes},
      {"max_length", max_length}, {"loglikelihood", logprob},
  };
  std::vector<MetricRow> rows(3);
  const char* names[3] = {"word_perplexity", "byte_perplexity",
                          "bits_per_byte"};
  const double values[3] = {std::exp(-logprob / words),
                            std::exp(-logprob / bytes),
                            -logprob / bytes / std::numbers::ln2};
  const int64_t counts[3] = {words, bytes, bytes};
  for (int i = 0; i < 3; ++i) {
    rows[i].metric = names[i];
    rows[i].task = "wikitext";
    rows[i].value = values[i];
    rows[i].n = counts[i];
    rows[i].details = details;
  }
  return rows;
}

MetricInfo PerplexityMetricInfo() {
  return {"perplexity",
          "token-level sliding-window perplexity of a corpus",
          {"protocol", "corpus", "context", "stride", "max_tokens",
           "add_special", "limit"},
          &PerplexityMetric::Create};
}

}  // namespace dynsparse
