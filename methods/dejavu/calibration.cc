#include "methods/dejavu/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/graph/session.h"
#include "core/io/file_util.h"
#include "core/io/json_fields.h"
#include "core/io/json_util.h"
#include "core/status_macros.h"
#include "methods/dejavu/labels.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/dejavu/safetensors_writer.h"

namespace dynsparse {
namespace {

std::string StreamPath(const std::string& dir, int64_t layer, bool heads,
                       bool labels) {
  return JoinPath(dir, absl::StrCat("layer", layer, heads ? ".heads" : ".mlp",
                                    labels ? "_y.bits" : "_x.f16"));
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// The observing method: keeps every unit, and appends inputs and labels to
// the layer files as the graph hands them over.
class Recorder : public Method {
 public:
  Recorder(const ModelConfig& config, const CalibrationOptions& options,
           const std::string& dir)
      : config_(config),
        positive_(UsesPositiveMlpLabel(config, options.mlp_label)),
        mlp_k_(
            LabelCount(options.mlp_label_fraction, config.intermediate_size)),
        head_k_(LabelCount(options.head_label_fraction, config.num_heads)) {
    for (int64_t l = 0; l < config.num_layers; ++l) {
      for (bool heads : {false, true}) {
        for (bool labels : {false, true}) {
          paths_.push_back(StreamPath(dir, l, heads, labels));
        }
      }
    }
  }

  absl::Status Open() {
    for (const std::string& path : paths_) {
      File f(std::fopen(path.c_str(), "wb"));
      if (f == nullptr) {
        return absl::PermissionDeniedError(
            absl::StrCat(path, ": cannot open for writing"));
      }
      files_.push_back(std::move(f));
    }
    return absl::OkStatus();
  }

  absl::Status Close() {
    for (size_t i = 0; i < files_.size(); ++i) {
      if (std::fclose(files_[i].release()) != 0 && status_.ok()) {
        status_ =
            absl::InternalError(absl::StrCat(paths_[i], ": close failed"));
      }
    }
    return status_;
  }
  const absl::Status& status() const { return status_; }

  std::string name() const override { return "dejavu-calibrate"; }
  absl::Status Attach(const ModelConfig&, Backend& backend) override {
    backend_ = &backend;
    return absl::OkStatus();
  }
  bool observes() const override { return true; }

  void SelectHeads(const LayerSite& site, const Tensor& x,
                   UnitSelection*) override {
    // Layer l's attention input feeds mlp[l] (and heads[0]).
    if (site.layer == 0) WriteInput(x, 0, /*heads=*/true);
    WriteInput(x, site.layer, /*heads=*/false);
  }
  void SelectNeurons(const LayerSite& site, const Tensor& x,
                     UnitSelection*) override {
    // Layer l's MLP input feeds heads[l + 1].
    if (site.layer + 1 < config_.num_layers) {
      WriteInput(x, site.layer + 1, /*heads=*/true);
    }
  }
  void ObserveHeads(const LayerSite& site, const Tensor& context) override {
    const int64_t rows = context.dim(0), units = config_.num_heads;
    const std::vector<float> norms =
        HeadNorms(context.data<float>(), rows, units, config_.head_dim);
    std::vector<uint8_t> bits(rows * BitmapRowBytes(units));
    for (int64_t r = 0; r < rows; ++r) {
      TopKBits(norms.data() + r * units, units, head_k_, &order_,
               bits.data() + r * BitmapRowBytes(units));
    }
    Write(site.layer, true, true, bits.data(), bits.size());
  }
  void ObserveNeurons(const LayerSite& site, const Tensor& act) override {
    const int64_t rows = act.dim(0), units = config_.intermediate_size;
    std::vector<uint8_t> bits(rows * BitmapRowBytes(units));
    std::vector<float> magnitude(units);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = act.data<float>() + r * units;
      uint8_t* out = bits.data() + r * BitmapRowBytes(units);
      if (positive_) {
        PositiveBits(row, units, out);
      } else {
        for (int64_t j = 0; j < units; ++j) magnitude[j] = std::fabs(row[j]);
        TopKBits(magnitude.data(), units, mlp_k_, &order_, out);
      }
    }
    Write(site.layer, false, true, bits.data(), bits.size());
  }

 private:
  void WriteInput(const Tensor& x, int64_t layer, bool heads) {
    const Tensor f16 = backend_->ToHost(x).ConvertTo(DType::kF16);
    Write(layer, heads, false, f16.raw_data(), f16.bytes());
  }
  void Write(int64_t layer, bool heads, bool labels, const void* data,
             size_t bytes) {
    const size_t i = layer * 4 + (heads ? 2 : 0) + (labels ? 1 : 0);
    if (!status_.ok()) return;
    if (std::fwrite(data, 1, bytes, files_[i].get()) != bytes) {
      status_ = absl::InternalError(
          absl::StrCat(paths_[i], ": write failed (disk full?)"));
    }
  }

  const ModelConfig& config_;
  const bool positive_;
  const int64_t mlp_k_, head_k_;
  Backend* backend_ = nullptr;
  std::vector<std::string> paths_;
  std::vector<File> files_;
  std::vector<int32_t> order_;
  absl::Status status_;
};

}  // namespace

bool UsesPositiveMlpLabel(const ModelConfig& config, MlpLabel label) {
  if (label == MlpLabel::kAuto) {
    return !config.gated_mlp && config.activation == Activation::kRelu;
  }
  return label == MlpLabel::kPositive;
}

int64_t LabelCount(double fraction, int64_t units) {
  return std::clamp<int64_t>(
      static_cast<int64_t>(std::llround(fraction * units)), 1, units);
}

std::string MlpLabelText(const ModelConfig& config,
                         const CalibrationOptions& options) {
  if (UsesPositiveMlpLabel(config, options.mlp_label)) {
    return "activation > 0 (ReLU non-zeros)";
  }
  return absl::StrFormat(
      "top %d of %d (fraction %g) by |%s|",
      LabelCount(options.mlp_label_fraction, config.intermediate_size),
      config.intermediate_size, options.mlp_label_fraction,
      config.gated_mlp ? "act(gate) * up" : "activation");
}

std::string HeadLabelText(const CalibrationOptions& options) {
  return absl::StrFormat(
      "top fraction %g of heads by the L2 norm of the head output before W_O",
      options.head_label_fraction);
}

absl::StatusOr<nlohmann::json> RecordCalibration(
    const ModelConfig& config, const ModelWeights& weights, Backend& backend,
    const std::vector<int32_t>& ids, const CalibrationOptions& options,
    const std::string& root,
    const std::function<void(int64_t, int64_t)>& progress) {
  if (options.context < 2) {
    return absl::InvalidArgumentError("calibration context must be >= 2");
  }
  const std::string dir = JoinPath(root, kCalibrationDir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir, ": cannot create: ", ec.message()));
  }
  std::filesystem::remove(JoinPath(dir, kCalibrationJson), ec);
  Recorder recorder(config, options, dir);
  RETURN_IF_ERROR(recorder.Attach(config, backend));
  RETURN_IF_ERROR(recorder.Open());

  absl::StatusOr<WindowsRun> run =
      RunWindows(config, weights, backend, recorder, ids, options.context,
                 options.bos_id, progress);
  if (run.ok() && !recorder.status().ok()) run = recorder.status();
  if (!run.ok()) {
    (void)recorder.Close();
    return run.status();
  }
  const int64_t tokens = run->tokens, windows = run->windows;
  RETURN_IF_ERROR(recorder.Close());
  if (tokens == 0) {
    return absl::InvalidArgumentError("calibration text has no tokens");
  }

  nlohmann::json meta = {
      {"format", kCalibrationFormat},
      {"model", options.model},
      {"model_fingerprint", ModelFingerprint(config)},
      {"corpus", options.corpus},
      {"tokens", tokens},
      {"windows", windows},
      {"context", options.context},
      {"bos_per_window", options.bos_id >= 0},
      {"num_layers", config.num_layers},
      {"hidden_size", config.hidden_size},
      {"mlp_units", config.intermediate_size},
      {"head_units", config.num_heads},
      {"input", kInputConvention},
      {"input_dtype", "f16"},
      {"mlp_label", MlpLabelText(config, options)},
      {"head_label", HeadLabelText(options)},
      {"bytes_per_token_per_layer",
       2 * config.hidden_size * 2 + BitmapRowBytes(config.intermediate_size) +
           BitmapRowBytes(config.num_heads)},
  };
  RecordWeightsId(config, meta);
  RETURN_IF_ERROR(WriteFileAtomically(JoinPath(dir, kCalibrationJson),
                                      meta.dump(2) + "\n"));
  return meta;
}

