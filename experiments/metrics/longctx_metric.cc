// The `longctx` metric: passkey retrieval (task: passkey, or passkey_followup
// with a second key asked after the answer; context lengths and depths as
// lists) or a LongBench-style jsonl file (task: longbench) scored by QA F1,
// ROUGE-L, classification accuracy or code edit similarity.
#include "experiments/metrics/longctx_metric.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/graph/session.h"
#include "datasets/tasks/jsonl.h"
#include "experiments/bench/token_work.h"
#include "experiments/generation.h"
#include "experiments/metrics/longbench_scores.h"
#include "experiments/metrics/passkey.h"
#include "experiments/metrics/passkey_trial.h"
#include "experiments/metrics/sample_stats.h"

namespace dynsparse {
namespace {

constexpr char kDefaultPrompt[] = "{context}\n\nQuestion: {input}\nAnswer:";

struct LongctxOptions {
  std::string task;  // "passkey" | "passkey_followup" | "longbench"
  // passkey, passkey_followup
  std::vector<int64_t> contexts = {1024};
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t trials = 5;
  int64_t seed = 0;
  double pass_key_depth = 1.0;  // passkey_followup: the asked, unscored key.
  // longbench
  std::string file;
  std::string score = "qa_f1";
  std::string prompt = kDefaultPrompt;
  int64_t limit = 0;
  int64_t max_length = 0;      // Prompt tokens kept (middle cut); 0 = model's.
  int64_t max_new_tokens = 0;  // 0: 8 for passkey, 32 for longbench.
};

absl::StatusOr<std::vector<int32_t>> GenerateGreedy(
    const MetricModel& model, Session& session,
    const std::vector<int32_t>& prompt, int64_t max_new) {
  GenerationOptions g;
  g.max_new_tokens = max_new;
  if (auto eos = model.tokenizer->eos_id()) g.stop_ids = {*eos};
  auto r = Generate(session, prompt, g);
  if (!r.ok()) return r.status();
  return r->tokens;
}

double ScoreOne(const std::string& kind, const std::string& prediction,
                const std::vector<std::string>& answers,
                const std::vector<std::string>& classes) {
  double best = 0;
  for (const std::string& a : answers) {
    double s = 0;
    if (kind == "qa_f1") s = QaF1Score(prediction, a);
    if (kind == "rouge") s = RougeLScore(prediction, a);
    if (kind == "classification")
      s = ClassificationScore(prediction, a, classes);
    if (kind == "code_sim") s = CodeSimScore(prediction, a);
    best = std::max(best, s);
  }
  return best;
}

class LongctxMetric : public Metric {
 public:
  explicit LongctxMetric(LongctxOptions o) : o_(std::move(o)) {}

  std::string Protocol() const override {
    if (o_.task == "passkey") {
      return absl::StrCat(
          "passkey retrieval, greedy, ", o_.trials,
          " keys per (context, depth); answer log-likelihood: the key's "
          "tokens teacher-forced as decode steps (nats)");
    }
    if (o_.task == "passkey_followup") {
      return absl::StrCat(
          "passkey follow-up: the prompt asks for a pass key (at depth ",
          o_.pass_key_depth,
          "), its answer and a second question about a secret number (at "
          "the cell's depth) are teacher-forced as decode steps, then the "
          "secret number is generated greedily and its log-likelihood "
          "scored; ",
          o_.trials, " keys per (context, depth)");
    }
    return absl::StrCat("LongBench-style ", o_.score, " on ", o_.file,
                        ", greedy ", MaxNew(), " tokens");
  }

  absl::StatusOr<std::vector<MetricRow>> Run(
      const MetricModel& model, const ProgressFn& progress) override {
    return IsPasskey() ? RunPasskey(model, progress)
                       : RunLongbench(model, progress);
  }

 private:
  bool IsPasskey() const { return o_.task != "longbench"; }

