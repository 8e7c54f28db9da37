// The `perplexity` metric of experiment configs. Two protocols:
//  - "sliding" (default): token-level sliding-window perplexity
//    (experiments/metrics/perplexity.h) of a registered corpus or a file;
//  - "wikitext": lm-eval's `wikitext` task: WikiText-2 test documents,
//    detokenized, scored with loglikelihood_rolling (windows of max_length),
//    reported as word_perplexity, byte_perplexity and bits_per_byte.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_METRIC_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_METRIC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "experiments/metrics/metric.h"

namespace dynsparse {

struct PerplexityMetricOptions {
  std::string protocol = "sliding";  // "sliding" | "wikitext"
  std::string corpus;  // Registered corpus name or a UTF-8 text file.
  int64_t limit = 0;   // wikitext: first N documents (0 = all).
  int64_t context = 1024;
  int64_t stride = 512;
  int64_t max_tokens = 0;  // Score only the first N tokens (0 = all).
  bool add_special =
      true;  // BOS (once, at the start) when the tokenizer adds one.
};

class PerplexityMetric : public Metric {
 public:
  PerplexityMetric(PerplexityMetricOptions options, bool context_given)
      : options_(std::move(options)), context_given_(context_given) {}
  static absl::StatusOr<std::unique_ptr<Metric>> Create(
      const MetricParams& params);

  std::string Protocol() const override;
  absl::StatusOr<std::vector<MetricRow>> Run(
      const MetricModel& model, const ProgressFn& progress) override;

 private:
  absl::StatusOr<std::vector<MetricRow>> RunWikitext(
      const MetricModel& model, const ProgressFn& progress);

  PerplexityMetricOptions options_;
  bool context_given_ = false;  // wikitext: else the model's max length.
};

MetricInfo PerplexityMetricInfo();

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_METRIC_H_
