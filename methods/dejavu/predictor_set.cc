#include "methods/dejavu/predictor_set.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/io/file_util.h"
#include "core/io/json_fields.h"
#include "core/io/json_util.h"
#include "core/io/safetensors.h"
#include "core/status_macros.h"
#include "methods/dejavu/safetensors_writer.h"

namespace dynsparse {
namespace {

std::string TensorName(int64_t layer, const char* part, const char* w) {
  return absl::StrCat("layers.", layer, ".", part, ".", w);
}

absl::StatusOr<Tensor> LoadChecked(const SafetensorsFile& file,
                                   const std::string& name,
                                   const Shape& shape) {
  ASSIGN_OR_RETURN(Tensor t, file.Load(name, DType::kF16));
  if (t.shape() != shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        file.path(), ": tensor '", name, "': shape ", ShapeToString(t.shape()),
        ", expected ", ShapeToString(shape)));
  }
  // A private copy: the mapping goes away with `file`.
  return t.ConvertTo(DType::kF16);
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-a, a] with a = sqrt(3 / cols): variance 1/cols.
Tensor RandomMatrix(int64_t rows, int64_t cols, uint64_t stream) {
  Tensor t = Tensor::Zeros(DType::kF16, {rows, cols});
  uint16_t* out = t.data<uint16_t>();
  const float a = std::sqrt(3.0f / static_cast<float>(cols));
  const int64_t n = rows * cols;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = SplitMix64(stream ^ (static_cast<uint64_t>(i) << 1));
    const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
    out[i] = F32ToF16(a * (2.0f * u - 1.0f));
  }
  return t;
}

}  // namespace

std::string ModelFingerprint(const ModelConfig& c) {
  return absl::StrCat(c.model_type, " L", c.num_layers, " d", c.hidden_size,
                      " ffn", c.intermediate_size, " H", c.num_heads, " KV",
                      c.num_kv_heads, " hd", c.head_dim, " V", c.vocab_size,
                      " ", c.gated_mlp ? "gated-" : "",
                      ActivationName(c.activation));
}

absl::Status CheckMadeFor(const JsonFields& f, const ModelConfig& config,
                          absl::string_view made) {
  ASSIGN_OR_RETURN(const std::string fingerprint,
                   f.String("model_fingerprint"));
  if (fingerprint != ModelFingerprint(config)) {
    return f.Error(
        "model_fingerprint",
        absl::StrCat(made, " for '", fingerprint, "' but the model is '",
                     ModelFingerprint(config), "'"));
  }
  if (!f.Has("weights_id") || config.weights_id.empty()) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const std::string id, f.String("weights_id"));
  if (id == config.weights_id) return absl::OkStatus();
  return f.Error(
      "weights_id",
      absl::StrCat(made, " for weights ", id, " but the model's are ",
                   config.weights_id,
                   " (same architecture, other weights: run `dynsparse "
                   "calibrate` for this checkpoint)"));
}

void RecordWeightsId(const ModelConfig& config, nlohmann::json& meta) {
  if (!config.weights_id.empty()) meta["weights_id"] = config.weights_id;
}

int64_t DefaultMlpRank(const ModelConfig& config) {
  return std::max<int64_t>(8, std::min<int64_t>(1000, config.hidden_size / 3));
}

int64_t DefaultHeadRank(const ModelConfig& config) {
  return std::max<int64_t>(8, std::min<int64_t>(512, config.hidden_size / 6));
}