  int64_t MaxNew() const {
    return o_.max_new_tokens > 0 ? o_.max_new_tokens : (IsPasskey() ? 8 : 32);
  }

  absl::StatusOr<std::vector<MetricRow>> RunPasskey(
      const MetricModel& model, const ProgressFn& progress) {
    std::vector<MetricRow> rows;
    const int64_t total =
        static_cast<int64_t>(o_.contexts.size() * o_.depths.size()) * o_.trials;
    int64_t done = 0;
    std::vector<int32_t> stop_ids;
    if (auto eos = model.tokenizer->eos_id()) stop_ids = {*eos};
    for (int64_t context : o_.contexts) {
      Session session(model.model->config, model.model->weights, *model.backend,
                      *model.method, context);
      for (double depth : o_.depths) {
        std::vector<int> found;
        std::vector<double> logprob, per_token;
        TokenWork work;
        for (int64_t t = 0; t < o_.trials; ++t) {
          PasskeySpec spec;
          spec.depth = depth;
          spec.seed = o_.seed * 1000003 + t;
          spec.followup = o_.task == "passkey_followup";
          spec.pass_key_depth = o_.pass_key_depth;
          auto p =
              MakePasskeyPrompt(*model.tokenizer, context - MaxNew(), spec);
          if (!p.ok()) return p.status();
          auto trial = RunPasskeyTrial(session, p->tokens, p->bridge, p->answer,
                                       MaxNew(), stop_ids);
          if (!trial.ok()) return trial.status();
          found.push_back(PasskeyFound(
              model.tokenizer->Decode(trial->generated, true), p->key));
          logprob.push_back(trial->answer_logprob);
          per_token.push_back(trial->answer_logprob /
                              static_cast<double>(trial->answer_tokens));
          work.Add(session);
          if (progress) progress(++done, total);
        }
        const size_t scored = rows.size();
        AddPasskeyRows(context, depth, found, logprob, per_token, &rows);
        AddTokenWork(work, scored, &rows);
      }
    }
    return rows;
  }

  // Accuracy (Wilson 95% interval in its details) and the answer's mean
  // log-likelihood, in total and per token, each with its standard error.
  // Per-trial values go in the details, so methods (same keys: same seeds)
  // can be compared trial by trial.
  void AddPasskeyRows(int64_t context, double depth,
                      const std::vector<int>& found,
                      const std::vector<double>& logprob,
                      const std::vector<double>& per_token,
                      std::vector<MetricRow>* rows) const {
    const int64_t n = static_cast<int64_t>(found.size());
    int64_t hits = 0;
    for (int f : found) hits += f;
    const auto [low, high] = WilsonInterval(hits, n);
    MetricRow acc;
    acc.metric = "passkey_acc";
    acc.task = absl::StrCat(o_.task, "@", context, "/", depth);
    acc.value = static_cast<double>(hits) / static_cast<double>(n);
    acc.stderr_value =
        MeanStderr(std::vector<double>(found.begin(), found.end())).second;
    acc.n = n;
    acc.details = {{"context", context},
                   {"depth", depth},
                   {"max_new_tokens", MaxNew()},
                   {"seed", o_.seed},
                   {"found", hits},
                   {"wilson95", {low, high}},
                   {"found_by_trial", found}};
    MetricRow ll = acc;
    ll.metric = "answer_logprob";
    std::tie(ll.value, ll.stderr_value) = MeanStderr(logprob);
    ll.details = {{"context", context},
                  {"depth", depth},
                  {"seed", o_.seed},
                  {"by_trial", logprob}};
    MetricRow tok = ll;
    tok.metric = "answer_logprob_per_token";
    std::tie(tok.value, tok.stderr_value) = MeanStderr(per_token);
    tok.details["by_trial"] = per_token;
    rows->push_back(std::move(acc));
    rows->push_back(std::move(ll));
    rows->push_back(std::move(tok));
  }

