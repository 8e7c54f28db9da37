#include "experiments/bench/bench.h"

#include <unistd.h>  // environ

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/graph/session.h"
#include "experiments/bench/token_work.h"

#ifndef DYNSPARSE_GIT_SHA
#define DYNSPARSE_GIT_SHA "unknown"
#endif

namespace dynsparse {
namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  // Linear interpolation between closest ranks (numpy's default).
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Matmul FLOPs of a prefill of n tokens (2 per multiply-add) plus causal
// attention (QK^T and PV over n(n+1)/2 pairs per head).
double PrefillFlops(const ModelConfig& c, const ModelWeights& w, int64_t n) {
  double per_token = 0;
  for (const LayerWeights& l : w.layers) {
    for (const Tensor* t :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_up, &l.w_gate, &l.w_down}) {
      if (!t->empty()) per_token += static_cast<double>(t->numel());
    }
  }
  const double matmul = 2.0 * per_token * static_cast<double>(n) +
                        2.0 * static_cast<double>(w.lm_head.numel());
  const double pairs = static_cast<double>(n) * static_cast<double>(n + 1) / 2;
  const double attention = 4.0 * pairs * static_cast<double>(c.q_dim()) *
                           static_cast<double>(c.num_layers);
  return matmul + attention;
}

}  // namespace

std::string BenchGitSha() {
  if (const char* env = std::getenv("DYNSPARSE_GIT_SHA");
      env != nullptr && *env != '\0') {
    return env;
  }
  return DYNSPARSE_GIT_SHA;
}

std::map<std::string, std::string> BenchSwitches() {
  // Every DYNSPARSE_CUDA_* variable, so a switch added to a backend is
  // recorded without a list to keep in step.
  constexpr std::string_view kPrefix = "DYNSPARSE_CUDA_";
  std::map<std::string, std::string> set;
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    const std::string_view entry(*env);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !entry.starts_with(kPrefix)) continue;
    set[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  return set;
}

double DecodeBytesPerStep(const ModelConfig& config,
                          const ModelWeights& weights, int64_t context,
                          DType kv_dtype) {
  std::map<const void*, double> tensors;
  auto add = [&](const Tensor& t) {
    if (!t.empty()) tensors[t.raw_data()] = static_cast<double>(t.bytes());
  };
  add(weights.project_in);
  add(weights.project_out);
  add(weights.final_norm_w);
  add(weights.final_norm_b);
  add(weights.lm_head);  // Read whole even when tied to the embedding.
  for (const LayerWeights& l : weights.layers) {
    for (const Tensor* t :
         {&l.attn_norm_w, &l.attn_norm_b, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq,
          &l.bk, &l.bv, &l.bo, &l.mlp_norm_w, &l.mlp_norm_b, &l.w_up, &l.w_gate,
          &l.w_down, &l.b_up, &l.b_gate, &l.b_down}) {
      add(*t);
    }
  }
  double total = 0;
  for (const auto& [p, b] : tensors) total += b;
  // K and V of every layer up to `context` positions.
  total += 2.0 * static_cast<double>(DTypeSize(kv_dtype)) *
           static_cast<double>(config.num_layers) *
           static_cast<double>(config.kv_dim()) * static_cast<double>(context);
  return total;
}

