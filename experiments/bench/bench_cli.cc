#include "experiments/bench/bench_cli.h"

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/io/model_loader.h"
#include "experiments/bench/bench.h"
#include "experiments/cli/flags.h"
#include "kernels/backend_factory.h"

namespace dynsparse {
namespace {

const std::vector<FlagSpec>& Specs() {
  static const auto* const kSpecs = new std::vector<FlagSpec>{
      {"model", FlagKind::kValue,
       "HF folder, llama2.c .bin, or random:NAME (random weights; generated "
       "on the GPU with --device cuda)"},
      {"device", FlagKind::kValue, "cpu | cuda", "cpu"},
      {"dtype", FlagKind::kValue, "weight dtype: f32 | f16 | bf16", "f16"},
      {"method", FlagKind::kValue, "sparsity method", "dense"},
      {"method-arg", FlagKind::kRepeated, "method parameter key=value"},
      {"prompt", FlagKind::kValue, "prompt tokens (prefill)", "128"},
      {"new", FlagKind::kValue, "decode steps timed per repeat", "32"},
      {"batch", FlagKind::kValue,
       "rows per decode step (one sequence, B tokens a step)", "1"},
      {"repeats", FlagKind::kValue, "measured repeats after one warm-up", "3"},
      {"decode-loop", FlagKind::kValue,
       "greedy (token chosen on the device, host a step ahead; batch 1) | "
       "fixed (fixed ids, logits read back each step); empty: greedy at "
       "batch 1",
       ""},
      {"bandwidth-gbps", FlagKind::kValue,
       "memory bandwidth for the floor (0 = measure a device copy)", "0"},
      {"threads", FlagKind::kValue, "CPU threads (0 = all cores)", "0"},
      {"seed", FlagKind::kValue, "random weights and prompt ids", "1"},
      {"no-cuda-graphs", FlagKind::kSwitch,
       "run decode steps eagerly instead of replaying a CUDA graph"},
      {"token-profile", FlagKind::kSwitch,
       "token pruning: split decode steps into phases (token_profile); "
       "waits for the device at each phase, so steps run slower"},
      {"token-profile-host", FlagKind::kSwitch,
       "token pruning: the host's time in each phase of decode steps "
       "(token_profile, host_only), without waiting for the device"},
      {"json", FlagKind::kSwitch, "print one JSON object"},
  };
  return *kSpecs;
}

absl::StatusOr<BenchResult> Run(const ParsedFlags& flags,
                                const MethodFactory& methods) {
  const std::string model_path = flags.Get("model");
  if (model_path.empty()) {
    return absl::InvalidArgumentError("--model is required");
  }
  absl::StatusOr<DType> dtype = ParseDType(flags.Get("dtype"));
  if (!dtype.ok()) return dtype.status();
  BackendRequest request;
  request.device = flags.Get("device");
  absl::StatusOr<int64_t> threads = flags.GetInt("threads");
  if (!threads.ok()) return threads.status();
  request.threads = static_cast<int>(*threads);
  request.cuda_graphs = !flags.Has("no-cuda-graphs");
  if (absl::Status s = CheckDeviceName(request.device); !s.ok()) return s;

  BenchOptions options;
  options.token_profile = flags.Has("token-profile");
  options.token_profile_host = flags.Has("token-profile-host");
  options.decode_loop = flags.Get("decode-loop");
  for (auto [name, field] : {std::pair{"prompt", &options.prompt},
                             {"new", &options.new_tokens},
                             {"batch", &options.batch},
                             {"repeats", &options.repeats}}) {
    absl::StatusOr<int64_t> v = flags.GetInt(name);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  absl::StatusOr<double> bw = flags.GetDouble("bandwidth-gbps");
  if (!bw.ok()) return bw.status();
  options.bandwidth_gbps = *bw;
  absl::StatusOr<int64_t> seed = flags.GetInt("seed");
  if (!seed.ok()) return seed.status();
  options.seed = static_cast<uint64_t>(*seed);

  // random: models are generated where the backend runs; files are loaded
  // on the host and moved to the device.
  LoadOptions load;
  load.dtype = *dtype;
  load.random_seed = options.seed;
  const bool random = absl::StartsWith(model_path, kRandomModelPrefix);
  load.config_only = random;
  absl::StatusOr<LoadedModel> model = LoadModel(model_path, load);
  if (!model.ok()) return model.status();
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      CreateBackend(request, random ? nullptr : &model->weights);
  if (!backend.ok()) return backend.status();
  if (random) {
    std::cerr << "generating random " << DTypeName(*dtype) << " weights for "
              << model_path << " on " << request.device << "\n";
    absl::StatusOr<ModelWeights> w =
        RandomWeightsFor(**backend, model->config, options.seed, *dtype);
    if (!w.ok()) return w.status();
    model->weights = *std::move(w);
  }
  absl::StatusOr<std::unique_ptr<Method>> method =
      methods(flags.Get("method"), flags.GetAll("method-arg"));
  if (!method.ok()) return method.status();
  if (absl::Status s = (*method)->Attach(model->config, **backend); !s.ok())
    return s;

  std::cerr << "bench: " << (*backend)->name() << ", prompt " << options.prompt
            << ", " << options.new_tokens << " decode steps x "
            << options.repeats << " repeats\n";
  absl::StatusOr<BenchResult> result =
      RunBench(model->config, model->weights, **backend, **method, options);
  if (!result.ok()) return result.status();
  result->model = model_path;
  return result;
}

}  // namespace

int BenchMain(const std::vector<std::string>& args,
              const MethodFactory& methods) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cerr << "usage: dynsparse bench --model M [flags]\n"
                   "time to first token, decode ms/token (median, p10, p90), "
                   "achieved GB/s and the bandwidth floor\n\nflags:\n"
                << FlagsHelp(Specs());
      return 0;
    }
  }
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, Specs());
  absl::StatusOr<BenchResult> result =
      flags.ok() ? Run(*flags, methods)
                 : absl::StatusOr<BenchResult>(flags.status());
  if (!result.ok()) {
    std::cerr << "dynsparse bench: error: " << result.status().message()
              << "\n";
    return 1;
  }
  const BenchResult& r = *result;
  if (flags->Has("json")) {
    std::cout << r.ToJson().dump() << "\n";
    return 0;
  }
  std::cout << absl::StrFormat(
      "%s on %s (%s, batch %d, prompt %d)\n"
      "  ttft            %9.2f ms  (%.1f TFLOP/s)\n"
      "  decode median   %9.3f ms/step  (p10 %.3f, p90 %.3f; %.1f tokens/s)\n"
      "  achieved        %9.1f GB/s of %.1f GB/s (%s)\n"
      "  floor           %9.3f ms/step  (decode = %.3f x floor)\n",
      r.model, r.backend, r.dtype, r.batch, r.prompt, r.ttft_ms,
      r.prefill_tflops, r.decode_ms_median, r.decode_ms_p10, r.decode_ms_p90,
      r.tokens_per_s, r.achieved_gbps, r.bandwidth_gbps, r.bandwidth_source,
      r.floor_ms, r.decode_ms_median / r.floor_ms);
  return 0;
}

}  // namespace dynsparse