absl::StatusOr<WindowsRun> RunWindows(
    const ModelConfig& config, const ModelWeights& weights, Backend& backend,
    Method& method, const std::vector<int32_t>& ids, int64_t context,
    int32_t bos_id, const std::function<void(int64_t, int64_t)>& progress) {
  const bool bos = bos_id >= 0;
  const int64_t step = context - (bos ? 1 : 0);
  if (step < 1) return absl::InvalidArgumentError("window context too small");
  const int64_t total = static_cast<int64_t>(ids.size());
  Session session(config, weights, backend, method, context);
  WindowsRun run;
  for (int64_t start = 0; start < total; start += step) {
    std::vector<int32_t> window;
    if (bos) window.push_back(bos_id);
    const int64_t end = std::min(total, start + step);
    window.insert(window.end(), ids.begin() + start, ids.begin() + end);
    if (window.size() < 2) break;
    session.Reset();
    // Logits of the last row only: observers see every row anyway.
    ASSIGN_OR_RETURN(
        Tensor logits,
        session.Forward(window, static_cast<int64_t>(window.size() - 1)));
    run.tokens += static_cast<int64_t>(window.size());
    ++run.windows;
    if (progress) progress(end, total);
  }
  return run;
}

absl::StatusOr<CalibrationData> OpenCalibration(const std::string& root,
                                                const ModelConfig& config) {
  CalibrationData data;
  data.dir = JoinPath(root, kCalibrationDir);
  const std::string path = JoinPath(data.dir, kCalibrationJson);
  if (!IsRegularFile(path)) {
    return absl::NotFoundError(
        absl::StrCat(path, ": missing (record it with `dynsparse calibrate`)"));
  }
  ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, 1 << 20));
  ASSIGN_OR_RETURN(data.meta, ParseJson(text, path));
  if (!data.meta.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a JSON object"));
  }
  const JsonFields f(data.meta, path);
  ASSIGN_OR_RETURN(const std::string format, f.String("format"));
  if (format != kCalibrationFormat) {
    return f.Error("format", absl::StrCat("'", format, "', expected '",
                                          kCalibrationFormat, "'"));
  }
  RETURN_IF_ERROR(CheckMadeFor(f, config, "recorded"));
  ASSIGN_OR_RETURN(const std::string input, f.String("input"));
  if (input != kInputConvention) {
    return f.Error("input", "recorded under another input convention");
  }
  ASSIGN_OR_RETURN(data.tokens, f.Int("tokens"));
  if (data.tokens <= 0) return f.Error("tokens", "must be > 0");
  return data;
}