  absl::StatusOr<std::vector<MetricRow>> RunLongbench(
      const MetricModel& model, const ProgressFn& progress) {
    auto lines = ReadJsonl(o_.file);
    if (!lines.ok()) return lines.status();
    const size_t n = o_.limit > 0 ? std::min<size_t>(o_.limit, lines->size())
                                  : lines->size();
    const int64_t max_length =
        o_.max_length > 0 ? o_.max_length
                          : model.model->config.max_position_embeddings;
    Session session(model.model->config, model.model->weights, *model.backend,
                    *model.method, max_length + MaxNew());
    double sum = 0;
    TokenWork work;
    for (size_t i = 0; i < n; ++i) {
      JsonFields f(o_.file, (*lines)[i]);
      auto context = f.String("context");
      auto input = f.String("input");
      auto answers = f.Strings("answers");
      if (!context.ok()) return context.status();
      if (!input.ok()) return input.status();
      if (!answers.ok()) return answers.status();
      std::vector<std::string> classes;
      if (o_.score == "classification") {
        auto c = f.Strings("all_classes");
        if (!c.ok()) return c.status();
        classes = *std::move(c);
      }
      const std::string prompt = absl::StrReplaceAll(
          o_.prompt, {{"{context}", *context}, {"{input}", *input}});
      std::vector<int32_t> ids = model.tokenizer->Encode(prompt, true);
      if (static_cast<int64_t>(ids.size()) > max_length) {
        // LongBench keeps the first and last halves of an over-long prompt.
        const int64_t half = max_length / 2;
        std::vector<int32_t> cut(ids.begin(), ids.begin() + half);
        cut.insert(cut.end(), ids.end() - (max_length - half), ids.end());
        ids = std::move(cut);
      }
      auto out = GenerateGreedy(model, session, ids, MaxNew());
      if (!out.ok()) return out.status();
      sum += ScoreOne(o_.score, model.tokenizer->Decode(*out, true), *answers,
                      classes);
      work.Add(session);
      if (progress) progress(static_cast<int64_t>(i + 1), n);
    }
    MetricRow row;
    row.metric = o_.score;
    row.task = o_.file;
    row.value = n == 0 ? 0.0 : sum / n;
    row.n = static_cast<int64_t>(n);
    row.details = {{"prompt", o_.prompt},
                   {"max_length", max_length},
                   {"max_new_tokens", MaxNew()}};
    std::vector<MetricRow> rows = {row};
    AddTokenWork(work, 0, &rows);
    return rows;
  }

  // Token pruning: the computed fraction and ideal TTFT speedup in the
  // details of the (*rows)[scored] (the task's score) and as rows of their
  // own after the last row.
  static void AddTokenWork(const TokenWork& work, size_t scored,
                           std::vector<MetricRow>* rows) {
    if (work.empty()) return;
    const nlohmann::json fields = work.ToJson();
    for (const auto& [key, value] : fields.items()) {
      (*rows)[scored].details[key] = value;
    }
    MetricRow fraction;
    fraction.metric = "computed_fraction";
    fraction.task = (*rows)[scored].task;
    fraction.n = (*rows)[scored].n;
    fraction.value = work.prefill_fraction();
    fraction.details = fields;
    MetricRow speedup = fraction;
    speedup.metric = "ideal_ttft_speedup";
    speedup.value = work.ideal_ttft_speedup();
    rows->push_back(std::move(fraction));
    rows->push_back(std::move(speedup));
  }

