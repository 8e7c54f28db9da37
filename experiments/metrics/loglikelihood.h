// lm-evaluation-harness's loglikelihood requests, scored on a Session.
//
// Encoding follows lm-eval's HFLM exactly: trailing whitespace of the context
// moves to the front of the continuation, the context is encoded alone, the
// continuation is the token tail of encode(context + continuation), an empty
// context becomes the prefix token (BOS, else EOS), special tokens are added
// only with add_bos_token (lm-eval's default: off). Scoring feeds
// (context + continuation)[-(max_length + 1):][:-1] and sums the
// continuation's log-softmax; is_greedy = every continuation token is the
// argmax. Requests of one document share their common token prefix: it runs
// once and Session::Truncate rewinds to it for each continuation.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_LOGLIKELIHOOD_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_LOGLIKELIHOOD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/session.h"
#include "core/tokenizer/tokenizer.h"
#include "experiments/metrics/metric.h"

namespace dynsparse {

struct LoglikelihoodRequest {
  std::string context;
  std::string continuation;
};

struct TokenizedRequest {
  std::vector<int32_t> context;
  std::vector<int32_t> continuation;
};

struct LoglikelihoodResult {
  double logprob = 0.0;  // Sum over the continuation's tokens (natural log).
  bool is_greedy = false;
  int64_t tokens = 0;  // Continuation tokens.
};

// lm-eval's _encode_pair (or the prefix-token rule for an empty context).
TokenizedRequest EncodeRequest(const Tokenizer& tokenizer,
                               const LoglikelihoodRequest& request,
                               bool add_bos_token);

// log_softmax(row)[target] (natural log) and the row's argmax (first index
// on ties), in double precision as lm-eval sums them.
struct TokenScore {
  double logprob = 0.0;
  int64_t argmax = 0;
};
TokenScore ScoreToken(absl::Span<const float> row, int32_t target);

// lm-eval's max_length for a model: max_position_embeddings, else 2048.
int64_t DefaultMaxLength(const ModelConfig& config);

class LoglikelihoodScorer {
 public:
  // `model` must outlive the scorer. `max_length` bounds every input.
  LoglikelihoodScorer(const MetricModel& model, int64_t max_length);

  // Scores requests together (one document's choices), sharing the longest
  // common input prefix that holds no scored position.
  absl::StatusOr<std::vector<LoglikelihoodResult>> ScoreGroup(
      absl::Span<const TokenizedRequest> requests);

 private:
  // A session whose KV capacity fits `tokens` (grown in powers of two).
  Session& SessionFor(int64_t tokens);

  MetricModel model_;
  int64_t max_length_;
  std::unique_ptr<Session> session_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_LOGLIKELIHOOD_H_