absl::StatusOr<LayerSamples> ReadLayerSamples(const CalibrationData& data,
                                              const ModelConfig& config,
                                              int64_t layer, bool heads) {
  LayerSamples s;
  s.rows = data.tokens;
  s.hidden = config.hidden_size;
  s.units = heads ? config.num_heads : config.intermediate_size;
  const int64_t x_row_bytes = s.hidden * int64_t{sizeof(uint16_t)};
  const int64_t y_row_bytes = BitmapRowBytes(s.units);
  // The sizes come from calibration.json's token count: bounded here and
  // checked against each file before its buffer is sized, so a corrupt count
  // is an error, never an allocation larger than the file.
  if (s.rows <= 0 ||
      s.rows > std::numeric_limits<int64_t>::max() /
                   std::max<int64_t>({x_row_bytes, y_row_bytes, 1})) {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(data.dir, kCalibrationJson),
                     ": field 'tokens': ", s.rows, " is out of range"));
  }
  // Sizes `dst` only once the file's size matches the count.
  auto read = [&](bool labels, int64_t bytes, auto* dst) -> absl::Status {
    const std::string path = StreamPath(data.dir, layer, heads, labels);
    ASSIGN_OR_RETURN(OpenedFile opened, OpenRegularFile(path));
    File f(fdopen(opened.fd, "rb"));
    if (f == nullptr) {
      return absl::InternalError(absl::StrCat(path, ": cannot read"));
    }
    if (opened.size != bytes) {
      return absl::DataLossError(absl::StrCat(
          path, ": ", opened.size, " bytes, expected ", bytes, " (",
          data.tokens, " tokens in ", kCalibrationJson, ")"));
    }
    dst->resize(bytes / sizeof((*dst)[0]));
    if (std::fread(dst->data(), 1, bytes, f.get()) !=
        static_cast<size_t>(bytes)) {
      return absl::DataLossError(absl::StrCat(path, ": short read"));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(read(false, s.rows * x_row_bytes, &s.x));
  RETURN_IF_ERROR(read(true, s.rows * y_row_bytes, &s.y));
  return s;
}

}  // namespace dynsparse
