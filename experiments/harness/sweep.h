// Sweep expansion: a method entry's list-valued parameters are axes of a
// grid (cartesian product, in sorted key order); `zip:` groups axes that move
// together. Jobs are models x expanded methods, model-major, so consecutive
// jobs share a loaded model. `--shard I/N` keeps jobs I, I+N, I+2N, ...
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_SWEEP_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_SWEEP_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "experiments/harness/config.h"
#include "methods/method_args.h"

namespace dynsparse {

std::vector<MethodVariant> ExpandMethod(const MethodSpec& spec);
MethodArgs VariantArgs(const MethodVariant& variant);
// "dejavu head_keep=1 mlp_keep=0.5" ("dense" without parameters).
std::string DescribeVariant(const MethodVariant& variant);

struct Job {
  size_t index = 0;  // Position in the full (unsharded) job list.
  ModelSpec model;
  MethodVariant method;
  // Stable identity for resuming: model label/device/dtype + method + params.
  std::string key;
};

std::vector<Job> ExpandJobs(const ExperimentConfig& config);

// Error "PATH: job 'KEY' appears twice (also from PATH)" when two entries
// expand to the same job.
absl::Status CheckDistinctJobs(const ExperimentConfig& config);

struct Shard {
  int index = 0;
  int count = 1;
};
// "I/N" with 0 <= I < N.
absl::StatusOr<Shard> ParseShard(const std::string& text);
std::vector<Job> SelectShard(const std::vector<Job>& jobs, const Shard& shard);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_SWEEP_H_
