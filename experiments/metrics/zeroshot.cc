#include "experiments/metrics/zeroshot.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "datasets/tasks/python_random.h"
#include "experiments/metrics/sample_stats.h"

namespace dynsparse {
namespace {

// Python's len() of a UTF-8 string: code points.
double CharLength(const std::string& s) {
  double n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool SameDoc(const TaskDoc& a, const TaskDoc& b) {
  return a.text == b.text && a.choices == b.choices && a.target == b.target &&
         a.gold == b.gold;
}

// One few-shot example as lm-eval's sampler renders it (without delimiter).
std::string Example(const TaskDefinition& task, const TaskDoc& doc) {
  switch (task.kind) {
    case TaskKind::kMultipleChoice:
      return absl::StrCat(doc.text, task.target_delimiter,
                          doc.choices[doc.gold]);
    case TaskKind::kPartial:
      return absl::StrCat(doc.choices[doc.gold], task.target_delimiter,
                          doc.target);
    case TaskKind::kLoglikelihood:
      return absl::StrCat(doc.text, task.target_delimiter, doc.target);
  }
  return "";
}

// argmax with numpy's first-index tie rule.
int ArgMax(const std::vector<double>& v) {
  int best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = static_cast<int>(i);
  }
  return best;
}

// Encodes every document's requests, spread over the machine's cores (the
// tokenizer is stateless; scoring itself runs the backend's own threads).
std::vector<std::vector<TokenizedRequest>> EncodeAll(
    const Tokenizer& tokenizer,
    const std::vector<std::vector<LoglikelihoodRequest>>& requests,
    bool add_bos_token) {
  std::vector<std::vector<TokenizedRequest>> out(requests.size());
  const size_t workers =
      std::clamp<size_t>(std::thread::hardware_concurrency(), 1,
                         std::max<size_t>(1, requests.size()));
  auto work = [&](size_t w) {
    for (size_t d = w; d < requests.size(); d += workers) {
      for (const LoglikelihoodRequest& r : requests[d]) {
        out[d].push_back(EncodeRequest(tokenizer, r, add_bos_token));
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (std::thread& t : threads) t.join();
  return out;
}

}  // namespace

std::vector<LoglikelihoodRequest> BuildRequests(
    const TaskDefinition& task, const std::vector<TaskDoc>& docs, size_t index,
    int64_t num_fewshot, PythonRandom* rng) {
  const TaskDoc& doc = docs[index];
  std::string fewshot;
  if (num_fewshot > 0) {
    // lm-eval, few-shot split == evaluation split: sample k + 1, drop the
    // current document, keep k.
    const int64_t draw =
        std::min<int64_t>(num_fewshot + 1, static_cast<int64_t>(docs.size()));
    int64_t kept = 0;
    for (int64_t i : rng->Sample(static_cast<int64_t>(docs.size()), draw)) {
      if (kept == num_fewshot) break;
      if (SameDoc(docs[i], doc)) continue;
      absl::StrAppend(&fewshot, Example(task, docs[i]), task.fewshot_delimiter);
      ++kept;
    }
  }
  std::vector<LoglikelihoodRequest> out;
  switch (task.kind) {
    case TaskKind::kMultipleChoice:
      for (const std::string& c : doc.choices) {
        out.push_back({fewshot + doc.text, task.target_delimiter + c});
      }
      break;
    case TaskKind::kPartial:
      for (const std::string& c : doc.choices) {
        out.push_back({fewshot + c, task.target_delimiter + doc.target});
      }
      break;
    case TaskKind::kLoglikelihood:
      out.push_back({fewshot + doc.text, task.target_delimiter + doc.target});
      break;
  }
  return out;
}

absl::StatusOr<TaskScore> EvaluateTask(const MetricModel& model,
                                       const TaskDefinition& task,
                                       const std::vector<TaskDoc>& docs,
                                       const ZeroshotOptions& options,
                                       const ProgressFn& progress) {
  const size_t n = options.limit > 0
                       ? std::min<size_t>(options.limit, docs.size())
                       : docs.size();
  PythonRandom rng(options.fewshot_seed);
  std::vector<std::vector<LoglikelihoodRequest>> requests(n);
  for (size_t d = 0; d < n; ++d) {
    requests[d] = BuildRequests(task, docs, d, options.num_fewshot, &rng);
  }
  const std::vector<std::vector<TokenizedRequest>> encoded =
      EncodeAll(*model.tokenizer, requests, options.add_bos_token);

  const int64_t max_length = options.max_length > 0
                                 ? options.max_length
                                 : DefaultMaxLength(model.model->config);
  LoglikelihoodScorer scorer(model, max_length);
  TaskScore score;
  score.task = task.name;
  std::vector<double> acc, acc_norm, lls;
  for (size_t d = 0; d < n; ++d) {
    auto results = scorer.ScoreGroup(encoded[d]);
    if (!results.ok()) {
      return absl::Status(results.status().code(),
                          absl::StrCat("task '", task.name, "' document ", d,
                                       ": ", results.status().message()));
    }
    DocScore ds;
    ds.results = *std::move(results);
    ds.gold = docs[d].gold;
    score.requests += static_cast<int64_t>(ds.results.size());
    if (task.kind == TaskKind::kLoglikelihood) {
      acc.push_back(ds.results[0].is_greedy ? 1.0 : 0.0);
      lls.push_back(ds.results[0].logprob);
    } else {
      std::vector<double> ll, ll_norm;
      for (size_t c = 0; c < ds.results.size(); ++c) {
        ll.push_back(ds.results[c].logprob);
        ll_norm.push_back(ds.results[c].logprob /
                          CharLength(docs[d].choices[c]));
      }
      ds.pred = ArgMax(ll);
      ds.pred_norm = ArgMax(ll_norm);
      acc.push_back(ds.pred == ds.gold ? 1.0 : 0.0);
      acc_norm.push_back(ds.pred_norm == ds.gold ? 1.0 : 0.0);
    }
    score.docs.push_back(std::move(ds));
    if (progress)
      progress(static_cast<int64_t>(d + 1), static_cast<int64_t>(n));
  }
  std::tie(score.acc, score.acc_stderr) = MeanStderr(acc);
  std::tie(score.acc_norm, score.acc_norm_stderr) = MeanStderr(acc_norm);
  if (!lls.empty()) score.perplexity = std::exp(-MeanStderr(lls).first);
  return score;
}

}  // namespace dynsparse