  LongctxOptions o_;
};

absl::Status Bad(const MetricParams& p, const char* key,
                 const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(p.path(), ".", key, ": ", why));
}

absl::StatusOr<std::unique_ptr<Metric>> CreateLongctx(const MetricParams& p) {
  LongctxOptions o;
  auto task = p.GetString("task", "passkey");
  if (!task.ok()) return task.status();
  if (*task != "passkey" && *task != "passkey_followup" &&
      *task != "longbench") {
    return Bad(p, "task",
               absl::StrCat("unknown task '", *task,
                            "' (valid: passkey, passkey_followup, longbench)"));
  }
  o.task = *task;
  auto max_new = p.GetInt("max_new_tokens", 0);
  if (!max_new.ok()) return max_new.status();
  if (*max_new < 0) return Bad(p, "max_new_tokens", "must be >= 0");
  o.max_new_tokens = *max_new;
  if (o.task != "longbench") {
    auto contexts = p.GetIntList("context", o.contexts);
    auto depths = p.GetStringList("depth", {});
    auto trials = p.GetInt("trials", o.trials);
    auto seed = p.GetInt("seed", o.seed);
    if (!contexts.ok()) return contexts.status();
    if (!depths.ok()) return depths.status();
    if (!trials.ok()) return trials.status();
    if (!seed.ok()) return seed.status();
    for (int64_t c : *contexts) {
      if (c < 64)
        return Bad(p, "context", absl::StrCat("must be >= 64, got ", c));
    }
    if (!depths->empty()) o.depths.clear();
    for (const std::string& d : *depths) {
      double v;
      if (!absl::SimpleAtod(d, &v) || v < 0 || v > 1) {
        return Bad(p, "depth",
                   absl::StrCat("expected numbers in [0, 1], got '", d, "'"));
      }
      o.depths.push_back(v);
    }
    if (*trials < 1) return Bad(p, "trials", "must be >= 1");
    auto pass_key_depth = p.GetDouble("pass_key_depth", o.pass_key_depth);
    if (!pass_key_depth.ok()) return pass_key_depth.status();
    if (*pass_key_depth < 0 || *pass_key_depth > 1) {
      return Bad(p, "pass_key_depth",
                 absl::StrCat("must be in [0, 1], got ", *pass_key_depth));
    }
    o.pass_key_depth = *pass_key_depth;
    if (o.task == "passkey" && p.Has("pass_key_depth")) {
      return Bad(p, "pass_key_depth", "applies to task passkey_followup only");
    }
    o.contexts = *contexts;
    o.trials = *trials;
    o.seed = *seed;
  } else {
    auto file = p.GetString("file", "");
    auto score = p.GetString("score", o.score);
    auto prompt = p.GetString("prompt", o.prompt);
    auto limit = p.GetInt("limit", 0);
    auto max_length = p.GetInt("max_length", 0);
    for (const auto* s : {&file, &score, &prompt}) {
      if (!s->ok()) return s->status();
    }
    if (!limit.ok()) return limit.status();
    if (!max_length.ok()) return max_length.status();
    if (file->empty()) return Bad(p, "file", "required for task longbench");
    const std::vector<std::string> kinds = {"qa_f1", "rouge", "classification",
                                            "code_sim"};
    if (std::find(kinds.begin(), kinds.end(), *score) == kinds.end()) {
      return Bad(p, "score",
                 absl::StrCat("unknown score '", *score,
                              "' (valid: ", absl::StrJoin(kinds, ", "), ")"));
    }
    if (*limit < 0) return Bad(p, "limit", "must be >= 0");
    if (*max_length < 0) return Bad(p, "max_length", "must be >= 0");
    o.file = *file;
    o.score = *score;
    o.prompt = *prompt;
    o.limit = *limit;
    o.max_length = *max_length;
  }
  return std::make_unique<LongctxMetric>(std::move(o));
}

}  // namespace

MetricInfo LongctxMetricInfo() {
  return {"longctx",
          "passkey retrieval, or LongBench-style jsonl scored by QA F1 / "
          "ROUGE-L / classification / code similarity",
          {"task", "context", "depth", "trials", "seed", "pass_key_depth",
           "file", "score", "prompt", "limit", "max_length", "max_new_tokens"},
          &CreateLongctx};
}

}  // namespace dynsparse
