// DejaVu's predictors: per layer, a bias-free rank-D map hidden -> D -> units
// for the MLP neurons and one for the attention heads, stored as
//   DIR/predictors.safetensors  layers.{l}.{mlp,heads}.{w1,w2} (f16,
//                               w1 [D, hidden], w2 [units, D]: HF's [out, in])
//   DIR/predictors.json         metadata: model fingerprint, ranks, input
//                               convention, label definitions, per-layer
//                               validation recall/precision (docs/dejavu.md)
//
// The input convention (one, used by calibrate, training, profile and the
// method; docs/dejavu.md "Lookahead"): each predictor reads the residual
// stream one sub-block before the block it predicts, so it can run before
// (or beside) that earlier sub-block:
//   - MLP of layer l   <- the residual entering layer l's attention block;
//   - heads of layer l <- the residual entering layer l-1's MLP block
//                         (layer 0: its own attention input, the embeddings).
#ifndef DYNSPARSE_METHODS_DEJAVU_PREDICTOR_SET_H_
#define DYNSPARSE_METHODS_DEJAVU_PREDICTOR_SET_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/io/json_fields.h"
#include "core/model_config.h"
#include "core/tensor.h"

namespace dynsparse {

inline constexpr char kPredictorsJson[] = "predictors.json";
inline constexpr char kPredictorsFile[] = "predictors.safetensors";
inline constexpr char kPredictorsFormat[] = "dynsparse-dejavu-predictors/1";
inline constexpr char kInputConvention[] =
    "lookahead: mlp[l] reads the residual entering layer l's attention; "
    "heads[l] reads the residual entering layer l-1's MLP (layer 0: the "
    "embeddings)";

struct PredictorWeights {
  Tensor w1;  // [rank, hidden]
  Tensor w2;  // [units, rank]
};

struct PredictorSet {
  int64_t mlp_rank = 0;
  int64_t head_rank = 0;
  std::vector<PredictorWeights> mlp;                   // One per layer.
  std::vector<PredictorWeights> heads;                 // One per layer.
  nlohmann::json metadata = nlohmann::json::object();  // predictors.json
};

// The architecture a predictor set was trained for, readable in errors:
// "opt L6 d384 ffn1408 H6 KV6 hd64 V8192 relu".
std::string ModelFingerprint(const ModelConfig& config);

// The metadata of `f` (predictors.json, calibration.json) against the model:
// another architecture (model_fingerprint) or the same one with other weights
// (weights_id, core/io/weights_id.h: a fine-tune, another checkpoint) is an
// error naming the field, worded "<made> for ...". Files written before ids
// existed, and models without one, pass the weights check.
absl::Status CheckMadeFor(const JsonFields& f, const ModelConfig& config,
                          absl::string_view made);
// Records the id in `meta` when the model has one.
void RecordWeightsId(const ModelConfig& config, nlohmann::json& meta);

// Default ranks when none is given: the paper's D = 1000 (MLP) and 512
// (heads) for OPT-175B's d = 12288, capped at hidden/3 and hidden/6 so small
// models get a predictor smaller than the block it predicts.
int64_t DefaultMlpRank(const ModelConfig& config);
int64_t DefaultHeadRank(const ModelConfig& config);

// Loads DIR's predictors for `config` (host f16 tensors). Errors name the
// file and the field or tensor: missing folder or file, other model,
// wrong layer count, rank or shape, truncated data.
absl::StatusOr<PredictorSet> LoadPredictors(const std::string& dir,
                                            const ModelConfig& config);

// Writes both files (safetensors first, then the JSON, each atomically) into
// an existing folder. `set.metadata` is written as is, plus the fields
// LoadPredictors checks.
absl::Status SavePredictors(const std::string& dir, const ModelConfig& config,
                            const PredictorSet& set);

// One layer of random predictor weights of rank `rank` (for timing on
// random-weight models: `predictors=random:D`): uniform entries of variance
// 1/in, from a counter-based hash so OPT-66B's 3e9 entries take seconds.
PredictorWeights RandomPredictorLayer(const ModelConfig& config, bool heads,
                                      int64_t rank, int64_t layer,
                                      uint64_t seed);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_PREDICTOR_SET_H_
