// dynsparse calibrate: record DejaVu calibration data for a model (dense run
// over a corpus) and, with --train, train its predictors; also the step
// `dynsparse run` takes before a dejavu job whose predictors folder does not
// exist yet (PrepareDejavuJob). docs/dejavu.md describes the files.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/io/file_util.h"
#include "core/status_macros.h"
#include "datasets/corpus_registry.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/model_setup.h"
#include "experiments/harness/sweep.h"
#include "methods/dejavu/calibration.h"
#include "methods/dejavu/dejavu_options.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/dejavu/train_device.h"
#include "methods/dejavu/train_predictors.h"

namespace dynsparse {
namespace {

constexpr char kDefaultCorpus[] = "wikitext2-valid-tokens";
constexpr int64_t kDefaultTokens = 65536;

struct CalibrateRequest {
  ModelSpecRequest model;
  std::string corpus = kDefaultCorpus;
  int64_t tokens = kDefaultTokens;
  CalibrationOptions calibration;
  bool train = false;
  bool reuse_data = false;
  bool discard_data = false;  // Remove OUT/calibration after training.
  TrainAllOptions training;
  std::string out;
};

absl::StatusOr<nlohmann::json> Calibrate(const CalibrateRequest& request,
                                         std::ostream& log, bool terminal) {
  if (request.out.empty())
    return absl::InvalidArgumentError("--out is required");
  if (request.tokens < 2) {
    return absl::InvalidArgumentError("--tokens must be >= 2");
  }
  ModelSpecRequest spec = request.model;
  spec.method = "dense";
  spec.method_args = MethodArgs();
  ASSIGN_OR_RETURN(OpenedModel opened_model, OpenModel(spec, {}));
  // Released before training: the GPU trainer wants the memory the dense
  // run's weights hold (and the CPU trainer the RAM).
  auto opened = std::make_unique<OpenedModel>(std::move(opened_model));
  const ModelConfig config = opened->model.config;
  std::error_code ec;
  std::filesystem::create_directories(request.out, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(request.out, ": cannot create: ", ec.message()));
  }

