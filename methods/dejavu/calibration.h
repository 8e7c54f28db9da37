// DejaVu calibration (`dynsparse calibrate`): runs the dense model over a
// corpus and records, per layer and per token, what each predictor will read
// at run time (the lookahead inputs of predictor_set.h, f16) and the labels
// it learns (bitmaps, labels.h):
//   - MLP: ReLU output > 0 (ungated ReLU models, DejaVu's OPT label), else
//     the top fraction of |act(gate) * up| (|activation| for other ungated
//     activations);
//   - heads: the top fraction of heads by the L2 norm of the head's output
//     before W_O.
// Files, in DIR/calibration/ (streamed, so memory stays one window):
//   calibration.json              tokens, shapes, label definitions, corpus
//   layer{l}.{mlp,heads}_x.f16    [tokens, hidden] f16, row-major
//   layer{l}.{mlp,heads}_y.bits   [tokens, ceil(units / 8)] bytes
#ifndef DYNSPARSE_METHODS_DEJAVU_CALIBRATION_H_
#define DYNSPARSE_METHODS_DEJAVU_CALIBRATION_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/backend.h"
#include "core/graph/method.h"
#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse {

inline constexpr char kCalibrationDir[] = "calibration";
inline constexpr char kCalibrationJson[] = "calibration.json";
inline constexpr char kCalibrationFormat[] = "dynsparse-dejavu-calibration/1";

enum class MlpLabel { kAuto, kPositive, kTop };

struct CalibrationOptions {
  int64_t context = 512;  // Tokens per window (BOS + context - 1 of text).
  MlpLabel mlp_label = MlpLabel::kAuto;
  double mlp_label_fraction = 0.25;  // For top-fraction MLP labels.
  double head_label_fraction = 0.5;
  int32_t bos_id = -1;  // Prepended to every window when >= 0.
  std::string corpus;   // Recorded in calibration.json.
  std::string model;    // Recorded in calibration.json.
};

// The label a model gets under `options` ("relu>0" or "top 0.25 of
// |act(gate)*up|"), and whether it is the positive-value rule.
bool UsesPositiveMlpLabel(const ModelConfig& config, MlpLabel label);
std::string MlpLabelText(const ModelConfig& config,
                         const CalibrationOptions& options);
std::string HeadLabelText(const CalibrationOptions& options);
int64_t LabelCount(double fraction, int64_t units);

// Records up to `ids.size()` tokens (windows of options.context) into
// DIR/calibration/, replacing what was there. `progress(done, total)` after
// every window. Returns the calibration.json written.
absl::StatusOr<nlohmann::json> RecordCalibration(
    const ModelConfig& config, const ModelWeights& weights, Backend& backend,
    const std::vector<int32_t>& ids, const CalibrationOptions& options,
    const std::string& dir,
    const std::function<void(int64_t, int64_t)>& progress = nullptr);

// Runs `method` (an observer) densely over `ids` in windows of `context`
// tokens, each a fresh sequence starting with `bos_id` when >= 0.
struct WindowsRun {
  int64_t tokens = 0;  // Rows run, BOS included.
  int64_t windows = 0;
};
absl::StatusOr<WindowsRun> RunWindows(
    const ModelConfig& config, const ModelWeights& weights, Backend& backend,
    Method& method, const std::vector<int32_t>& ids, int64_t context,
    int32_t bos_id, const std::function<void(int64_t, int64_t)>& progress);

// One layer's recorded samples for one predictor.
struct LayerSamples {
  int64_t rows = 0;
  int64_t hidden = 0;
  int64_t units = 0;
  std::vector<uint16_t> x;  // f16 bits, [rows, hidden]
  std::vector<uint8_t> y;   // [rows, BitmapRowBytes(units)]
};

struct CalibrationData {
  std::string dir;  // DIR/calibration
  nlohmann::json meta;
  int64_t tokens = 0;
};

// Opens DIR/calibration and checks it against `config` (fingerprint, layer
// count); errors name the file and field.
absl::StatusOr<CalibrationData> OpenCalibration(const std::string& dir,
                                                const ModelConfig& config);
// Reads one layer; errors name the file (missing, wrong size).
absl::StatusOr<LayerSamples> ReadLayerSamples(const CalibrationData& data,
                                              const ModelConfig& config,
                                              int64_t layer, bool heads);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_CALIBRATION_H_
