#include "experiments/metrics/loglikelihood.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

bool IsPySpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e' || c == '\x1f';
}

// A scored request: the model input and where its continuation lies.
struct Prepared {
  std::vector<int32_t> input;    // (ctx + cont)[-(max_len+1):][:-1]
  std::vector<int32_t> targets;  // The continuation tokens (last of ctx+cont).
  int64_t first_scored = 0;      // Row of input predicting targets[0].
};

}  // namespace

TokenizedRequest EncodeRequest(const Tokenizer& tokenizer,
                               const LoglikelihoodRequest& request,
                               bool add_bos_token) {
  TokenizedRequest out;
  if (request.context.empty()) {
    const std::optional<int32_t> prefix =
        tokenizer.bos_id() ? tokenizer.bos_id() : tokenizer.eos_id();
    if (prefix) out.context = {*prefix};
    out.continuation = tokenizer.Encode(request.continuation, add_bos_token);
    return out;
  }
  std::string context = request.context;
  std::string continuation = request.continuation;
  size_t keep = context.size();
  while (keep > 0 && IsPySpace(context[keep - 1])) --keep;
  if (keep < context.size()) {
    continuation = context.substr(keep) + continuation;
    context.resize(keep);
  }
  std::vector<int32_t> whole =
      tokenizer.Encode(context + continuation, add_bos_token);
  out.context = tokenizer.Encode(context, add_bos_token);
  const size_t n = std::min(out.context.size(), whole.size());
  out.continuation.assign(whole.begin() + n, whole.end());
  return out;
}

TokenScore ScoreToken(absl::Span<const float> row, int32_t target) {
  TokenScore score;
  for (size_t v = 1; v < row.size(); ++v) {
    if (row[v] > row[score.argmax]) score.argmax = static_cast<int64_t>(v);
  }
  const float top = row[score.argmax];
  double sum = 0.0;
  for (float x : row) sum += std::exp(x - top);
  score.logprob = static_cast<double>(row[target]) - top - std::log(sum);
  return score;
}

int64_t DefaultMaxLength(const ModelConfig& config) {
  return config.max_position_embeddings > 0 ? config.max_position_embeddings
                                            : 2048;
}

LoglikelihoodScorer::LoglikelihoodScorer(const MetricModel& model,
                                         int64_t max_length)
    : model_(model), max_length_(max_length) {}

Session& LoglikelihoodScorer::SessionFor(int64_t tokens) {
  if (session_ == nullptr || session_->capacity() < tokens) {
    int64_t capacity = 64;
    while (capacity < tokens) capacity *= 2;
    capacity = std::min(capacity, std::max(max_length_, tokens));
    session_.reset();  // Free the old cache before allocating the new one.
    session_ =
        std::make_unique<Session>(model_.model->config, model_.model->weights,
                                  *model_.backend, *model_.method, capacity);
  }
  return *session_;
}

absl::StatusOr<std::vector<LoglikelihoodResult>>
LoglikelihoodScorer::ScoreGroup(absl::Span<const TokenizedRequest> requests) {
  std::vector<LoglikelihoodResult> results(requests.size());
  std::vector<Prepared> prepared;
  std::vector<size_t> which;  // Index into results of each prepared entry.
  for (size_t r = 0; r < requests.size(); ++r) {
    const TokenizedRequest& req = requests[r];
    const int64_t cont = static_cast<int64_t>(req.continuation.size());
    if (cont == 0) {  // lm-eval: sum of nothing, all() of nothing.
      results[r] = {0.0, true, 0};
      continue;
    }
    if (cont > max_length_) {
      return absl::InvalidArgumentError(
          absl::StrCat("continuation of ", cont, " tokens exceeds max_length ",
                       max_length_));
    }
    std::vector<int32_t> full = req.context;
    full.insert(full.end(), req.continuation.begin(), req.continuation.end());
    if (static_cast<int64_t>(full.size()) > max_length_ + 1) {
      full.erase(full.begin(), full.end() - (max_length_ + 1));
    }
    Prepared p;
    p.input.assign(full.begin(), full.end() - 1);
    p.targets = req.continuation;
    p.first_scored = static_cast<int64_t>(p.input.size()) - cont;
    if (p.first_scored < 0) {  // Empty context and no BOS/EOS to stand in.
      return absl::InvalidArgumentError(
          "a request has no context token (empty context and the tokenizer "
          "has neither BOS nor EOS)");
    }
    prepared.push_back(std::move(p));
    which.push_back(r);
  }
  if (prepared.empty()) return results;

  // Shared prefix: common to every input and ending before any scored row.
  int64_t shared = prepared[0].first_scored;
  int64_t longest = 0;
  for (const Prepared& p : prepared) {
    shared = std::min(shared, p.first_scored);
    longest = std::max<int64_t>(longest, p.input.size());
    int64_t common = 0;
    while (common < shared && p.input[common] == prepared[0].input[common]) {
      ++common;
    }
    shared = common;
  }
  if (prepared.size() == 1) shared = 0;

  Session& session = SessionFor(longest);
  session.Reset();
  if (shared > 0) {
    auto prefix = session.Forward(
        absl::MakeConstSpan(prepared[0].input).subspan(0, shared), shared - 1);
    if (!prefix.ok()) return prefix.status();
  }
  for (size_t k = 0; k < prepared.size(); ++k) {
    const Prepared& p = prepared[k];
    if (shared > 0) {
      if (absl::Status s = session.Truncate(shared); !s.ok()) return s;
    } else if (k > 0) {
      session.Reset();
    }
    const int64_t n = static_cast<int64_t>(p.input.size()) - shared;
    auto logits =
        session.Forward(absl::MakeConstSpan(p.input).subspan(shared, n),
                        p.first_scored - shared);
    if (!logits.ok()) return logits.status();
    const int64_t vocab = logits->dim(1);
    const float* data = logits->data<float>();
    LoglikelihoodResult& out = results[which[k]];
    out.is_greedy = true;
    out.tokens = static_cast<int64_t>(p.targets.size());
    for (size_t t = 0; t < p.targets.size(); ++t) {
      const int32_t target = p.targets[t];
      if (target < 0 || target >= vocab) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token id ", target, " outside the model's vocabulary of ", vocab));
      }
      const TokenScore score = ScoreToken(
          absl::MakeConstSpan(data + static_cast<int64_t>(t) * vocab, vocab),
          target);
      out.logprob += score.logprob;
      if (score.argmax != target) out.is_greedy = false;
    }
  }
  return results;
}

}  // namespace dynsparse
