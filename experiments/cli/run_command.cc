// dynsparse run: expand a YAML experiment config into jobs and run them,
// resumably, appending to RESULTS_DIR/results*.jsonl; then write the report.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/model_setup.h"
#include "experiments/harness/config.h"
#include "experiments/harness/git_info.h"
#include "experiments/harness/json_fields.h"
#include "experiments/harness/results_log.h"
#include "experiments/harness/runner.h"
#include "experiments/harness/sweep.h"
#include "experiments/metrics/registry.h"
#include "experiments/report/report.h"

namespace dynsparse {
namespace {

std::atomic<bool> g_stop{false};

void OnSigint(int) {
  if (g_stop.exchange(true)) {
    // Second Ctrl-C: stop now, as the user asks.
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    return;
  }
  const char message[] =
      "\ndynsparse run: stopping after the job in flight (Ctrl-C again to "
      "abort it)\n";
  [[maybe_unused]] ssize_t n =
      write(STDERR_FILENO, message, sizeof(message) - 1);
}

// Loaded models shared by consecutive jobs on the same model (jobs are
// model-major): the weights and the backend they may live on (CUDA) are kept,
// each job gets a fresh method.
class CachingOpener {
 public:
  absl::StatusOr<OpenedJob> Open(const Job& job) {
    const ModelSpec& m = job.model;
    const std::string key = absl::StrCat(m.path, "|", m.tokenizer, "|", m.dtype,
                                         "|", m.device, "|", m.threads);
    const MethodArgs args = VariantArgs(job.method);
    if (key != key_ || loaded_ == nullptr) {
      loaded_.reset();  // Free the previous model before loading the next.
      key_.clear();
      ModelSpecRequest request;
      request.path = m.path;
      request.tokenizer = m.tokenizer;
      request.device = m.device;
      request.dtype = m.dtype;
      request.threads = m.threads;
      request.method = job.method.name;
      request.method_args = args;
      ASSIGN_OR_RETURN(OpenedModel opened, OpenModel(request, {}));
      loaded_ = std::make_shared<OpenedModel>(std::move(opened));
      key_ = key;
      return Wrap(loaded_, std::move(loaded_->method), m);
    }
    ASSIGN_OR_RETURN(
        std::unique_ptr<Method> method,
        CreateAttachedMethod(job.method.name, args, loaded_->model.config,
                             *loaded_->backend));
    return Wrap(loaded_, std::move(method), m);
  }

 private:
  struct Owner {
    std::shared_ptr<OpenedModel> model;
    std::unique_ptr<Method> method;
  };

  static OpenedJob Wrap(std::shared_ptr<OpenedModel> model,
                        std::unique_ptr<Method> method, const ModelSpec& spec) {
    auto owner = std::make_shared<Owner>();
    owner->model = std::move(model);
    owner->method = std::move(method);
    OpenedJob job;
    job.model.model = &owner->model->model;
    job.model.tokenizer = owner->model->tokenizer.get();
    job.model.backend = owner->model->backend.get();
    job.model.method = owner->method.get();
    job.model.device = spec.device;
    job.model.dtype = spec.dtype;
    job.owner = owner;
    return job;
  }