nlohmann::json BenchResult::ToJson() const {
  nlohmann::json j;
  j["model"] = model;
  j["device"] = device;
  j["backend"] = backend;
  j["dtype"] = dtype;
  j["kv_dtype"] = kv_dtype;
  j["batch"] = batch;
  j["prompt"] = prompt;
  j["new"] = new_tokens;
  j["repeats"] = repeats;
  j["ttft_ms"] = ttft_ms;
  j["prefill_tflops"] = prefill_tflops;
  j["decode_loop"] = decode_loop;
  j["decode_ms_median"] = decode_ms_median;
  j["decode_ms_p10"] = decode_ms_p10;
  j["decode_ms_p90"] = decode_ms_p90;
  j["decode_ms_mean"] = decode_ms_mean;
  // Every measured step in order (repeats one after another): where the
  // percentiles come from, and which steps of a sequence are slow.
  j["decode_ms_steps"] = decode_ms;
  if (decode_device_ms_median >= 0) {
    j["decode_device_ms_median"] = decode_device_ms_median;
  }
  if (decode_host_pass_ms_median >= 0) {
    j["decode_host_pass_ms_median"] = decode_host_pass_ms_median;
    j["decode_launch_ms_median"] = decode_launch_ms_median;
  }
  j["tokens_per_s"] = tokens_per_s;
  j["weight_bytes"] = weight_bytes;
  j["bytes_per_step"] = bytes_per_step;
  j["bandwidth_gbps"] = bandwidth_gbps;
  j["bandwidth_source"] = bandwidth_source;
  j["floor_ms"] = floor_ms;
  j["achieved_gbps"] = achieved_gbps;
  j["floor_ratio"] = floor_ms > 0 ? decode_ms_median / floor_ms : 0.0;
  j["git_sha"] = git_sha;
  j["method"] = method;
  for (const auto& [key, value] : token_work.items()) j[key] = value;
  if (!token_profile.empty()) j["token_profile"] = token_profile;
  if (!switches.empty()) j["env"] = switches;
  return j;
}