  nlohmann::json out = {{"out", request.out},
                        {"model", spec.path},
                        {"model_fingerprint", ModelFingerprint(config)}};
  RecordWeightsId(config, out);
  const bool have_data = OpenCalibration(request.out, config).ok();
  if (request.reuse_data && have_data) {
    log << "calibrate: reusing " << request.out << "/" << kCalibrationDir
        << "\n";
  } else {
    ASSIGN_OR_RETURN(const CorpusText corpus, LoadCorpus(request.corpus));
    std::vector<int32_t> ids =
        opened->tokenizer->Encode(corpus.text, /*add_special=*/false);
    if (static_cast<int64_t>(ids.size()) > request.tokens) {
      ids.resize(request.tokens);
    }
    CalibrationOptions options = request.calibration;
    options.corpus = corpus.name;
    options.model = spec.path;
    if (opened->tokenizer->adds_bos() && opened->tokenizer->bos_id()) {
      options.bos_id = *opened->tokenizer->bos_id();
    }
    log << absl::StrFormat(
        "calibrate: %s on %d tokens of %s, windows of %d, %s/%s (%d bytes per "
        "token per layer)\n",
        spec.path, ids.size(), corpus.name, options.context, request.out,
        kCalibrationDir,
        2 * 2 * config.hidden_size + (config.intermediate_size + 7) / 8 +
            (config.num_heads + 7) / 8);
    ASSIGN_OR_RETURN(
        out["calibration"],
        RecordCalibration(
            config, opened->model.weights, *opened->backend, ids, options,
            request.out, [&](int64_t done, int64_t total) {
              if (terminal) {
                log << absl::StrFormat("\rcalibrate: %d/%d tokens", done, total)
                    << std::flush;
              }
            }));
    if (terminal) log << "\n";
  }
  if (request.train) {
    opened.reset();
    ASSIGN_OR_RETURN(const nlohmann::json predictors,
                     TrainAllPredictors(request.out, config, request.training,
                                        [&](const std::string& line) {
                                          log << "train: " << line << "\n";
                                        }));
    out["predictors"] = predictors;
    if (request.discard_data) {
      std::filesystem::remove_all(JoinPath(request.out, kCalibrationDir), ec);
    }
    for (const auto& layer : predictors["layers"]) {
      log << absl::StrFormat("train: layer %d:", layer["layer"].get<int64_t>());
      for (const char* part : {"mlp", "heads"}) {
        const auto& m = layer[part];
        for (const auto& at : m["at_keep"]) {
          if (at["k"] != m["eval_k"]) continue;
          log << absl::StrFormat(" %s recall@%d %.4f precision %.4f (K95 %d)",
                                 part, at["k"].get<int64_t>(),
                                 at["recall"].get<double>(),
                                 at["precision"].get<double>(),
                                 m["k_for_recall_0.95"].get<int64_t>());
          break;
        }
      }
      log << "\n";
    }
  }
  return out;
}

std::vector<FlagSpec> CalibrateFlagSpecs() {
  std::vector<FlagSpec> specs = ModelFlagSpecs();
  specs.insert(
      specs.end(),
      {
          {"device", FlagKind::kValue, "cpu | cuda (the dense run)", "cpu"},
          {"dtype", FlagKind::kValue, "weight dtype: f32 | f16 | bf16", "f32"},
          {"threads", FlagKind::kValue, "CPU threads (0 = all cores)", "0"},
          {"corpus", FlagKind::kValue,
           "registered corpus name or a UTF-8 text file", kDefaultCorpus},
          {"tokens", FlagKind::kValue, "calibration tokens (at most)",
           absl::StrCat(kDefaultTokens)},
          {"context", FlagKind::kValue,
           "tokens per window (BOS + text, each window a fresh sequence)",
           "512"},
          {"out", FlagKind::kValue,
           "predictors folder (data goes to OUT/calibration)"},
          {"train", FlagKind::kSwitch,
           "train the predictors (OUT/predictors.{safetensors,json})"},
          {"reuse-data", FlagKind::kSwitch,
           "keep OUT/calibration when it matches the model (retrain only)"},
          {"discard-data", FlagKind::kSwitch,
           "remove OUT/calibration once the predictors are trained"},
          {"mlp-label", FlagKind::kValue,
           "auto (ReLU: > 0, else top fraction) | positive | top", "auto"},
          {"mlp-label-fraction", FlagKind::kValue,
           "top fraction of |act(gate)*up| labelled active", "0.25"},
          {"head-label-fraction", FlagKind::kValue,
           "top fraction of heads (by output L2 norm) labelled active", "0.5"},
          {"mlp-rank", FlagKind::kValue,
           "MLP predictor rank D (0 = min(1000, hidden/3))", "0"},
          {"head-rank", FlagKind::kValue,
           "head predictor rank D (0 = min(512, hidden/6))", "0"},
          {"epochs", FlagKind::kValue, "most training epochs", "20"},
          {"batch", FlagKind::kValue, "tokens per mini-batch", "1024"},
          {"lr", FlagKind::kValue, "AdamW learning rate", "0.001"},
          {"patience", FlagKind::kValue,
           "epochs without better validation recall before stopping", "5"},
          {"seed", FlagKind::kValue, "training seed", "0"},
          {"train-device", FlagKind::kValue,
           "cpu | cuda: where --train trains (cuda: cuBLAS on GPU 0)", "cpu"},
          {"json", FlagKind::kSwitch, "print one JSON object"},
      });
  return specs;
}

absl::StatusOr<CalibrateRequest> RequestFrom(const ParsedFlags& flags) {
  CalibrateRequest r;
  ASSIGN_OR_RETURN(r.model, RequestFromFlags(flags));
  r.corpus = flags.Get("corpus");
  ASSIGN_OR_RETURN(r.tokens, flags.GetInt("tokens"));
  ASSIGN_OR_RETURN(r.calibration.context, flags.GetInt("context"));
  r.out = flags.Get("out");
  r.train = flags.Has("train");
  r.reuse_data = flags.Has("reuse-data");
  r.discard_data = flags.Has("discard-data");
  if (r.discard_data && !r.train) {
    return absl::InvalidArgumentError("--discard-data needs --train");
  }
  const std::string label = flags.Get("mlp-label");
  if (label == "auto") {
    r.calibration.mlp_label = MlpLabel::kAuto;
  } else if (label == "positive") {
    r.calibration.mlp_label = MlpLabel::kPositive;
  } else if (label == "top") {
    r.calibration.mlp_label = MlpLabel::kTop;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--mlp-label '", label, "' (valid: auto, positive, top)"));
  }
  ASSIGN_OR_RETURN(r.calibration.mlp_label_fraction,
                   flags.GetDouble("mlp-label-fraction"));
  ASSIGN_OR_RETURN(r.calibration.head_label_fraction,
                   flags.GetDouble("head-label-fraction"));
  for (double f :
       {r.calibration.mlp_label_fraction, r.calibration.head_label_fraction}) {
    if (!(f > 0.0 && f <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("label fraction ", f, " is outside (0, 1]"));
    }
  }
  ASSIGN_OR_RETURN(r.training.mlp.rank, flags.GetInt("mlp-rank"));
  ASSIGN_OR_RETURN(r.training.heads.rank, flags.GetInt("head-rank"));
  ASSIGN_OR_RETURN(const int64_t epochs, flags.GetInt("epochs"));
  ASSIGN_OR_RETURN(const int64_t batch, flags.GetInt("batch"));
  ASSIGN_OR_RETURN(const double lr, flags.GetDouble("lr"));
  ASSIGN_OR_RETURN(const int64_t patience, flags.GetInt("patience"));
  ASSIGN_OR_RETURN(const int64_t seed, flags.GetInt("seed"));
  const std::string train_device = flags.Get("train-device");
  // Before the dense run: a missing GPU should not cost a calibration.
  if (r.train) RETURN_IF_ERROR(CheckTrainDevice(train_device));
  for (TrainOptions* o : {&r.training.mlp, &r.training.heads}) {
    o->device = train_device;
    o->epochs = epochs;
    o->batch = batch;
    o->lr = lr;
    o->patience = patience;
    o->seed = static_cast<uint64_t>(seed);
  }
  return r;
}

}  // namespace