  std::string key_;
  std::shared_ptr<OpenedModel> loaded_;
};

// Pairs already finished in `dir` (read only: a dry run changes nothing).
std::set<std::string> FinishedPairs(const std::string& dir,
                                    const std::string& hash) {
  std::set<std::string> done;
  for (const std::string& file : ListResultsFiles(dir)) {
    auto lines = ReadResultsFile(file);
    if (!lines.ok()) continue;
    for (const auto& line : *lines) {
      if (StrField(line, "kind") == "result" &&
          StrField(line, "status") == "ok" &&
          StrField(line, "config_hash") == hash) {
        done.insert(StrField(line, "pair"));
      }
    }
  }
  return done;
}

void PrintJobs(const LoadedConfig& loaded, const std::vector<Job>& jobs,
               const std::string& out_dir, size_t total) {
  const std::set<std::string> done = FinishedPairs(out_dir, loaded.hash);
  std::cout << absl::StrFormat(
      "# %s: %d of %d job(s), %d metric(s) each, "
      "config hash %s, results in %s\n",
      loaded.config.name, jobs.size(), total, loaded.config.metrics.size(),
      loaded.hash, out_dir);
  for (const Job& job : jobs) {
    size_t finished = 0;
    for (size_t m = 0; m < loaded.config.metrics.size(); ++m) {
      finished += done.count(PairKey(job.key, m));
    }
    const std::string state =
        finished == loaded.config.metrics.size() ? "done"
        : finished == 0                          ? "todo"
                                                 : absl::StrCat(finished, "/",
                                                                loaded.config.metrics.size(), " done");
    std::cout << absl::StrFormat("%4d  %-8s  %s  %s/%s  %s\n", job.index, state,
                                 job.model.label, job.model.device,
                                 job.model.dtype, DescribeVariant(job.method));
  }
}

}  // namespace

int RunRun(const CommandArgs& args) {
  const std::vector<FlagSpec> specs = {
      {"set", FlagKind::kRepeated,
       "override a config value: key.path=YAML (methods[1].mlp_keep=[0.5])"},
      {"shard", FlagKind::kValue,
       "run jobs I, I+N, I+2N, ... of the sweep (I/N, 0 <= I < N)", "0/1"},
      {"out", FlagKind::kValue,
       "results folder (default: the config's output:, else results/NAME)"},
      {"dry-run", FlagKind::kSwitch, "print the job list and exit"},
      {"retry-errors", FlagKind::kSwitch,
       "run again the (job, metric) pairs that failed before"},
      {"no-report", FlagKind::kSwitch, "skip writing the report at the end"},
  };
  if (WantsHelp(args)) {
    PrintCommandHelp(
        "run",
        "dynsparse run CONFIG.yaml [flags]: run an experiment config (schema: "
        "docs/harness.md).",
        specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs, Positional::kAllowed);
  if (!flags.ok()) return ReportError("run", flags.status());
  if (flags->positional().size() != 1) {
    return ReportError("run", absl::InvalidArgumentError(
                                  "expected one config file: dynsparse run "
                                  "CONFIG.yaml [flags]"));
  }
  auto shard = ParseShard(flags->Get("shard"));
  if (!shard.ok()) return ReportError("run", shard.status());
  auto loaded =
      LoadExperimentConfig(flags->positional()[0], flags->GetAll("set"),
                           {MethodRegistry(), MetricRegistry()});
  if (!loaded.ok()) return ReportError("run", loaded.status());

  std::string out_dir = flags->Get("out");
  if (out_dir.empty()) out_dir = loaded->config.output;
  if (out_dir.empty()) out_dir = absl::StrCat("results/", loaded->config.name);

  const std::vector<Job> all = ExpandJobs(loaded->config);
  if (flags->Has("dry-run")) {
    PrintJobs(*loaded, SelectShard(all, *shard), out_dir, all.size());
    return 0;
  }

  struct sigaction action {};
  action.sa_handler = OnSigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);

  CachingOpener opener;
  RunOptions options;
  options.out_dir = out_dir;
  options.shard = *shard;
  options.retry_errors = flags->Has("retry-errors");
  options.stop = &g_stop;
  options.git_sha = BuildGitSha();
  options.log = &std::cerr;
  options.terminal = isatty(STDERR_FILENO);
  options.prepare = [](const Job& job) {
    return PrepareDejavuJob(job, std::cerr);
  };
  std::cerr << absl::StrFormat(
      "dynsparse run: %s, %d job(s) in shard %d/%d, results in %s (git %s)\n",
      loaded->config.name, SelectShard(all, *shard).size(), shard->index,
      shard->count, out_dir, options.git_sha);
  auto summary = RunExperiment(
      *loaded, MetricRegistry(),
      [&](const Job& job) { return opener.Open(job); }, options);
  signal(SIGINT, SIG_DFL);
  if (!summary.ok()) return ReportError("run", summary.status());
  std::cerr << absl::StrFormat(
      "dynsparse run: %d job(s): %d already done, %d metric result(s) "
      "written, %d failed%s -> %s\n",
      summary->jobs, summary->jobs_skipped, summary->pairs_ok,
      summary->pairs_failed,
      summary->interrupted > 0 ? absl::StrCat(", ", summary->interrupted,
                                              " interrupted job(s) re-run")
                               : "",
      summary->results_file);

  if (!flags->Has("no-report")) {
    auto report = WriteReport({out_dir}, out_dir, loaded->config.report);
    if (!report.ok()) return ReportError("run", report.status());
    for (const std::string& file : report->files) {
      std::cerr << "  wrote " << file << "\n";
    }
  }
  if (summary->stopped) {
    std::cerr << "dynsparse run: stopped by Ctrl-C; run the same command "
                 "again to continue\n";
    return 130;
  }
  // Non-zero so scripts notice; the other jobs' results are all there.
  return summary->pairs_failed > 0 ? 3 : 0;
}

}  // namespace dynsparse