absl::StatusOr<BenchResult> RunBench(const ModelConfig& config,
                                     const ModelWeights& weights,
                                     Backend& backend, Method& method,
                                     const BenchOptions& o) {
  if (o.prompt < 1 || o.new_tokens < 1 || o.batch < 1 || o.repeats < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bench: --prompt, --new, --batch and --repeats must be >= 1 (got ",
        o.prompt, ", ", o.new_tokens, ", ", o.batch, ", ", o.repeats, ")"));
  }
  const std::string loop = !o.decode_loop.empty()
                               ? o.decode_loop
                               : (o.batch == 1 ? "greedy" : "fixed");
  if (loop != "greedy" && loop != "fixed") {
    return absl::InvalidArgumentError(absl::StrCat(
        "bench: --decode-loop must be greedy or fixed, got \"", loop, "\""));
  }
  if (loop == "greedy" && o.batch != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bench: --decode-loop greedy decodes one sequence a token at a time; "
        "--batch ",
        o.batch, " needs --decode-loop fixed"));
  }
  if (o.token_profile && o.token_profile_host) {
    return absl::InvalidArgumentError(
        "bench: --token-profile (waits for the device at each phase) and "
        "--token-profile-host (never waits) exclude each other");
  }
  const int64_t capacity = o.prompt + o.new_tokens * o.batch;
  BenchResult r;
  r.device = DeviceName(backend.device());
  r.backend = backend.name();
  r.method = method.name();
  r.batch = o.batch;
  r.prompt = o.prompt;
  r.new_tokens = o.new_tokens;
  r.repeats = o.repeats;
  r.decode_loop = loop;
  r.git_sha = BenchGitSha();
  r.switches = BenchSwitches();
  for (const LayerWeights& l : weights.layers) {
    if (!l.wq.empty()) {
      r.dtype = DTypeName(l.wq.dtype());
      break;
    }
  }

  std::mt19937 rng(static_cast<uint32_t>(o.seed));
  std::uniform_int_distribution<int32_t> id(
      0, static_cast<int32_t>(config.vocab_size - 1));
  std::vector<int32_t> prompt(o.prompt);
  for (int32_t& t : prompt) t = id(rng);
  std::vector<int32_t> step(o.batch);
  for (int32_t& t : step) t = id(rng);

  Session session(config, weights, backend, method, capacity);
  if (o.token_profile || o.token_profile_host) {
    session.EnableTokenProfile(/*host_only=*/o.token_profile_host);
  }
  std::vector<double> ttft, device_ms, host_pass_ms, launch_ms;
  TokenWork token_work;
  for (int64_t rep = 0; rep <= o.repeats; ++rep) {
    session.Reset();
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<Tensor> logits = session.Forward(prompt, o.prompt - 1);
    const double prefill_ms = Ms(std::chrono::steady_clock::now() - t0);
    if (!logits.ok()) return logits.status();
    if (rep > 0) ttft.push_back(prefill_ms);
    // One decode step of `ms` wall time (the warm-up repeat is not kept).
    auto record = [&](double ms) {
      if (rep == 0) return;
      r.decode_ms.push_back(ms);
      const double dev = backend.LastStepDeviceMs();
      if (dev >= 0) device_ms.push_back(dev);
      if (backend.LastStepHostPassMs() >= 0) {
        host_pass_ms.push_back(backend.LastStepHostPassMs());
        launch_ms.push_back(backend.LastStepLaunchMs());
      }
    };
    if (loop == "greedy") {
      auto last = std::chrono::steady_clock::now();
      absl::Status s =
          session.DecodeGreedy(step[0], o.new_tokens, [&](int32_t) {
            const auto now = std::chrono::steady_clock::now();
            record(Ms(now - last));
            last = now;
            return true;
          });
      if (!s.ok()) return s;
    } else {
      for (int64_t s = 0; s < o.new_tokens; ++s) {
        const auto t1 = std::chrono::steady_clock::now();
        logits = session.Forward(step, o.batch - 1);
        const double ms = Ms(std::chrono::steady_clock::now() - t1);
        if (!logits.ok()) return logits.status();
        record(ms);
      }
    }
    if (rep > 0) token_work.Add(session);
  }
  r.token_work = token_work.ToJson();
  if (const TokenState* state = session.token_state();
      state != nullptr && state->profile() != nullptr) {
    r.token_profile = TokenProfileJson(*state->profile());
  }
  r.ttft_ms = Percentile(ttft, 0.5);
  r.prefill_tflops =
      PrefillFlops(config, weights, o.prompt) / (r.ttft_ms * 1e-3) / 1e12;
  r.decode_ms_median = Percentile(r.decode_ms, 0.5);
  r.decode_ms_p10 = Percentile(r.decode_ms, 0.1);
  r.decode_ms_p90 = Percentile(r.decode_ms, 0.9);
  for (double ms : r.decode_ms) r.decode_ms_mean += ms;
  if (!r.decode_ms.empty()) {
    r.decode_ms_mean /= static_cast<double>(r.decode_ms.size());
  }
  if (!device_ms.empty())
    r.decode_device_ms_median = Percentile(device_ms, 0.5);
  if (!host_pass_ms.empty()) {
    r.decode_host_pass_ms_median = Percentile(host_pass_ms, 0.5);
    r.decode_launch_ms_median = Percentile(launch_ms, 0.5);
  }
  r.tokens_per_s = 1e3 * static_cast<double>(o.batch) / r.decode_ms_median;

  const DType kv_dtype = session.cache().keys(0).dtype();
  r.kv_dtype = DTypeName(kv_dtype);
  r.weight_bytes = DecodeBytesPerStep(config, weights, 0, kv_dtype);
  // The cache a step reads, at the middle of the measured decode.
  r.bytes_per_step = DecodeBytesPerStep(
      config, weights, o.prompt + o.new_tokens * o.batch / 2, kv_dtype);
  if (o.bandwidth_gbps > 0) {
    r.bandwidth_gbps = o.bandwidth_gbps;
    r.bandwidth_source = "option";
  } else {
    absl::StatusOr<double> bw = backend.MeasureCopyBandwidth(o.bandwidth_bytes);
    if (!bw.ok()) return bw.status();
    r.bandwidth_gbps = *bw;
    r.bandwidth_source =
        absl::StrCat("measured ", DeviceName(backend.device()), " copy of ",
                     o.bandwidth_bytes >> 20, " MiB (read + write)");
  }
  r.floor_ms = r.bytes_per_step / (r.bandwidth_gbps * 1e9) * 1e3;
  r.achieved_gbps = r.bytes_per_step / (r.decode_ms_median * 1e-3) / 1e9;
  return r;
}

}  // namespace dynsparse