absl::Status PrepareDejavuJob(const Job& job, std::ostream& log) {
  if (job.method.name != "dejavu") return absl::OkStatus();
  ASSIGN_OR_RETURN(const DejavuOptions options,
                   ParseDejavuOptions(VariantArgs(job.method)));
  if (options.selector != Selector::kPredictor || options.predictors.empty() ||
      IsRegularFile(JoinPath(options.predictors, kPredictorsJson))) {
    return absl::OkStatus();
  }
  CalibrateRequest request;
  request.model.path = job.model.path;
  request.model.tokenizer = job.model.tokenizer;
  request.model.device = job.model.device;
  request.model.dtype = job.model.dtype;
  request.model.threads = job.model.threads;
  if (!options.calib_corpus.empty()) request.corpus = options.calib_corpus;
  if (options.calib_tokens > 0) request.tokens = options.calib_tokens;
  request.training.mlp.rank = options.mlp_rank;
  request.training.heads.rank = options.head_rank;
  // Trained where the job's model runs unless the job says otherwise.
  std::string device = options.train_device;
  if (device.empty()) device = job.model.device == "cuda" ? "cuda" : "cpu";
  request.training.mlp.device = device;
  request.training.heads.device = device;
  // Before the dense run: a missing GPU should not cost a calibration.
  if (absl::Status s = CheckTrainDevice(device); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("dejavu train_device '", device,
                                               "': ", s.message()));
  }
  request.train = true;
  request.reuse_data = true;
  // The folder usually lives under results/: keep the predictors (MBs), not
  // the calibration data (GBs for a 7B model).
  request.discard_data = true;
  request.out = options.predictors;
  log << "dynsparse run: " << options.predictors
      << " has no predictors yet: calibrating and training them\n";
  ASSIGN_OR_RETURN(const nlohmann::json done,
                   Calibrate(request, log, /*terminal=*/false));
  return absl::OkStatus();
}

int RunCalibrate(const CommandArgs& args) {
  const std::vector<FlagSpec> specs = CalibrateFlagSpecs();
  if (WantsHelp(args)) {
    PrintCommandHelp(
        "calibrate",
        "Record DejaVu predictor inputs and labels from a dense run "
        "(OUT/calibration), and with --train the predictors (docs/dejavu.md).",
        specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportError("calibrate", flags.status());
  auto request = RequestFrom(*flags);
  if (!request.ok()) return ReportError("calibrate", request.status());
  auto result = Calibrate(*request, std::cerr, isatty(STDERR_FILENO));
  if (!result.ok()) return ReportError("calibrate", result.status());
  if (flags->Has("json")) std::cout << result->dump() << std::endl;
  return 0;
}

}  // namespace dynsparse
