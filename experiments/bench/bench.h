// Latency of one model on one backend: time to first token (prefill), decode
// ms/token percentiles, achieved bandwidth and the bandwidth floor. Shared by
// `dynsparse bench` (experiments/cli/bench_command.cc) and the harness's
// `latency` metric (experiments/metrics/latency_metric.cc).
#ifndef DYNSPARSE_EXPERIMENTS_BENCH_BENCH_H_
#define DYNSPARSE_EXPERIMENTS_BENCH_BENCH_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/backend.h"
#include "core/graph/method.h"
#include "core/model_config.h"
#include "core/model_weights.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

struct BenchOptions {
  int64_t prompt = 128;       // Prompt tokens (prefill).
  int64_t new_tokens = 32;    // Decode steps timed per repeat.
  int64_t batch = 1;          // Rows per decode step (see BenchResult).
  int64_t repeats = 3;        // Measured repeats, after one warm-up repeat.
  double bandwidth_gbps = 0;  // > 0: use it; else measure a device copy.
  int64_t bandwidth_bytes = int64_t{1} << 30;  // Size of that copy.
  uint64_t seed = 1;                           // Prompt token ids.
  bool token_profile = false;  // Session::EnableTokenProfile (slows steps).
  bool token_profile_host = false;  // The same, host time only (no waits).
  // How decode steps are fed (BenchResult::decode_loop): "greedy" (batch 1:
  // Session::DecodeGreedy, the token chosen on the device, the host one step
  // ahead where the backend pipelines steps) or "fixed" (fixed ids, each
  // step's logits read back before the next starts). Empty: greedy at
  // batch 1, else fixed.
  std::string decode_loop;
};

struct BenchResult {
  std::string model;
  std::string device;
  std::string backend;  // Backend::name()
  std::string method;   // Method::name()
  std::string dtype;
  std::string kv_dtype;  // The KV cache's element type (Backend::KvCacheDtype).
  int64_t batch = 1;
  int64_t prompt = 0;
  int64_t new_tokens = 0;
  int64_t repeats = 0;
  std::string decode_loop;  // BenchOptions::decode_loop as run.
  double ttft_ms = 0;  // Median prefill wall time (logits of the last row).
  double prefill_tflops = 0;
  // Every measured decode step, wall time: between two tokens' arrivals on
  // the host (greedy) or around one Forward (fixed).
  std::vector<double> decode_ms;
  double decode_ms_median = 0, decode_ms_p10 = 0, decode_ms_p90 = 0;
  double decode_ms_mean = 0;            // Steps vary when tokens are revived.
  double decode_device_ms_median = -1;  // Device clock, when available.
  // Host time before a step's recorded work is launched, and of the launch
  // (Backend::LastStepHostPassMs / LastStepLaunchMs), when recorded.
  double decode_host_pass_ms_median = -1;
  double decode_launch_ms_median = -1;
  double tokens_per_s = 0;
  double weight_bytes = 0;       // Distinct weight tensors.
  double bytes_per_step = 0;     // Weights + KV cache read by a decode step.
  double bandwidth_gbps = 0;     // Copy bandwidth used for the floor.
  std::string bandwidth_source;  // "measured device copy" | "option"
  double floor_ms = 0;           // bytes_per_step / bandwidth.
  double achieved_gbps = 0;      // bytes_per_step / decode_ms_median.
  std::string git_sha;
  // The backend A/B switches set in the environment (BenchSwitches).
  std::map<std::string, std::string> switches;
  // Token pruning (LazyLLM): TokenWork::ToJson of the measured sequences;
  // empty for methods that keep every token.
  nlohmann::json token_work = nlohmann::json::object();
  // With BenchOptions::token_profile: TokenProfileJson of the last sequence.
  nlohmann::json token_profile = nlohmann::json::object();

  nlohmann::json ToJson() const;
};

// The A/B environment switches of the backends that are set: every
// DYNSPARSE_CUDA_* variable (docs/cuda.md lists them).
std::map<std::string, std::string> BenchSwitches();

// The git commit this binary was built from (configure time, or the
// DYNSPARSE_GIT_SHA environment variable when set), "unknown" otherwise.
std::string BenchGitSha();

// Bytes a decode step reads at context length `context`: every distinct
// weight tensor except the embedding tables (a row each) plus the KV cache,
// whose elements are `kv_dtype`.
double DecodeBytesPerStep(const ModelConfig& config,
                          const ModelWeights& weights, int64_t context,
                          DType kv_dtype);

// Runs the benchmark. `weights` must live where `backend` reads them.
// Batch B runs B rows per decode step of one sequence: the weight traffic of
// batched decode (each step streams the weights once for B rows), attention
// over one shared cache. Prefill and decode feed fixed pseudo-random ids.
absl::StatusOr<BenchResult> RunBench(const ModelConfig& config,
                                     const ModelWeights& weights,
                                     Backend& backend, Method& method,
                                     const BenchOptions& options);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_BENCH_BENCH_H_
