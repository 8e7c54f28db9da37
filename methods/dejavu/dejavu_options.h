// The dejavu method's parameters (--method-arg key=value, or YAML
// `method: {name: dejavu, ...}`), parsed and checked, and the per-layer
// number of units each layer keeps. docs/dejavu.md lists them.
#ifndef DYNSPARSE_METHODS_DEJAVU_DEJAVU_OPTIONS_H_
#define DYNSPARSE_METHODS_DEJAVU_DEJAVU_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/method.h"
#include "core/model_config.h"
#include "methods/method_args.h"

namespace dynsparse {

enum class Selector { kPredictor, kOracle, kRandom };

struct DejavuOptions {
  std::string
      predictors;  // A folder, or "" (then random_rank or no predictor).
  int64_t random_rank = 0;  // > 0 for predictors=random:D.
  Selector selector = Selector::kPredictor;
  double mlp_keep = 1.0;
  double head_keep = 1.0;
  std::vector<double> mlp_keep_layers;   // Empty: mlp_keep everywhere.
  std::vector<double> head_keep_layers;  // Empty: head_keep everywhere.
  int64_t dense_first_mlp = 0;
  int64_t dense_last_mlp = 0;
  int64_t dense_first_heads = 0;
  int64_t dense_last_heads = 0;
  SparseExecution execution = SparseExecution::kSparse;
  // Method::LazyKvWindow (2..16): speed only, never a number.
  int64_t lazy_kv_window = Method::kDefaultLazyKvWindow;
  int64_t seed = 0;
  // How missing predictors are made (`dynsparse run` calibrates them before
  // the first job); also checked against an existing folder's metadata.
  std::string calib_corpus;  // "" = the default calibration corpus.
  int64_t calib_tokens = 0;  // 0 = default.
  int64_t mlp_rank = 0;      // 0 = DefaultMlpRank.
  int64_t head_rank = 0;     // 0 = DefaultHeadRank.
  // Where they are trained: "cpu", "cuda", or "" = the job's model device.
  std::string train_device;
};

// Every key the method accepts (the registry lists them).
const std::vector<std::string>& DejavuParameterNames();

absl::StatusOr<DejavuOptions> ParseDejavuOptions(const MethodArgs& args);

// Units kept per row at each layer; 0 = the layer runs dense. `heads` picks
// the head settings (units = num_heads) or the MLP ones (intermediate_size).
// Errors name the parameter (a per-layer list of the wrong length, ...).
absl::StatusOr<std::vector<int64_t>> KeptUnitsPerLayer(
    const DejavuOptions& options, bool heads, const ModelConfig& config);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_DEJAVU_OPTIONS_H_
