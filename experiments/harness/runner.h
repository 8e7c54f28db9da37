// The job runner of `dynsparse run`: for every job of its shard, opens the
// model + method and runs each metric not yet finished in the results log,
// appending one JSON line per metric row. Models come from a JobOpener and
// metrics from a table passed by reference, so tests run it on fakes.
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_RUNNER_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_RUNNER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/harness/config.h"
#include "experiments/harness/sweep.h"
#include "experiments/metrics/metric.h"

namespace dynsparse {

// What a job's metrics run on; `owner` keeps the pointees alive.
struct OpenedJob {
  MetricModel model;
  std::shared_ptr<void> owner;
};
using JobOpener = std::function<absl::StatusOr<OpenedJob>(const Job&)>;

struct RunOptions {
  std::string out_dir;
  Shard shard;
  bool retry_errors = false;  // Re-run (job, metric) pairs that failed.
  // Checked between jobs: set by SIGINT to stop after the job in flight.
  const std::atomic<bool>* stop = nullptr;
  std::string git_sha = "unknown";
  std::ostream* log = nullptr;  // Progress; null = silent.
  bool terminal = false;        // Draw a progress bar on `log`.
  // Run before a job's model opens (dejavu: calibrates missing predictors);
  // an error fails that job's metrics like an opening error.
  std::function<absl::Status(const Job&)> prepare;
};

struct RunSummary {
  size_t jobs = 0;          // In this shard.
  size_t jobs_skipped = 0;  // Everything already finished.
  size_t pairs_ok = 0;      // (job, metric) pairs run now.
  size_t pairs_failed = 0;
  size_t interrupted = 0;  // Jobs found in flight from a killed run.
  bool stopped = false;    // By the stop flag.
  std::string results_file;
};

// The results file this shard appends to.
std::string ResultsFileName(const Shard& shard);

// Writes OUT/resolved.yaml (atomically) and runs the shard's jobs.
absl::StatusOr<RunSummary> RunExperiment(const LoadedConfig& config,
                                         const std::vector<MetricInfo>& metrics,
                                         const JobOpener& opener,
                                         const RunOptions& options);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_RUNNER_H_