absl::StatusOr<PredictorSet> LoadPredictors(const std::string& dir,
                                            const ModelConfig& config) {
  if (!IsDirectory(dir)) {
    return absl::NotFoundError(absl::StrCat(
        "predictors '", dir,
        "': no such folder (make it with `dynsparse calibrate --train`)"));
  }
  const std::string json_path = JoinPath(dir, kPredictorsJson);
  if (!IsRegularFile(json_path)) {
    return absl::NotFoundError(absl::StrCat(
        json_path, ": missing (make it with `dynsparse calibrate --train`)"));
  }
  ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(json_path, 64 << 20));
  PredictorSet set;
  ASSIGN_OR_RETURN(set.metadata, ParseJson(text, json_path));
  if (!set.metadata.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(json_path, ": expected a JSON object"));
  }
  const JsonFields f(set.metadata, json_path);
  ASSIGN_OR_RETURN(const std::string format, f.String("format"));
  if (format != kPredictorsFormat) {
    return f.Error("format", absl::StrCat("'", format, "', expected '",
                                          kPredictorsFormat, "'"));
  }
  RETURN_IF_ERROR(CheckMadeFor(f, config, "trained"));
  ASSIGN_OR_RETURN(const std::string input, f.String("input"));
  if (input != kInputConvention) {
    return f.Error("input", absl::StrCat("'", input, "', expected '",
                                         kInputConvention, "'"));
  }
  ASSIGN_OR_RETURN(const int64_t layers, f.Int("num_layers"));
  if (layers != config.num_layers) {
    return f.Error("num_layers", absl::StrCat(layers, " but the model has ",
                                              config.num_layers));
  }
  ASSIGN_OR_RETURN(set.mlp_rank, f.Int("mlp_rank"));
  ASSIGN_OR_RETURN(set.head_rank, f.Int("head_rank"));
  if (set.mlp_rank <= 0) return f.Error("mlp_rank", "must be > 0");
  if (set.head_rank <= 0) return f.Error("head_rank", "must be > 0");

  const std::string st_path = JoinPath(dir, kPredictorsFile);
  ASSIGN_OR_RETURN(const SafetensorsFile file, SafetensorsFile::Open(st_path));
  const int64_t d = config.hidden_size;
  for (int64_t l = 0; l < layers; ++l) {
    PredictorWeights mlp, heads;
    ASSIGN_OR_RETURN(mlp.w1, LoadChecked(file, TensorName(l, "mlp", "w1"),
                                         {set.mlp_rank, d}));
    ASSIGN_OR_RETURN(mlp.w2,
                     LoadChecked(file, TensorName(l, "mlp", "w2"),
                                 {config.intermediate_size, set.mlp_rank}));
    ASSIGN_OR_RETURN(heads.w1, LoadChecked(file, TensorName(l, "heads", "w1"),
                                           {set.head_rank, d}));
    ASSIGN_OR_RETURN(heads.w2, LoadChecked(file, TensorName(l, "heads", "w2"),
                                           {config.num_heads, set.head_rank}));
    set.mlp.push_back(std::move(mlp));
    set.heads.push_back(std::move(heads));
  }
  return set;
}

absl::Status SavePredictors(const std::string& dir, const ModelConfig& config,
                            const PredictorSet& set) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t l = 0; l < set.mlp.size(); ++l) {
    const int64_t layer = static_cast<int64_t>(l);
    tensors.emplace_back(TensorName(layer, "mlp", "w1"),
                         set.mlp[l].w1.ConvertTo(DType::kF16));
    tensors.emplace_back(TensorName(layer, "mlp", "w2"),
                         set.mlp[l].w2.ConvertTo(DType::kF16));
    tensors.emplace_back(TensorName(layer, "heads", "w1"),
                         set.heads[l].w1.ConvertTo(DType::kF16));
    tensors.emplace_back(TensorName(layer, "heads", "w2"),
                         set.heads[l].w2.ConvertTo(DType::kF16));
  }
  const std::string fingerprint = ModelFingerprint(config);
  RETURN_IF_ERROR(WriteSafetensors(JoinPath(dir, kPredictorsFile), tensors,
                                   {{"model_fingerprint", fingerprint}}));
  nlohmann::json meta = set.metadata;
  meta["format"] = kPredictorsFormat;
  meta["model_fingerprint"] = fingerprint;
  RecordWeightsId(config, meta);
  meta["input"] = kInputConvention;
  meta["num_layers"] = config.num_layers;
  meta["mlp_rank"] = set.mlp_rank;
  meta["head_rank"] = set.head_rank;
  return WriteFileAtomically(JoinPath(dir, kPredictorsJson),
                             meta.dump(2) + "\n");
}

PredictorWeights RandomPredictorLayer(const ModelConfig& config, bool heads,
                                      int64_t rank, int64_t layer,
                                      uint64_t seed) {
  const uint64_t stream = SplitMix64(
      seed * 1000003ull + static_cast<uint64_t>(layer) * 2 + (heads ? 1 : 0));
  const int64_t units = heads ? config.num_heads : config.intermediate_size;
  return {RandomMatrix(rank, config.hidden_size, SplitMix64(stream)),
          RandomMatrix(units, rank, SplitMix64(stream + 1))};
}

}  // namespace dynsparse
