#include "methods/dejavu/dejavu_options.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace {

absl::Status Bad(absl::string_view key, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("method 'dejavu' parameter '", key, "': ", message));
}

absl::Status CheckFraction(absl::string_view key, double value) {
  if (!(value > 0.0 && value <= 1.0)) {
    return Bad(key, absl::StrCat(value, " is outside (0, 1]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ParseList(const MethodArgs& args,
                                              absl::string_view key) {
  const std::string text = args.GetString(key, "");
  std::vector<double> values;
  if (text.empty()) return values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    double v;
    if (!absl::SimpleAtod(item, &v)) {
      return Bad(key, absl::StrCat("'", item, "' is not a number"));
    }
    RETURN_IF_ERROR(CheckFraction(key, v));
    values.push_back(v);
  }
  return values;
}

absl::StatusOr<int64_t> NonNegative(const MethodArgs& args,
                                    absl::string_view key) {
  ASSIGN_OR_RETURN(const int64_t v, args.GetInt(key, 0));
  if (v < 0) return Bad(key, absl::StrCat(v, " is negative"));
  return v;
}

}  // namespace

const std::vector<std::string>& DejavuParameterNames() {
  static const auto* const kNames =
      new std::vector<std::string>{"predictors",
                                   "selector",
                                   "mlp_keep",
                                   "head_keep",
                                   "mlp_keep_layers",
                                   "head_keep_layers",
                                   "dense_first_mlp",
                                   "dense_last_mlp",
                                   "dense_first_heads",
                                   "dense_last_heads",
                                   "execution",
                                   "lazy_kv_window",
                                   "seed",
                                   "calib_corpus",
                                   "calib_tokens",
                                   "mlp_rank",
                                   "head_rank",
                                   "train_device"};
  return *kNames;
}

absl::StatusOr<DejavuOptions> ParseDejavuOptions(const MethodArgs& args) {
  DejavuOptions o;
  const std::string predictors = args.GetString("predictors", "");
  if (predictors.starts_with("random:")) {
    const std::string rank = predictors.substr(7);
    if (!absl::SimpleAtoi(rank, &o.random_rank) || o.random_rank <= 0) {
      return Bad("predictors", absl::StrCat("'", predictors,
                                            "': random:D needs a rank D > 0"));
    }
  } else {
    o.predictors = predictors;
  }
  const std::string selector = args.GetString("selector", "predictor");
  if (selector == "predictor") {
    o.selector = Selector::kPredictor;
  } else if (selector == "oracle") {
    o.selector = Selector::kOracle;
  } else if (selector == "random") {
    o.selector = Selector::kRandom;
  } else {
    return Bad(
        "selector",
        absl::StrCat("'", selector, "' (valid: predictor, oracle, random)"));
  }
  if (o.selector == Selector::kPredictor && predictors.empty()) {
    return Bad("predictors",
               "missing: selector=predictor needs predictors=DIR (from "
               "`dynsparse calibrate --train`) or predictors=random:D");
  }
  ASSIGN_OR_RETURN(o.mlp_keep, args.GetDouble("mlp_keep", 1.0));
  ASSIGN_OR_RETURN(o.head_keep, args.GetDouble("head_keep", 1.0));
  RETURN_IF_ERROR(CheckFraction("mlp_keep", o.mlp_keep));
  RETURN_IF_ERROR(CheckFraction("head_keep", o.head_keep));
  ASSIGN_OR_RETURN(o.mlp_keep_layers, ParseList(args, "mlp_keep_layers"));
  ASSIGN_OR_RETURN(o.head_keep_layers, ParseList(args, "head_keep_layers"));
  if (!o.mlp_keep_layers.empty() && args.Has("mlp_keep")) {
    return Bad("mlp_keep_layers", "give mlp_keep or mlp_keep_layers, not both");
  }
  if (!o.head_keep_layers.empty() && args.Has("head_keep")) {
    return Bad("head_keep_layers",
               "give head_keep or head_keep_layers, not both");
  }
  ASSIGN_OR_RETURN(o.dense_first_mlp, NonNegative(args, "dense_first_mlp"));
  ASSIGN_OR_RETURN(o.dense_last_mlp, NonNegative(args, "dense_last_mlp"));
  ASSIGN_OR_RETURN(o.dense_first_heads, NonNegative(args, "dense_first_heads"));
  ASSIGN_OR_RETURN(o.dense_last_heads, NonNegative(args, "dense_last_heads"));
  const std::string execution = args.GetString("execution", "sparse");
  if (execution == "sparse") {
    o.execution = SparseExecution::kSparse;
  } else if (execution == "masked") {
    o.execution = SparseExecution::kMasked;
  } else {
    return Bad("execution",
               absl::StrCat("'", execution, "' (valid: masked, sparse)"));
  }
  ASSIGN_OR_RETURN(o.lazy_kv_window,
                   args.GetInt("lazy_kv_window", Method::kDefaultLazyKvWindow));
  if (!Method::IsLazyKvWindow(o.lazy_kv_window)) {
    return Bad("lazy_kv_window",
               absl::StrCat(o.lazy_kv_window, " is outside 2..",
                            Method::kMaxLazyKvWindow));
  }
  ASSIGN_OR_RETURN(o.seed, args.GetInt("seed", 0));
  o.calib_corpus = args.GetString("calib_corpus", "");
  ASSIGN_OR_RETURN(o.calib_tokens, NonNegative(args, "calib_tokens"));
  ASSIGN_OR_RETURN(o.mlp_rank, NonNegative(args, "mlp_rank"));
  ASSIGN_OR_RETURN(o.head_rank, NonNegative(args, "head_rank"));
  o.train_device = args.GetString("train_device", "");
  if (!o.train_device.empty() && o.train_device != "cpu" &&
      o.train_device != "cuda") {
    return Bad("train_device",
               absl::StrCat("'", o.train_device, "' (valid: cpu, cuda)"));
  }
  return o;
}

absl::StatusOr<std::vector<int64_t>> KeptUnitsPerLayer(
    const DejavuOptions& o, bool heads, const ModelConfig& config) {
  const int64_t layers = config.num_layers;
  const int64_t units = heads ? config.num_heads : config.intermediate_size;
  const std::vector<double>& list =
      heads ? o.head_keep_layers : o.mlp_keep_layers;
  if (!list.empty() && static_cast<int64_t>(list.size()) != layers) {
    return Bad(heads ? "head_keep_layers" : "mlp_keep_layers",
               absl::StrCat(list.size(), " values for a model of ", layers,
                            " layers"));
  }
  const int64_t first = heads ? o.dense_first_heads : o.dense_first_mlp;
  const int64_t last = heads ? o.dense_last_heads : o.dense_last_mlp;
  std::vector<int64_t> kept(layers, 0);
  for (int64_t l = 0; l < layers; ++l) {
    if (l < first || l >= layers - last) continue;
    const double keep =
        list.empty() ? (heads ? o.head_keep : o.mlp_keep) : list[l];
    const int64_t k = std::clamp<int64_t>(
        static_cast<int64_t>(std::llround(keep * units)), 1, units);
    kept[l] = k == units ? 0 : k;
  }
  return kept;
}

}  // namespace dynsparse
