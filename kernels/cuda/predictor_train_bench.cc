// Times the CUDA predictor trainer (predictor_trainer.h) on one layer of
// random samples: by default an OPT-66B MLP predictor (hidden 9216, 36864
// neurons, rank 1000), 65536 rows, batch 1024, 2 epochs. Prints one JSON
// object: shapes, device, seconds per epoch of training steps and of
// validation (logits on the GPU, ranking on the host), and the steps' f32
// GEMM rate. Random labels: the recall it reaches means nothing, the time is
// real. Not a test (ctest does not run it).
//   dynsparse_predictor_train_bench [--hidden N] [--units N] [--rank N]
//       [--rows N] [--batch N] [--epochs N] [--streamed] [--tf32]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/dtype.h"
#include "kernels/cuda/predictor_trainer.h"
#include "methods/dejavu/labels.h"

namespace dynsparse::cuda {
namespace {

struct BenchArgs {
  int64_t hidden = 9216, units = 36864, rank = 1000;
  int64_t rows = 65536, batch = 1024, epochs = 2;
  bool streamed = false, tf32 = false;
};

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Inputs uniform in [-1, 1); each label bit set with probability 1/8 (the
// AND of three random bits), about OPT's MLP label density.
LayerSamples RandomSamples(const BenchArgs& a) {
  LayerSamples s;
  s.rows = a.rows;
  s.hidden = a.hidden;
  s.units = a.units;
  s.x.resize(a.rows * a.hidden);
  const int64_t bytes = BitmapRowBytes(a.units);
  s.y.resize(a.rows * bytes);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a.rows; ++r) {
    uint64_t state = 0x5EEDull * (r + 1);
    for (int64_t j = 0; j < a.hidden; ++j) {
      const double u = (SplitMix(&state) >> 11) * 0x1.0p-53;
      s.x[r * a.hidden + j] = F32ToF16(static_cast<float>(2.0 * u - 1.0));
    }
    for (int64_t j = 0; j < bytes; ++j) {
      s.y[r * bytes + j] = static_cast<uint8_t>(
          SplitMix(&state) & SplitMix(&state) & SplitMix(&state));
    }
  }
  return s;
}

bool ParseArgs(int argc, char** argv, BenchArgs* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--streamed") {
      a->streamed = true;
      continue;
    }
    if (flag == "--tf32") {
      a->tf32 = true;
      continue;
    }
    int64_t* value = flag == "--hidden"   ? &a->hidden
                     : flag == "--units"  ? &a->units
                     : flag == "--rank"   ? &a->rank
                     : flag == "--rows"   ? &a->rows
                     : flag == "--batch"  ? &a->batch
                     : flag == "--epochs" ? &a->epochs
                                          : nullptr;
    if (value == nullptr || i + 1 >= argc) {
      std::fprintf(stderr, "unknown flag or missing value: %s\n", argv[i]);
      return false;
    }
    *value = std::atoll(argv[++i]);
    if (*value <= 0) {
      std::fprintf(stderr, "%s must be > 0\n", argv[i - 1]);
      return false;
    }
  }
  return true;
}

int Run(int argc, char** argv) {
  BenchArgs args;
  if (!ParseArgs(argc, argv, &args)) return 2;
  absl::StatusOr<std::unique_ptr<DeviceContext>> ctx = DeviceContext::Create();
  if (!ctx.ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().ToString().c_str());
    return 1;
  }
  const LayerSamples samples = RandomSamples(args);
  TrainOptions options;
  options.rank = args.rank;
  options.batch = args.batch;
  options.epochs = args.epochs;
  options.patience = args.epochs + 1;  // Every epoch runs.
  options.stop_recall = 2.0;
  CudaTrainSettings settings;
  settings.residency =
      args.streamed ? SampleResidency::kStreamed : SampleResidency::kAuto;
  settings.allow_tf32 = args.tf32;
  absl::StatusOr<TrainResult> result = TrainPredictorCuda(
      **ctx, samples, options, settings, [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
      });
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
    return 1;
  }
  const nlohmann::json& m = result->metrics;
  const double epochs = static_cast<double>(result->epochs_run);
  const double step_s = m["step_seconds"].get<double>() / epochs;
  const double train_rows = m["train_rows"].get<double>();
  // Per training row: h = x a^T and grad_a (2 hidden*rank each), z, g b and
  // grad_b (2 rank*units each).
  const double flops = train_rows * (4.0 * args.hidden * args.rank +
                                     6.0 * args.rank * args.units);
  const char* sha = std::getenv("DYNSPARSE_GIT_SHA");
  const nlohmann::json out = {
      {"bench", "predictor_train"},
      {"device", (*ctx)->info().DebugString()},
      {"git_sha", sha != nullptr ? sha : "unknown"},
      {"dtype", args.tf32 ? "f32 (TF32 GEMMs)" : "f32"},
      {"hidden", args.hidden},
      {"units", args.units},
      {"rank", args.rank},
      {"rows", args.rows},
      {"train_rows", m["train_rows"]},
      {"validation_rows", m["rows"]},
      {"batch", args.batch},
      {"epochs", result->epochs_run},
      {"samples", m["samples"]},
      {"step_seconds_per_epoch", step_s},
      {"validation_seconds_per_epoch",
       m["validation_seconds"].get<double>() / epochs},
      {"step_tflops", flops / step_s * 1e-12},
  };
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace dynsparse::cuda

int main(int argc, char** argv) { return dynsparse::cuda::Run(argc, argv); }
