// RoPE base and scaling. transformers 4.x writes rope_theta at the top level
// and rope_scaling {type|rope_type, factor, ...}; 5.x folds both into
// rope_parameters {rope_type, rope_theta, factor, ...}.
#include "absl/strings/str_cat.h"
#include "core/io/hf_config_internal.h"
#include "core/status_macros.h"

namespace dynsparse::hf_config_internal {
namespace {

constexpr double kDefaultRopeTheta = 10000.0;

absl::StatusOr<double> PositiveDouble(const JsonFields& fields,
                                      absl::string_view field) {
  ASSIGN_OR_RETURN(const double value, fields.Double(field));
  if (!(value > 0.0)) {
    return fields.Error(field, absl::StrCat("must be positive, got ", value));
  }
  return value;
}

absl::Status ParseLlama3(const JsonFields& rope, RopeScaling& scaling) {
  ASSIGN_OR_RETURN(scaling.low_freq_factor,
                   PositiveDouble(rope, "low_freq_factor"));
  ASSIGN_OR_RETURN(scaling.high_freq_factor,
                   PositiveDouble(rope, "high_freq_factor"));
  // The llama3 formula divides by (high - low).
  if (scaling.high_freq_factor <= scaling.low_freq_factor) {
    return rope.Error(
        "high_freq_factor",
        absl::StrCat("must exceed low_freq_factor (", scaling.high_freq_factor,
                     " <= ", scaling.low_freq_factor, ")"));
  }
  ASSIGN_OR_RETURN(
      scaling.original_max_position_embeddings,
      PositiveInt(rope, "original_max_position_embeddings", kMaxPositions));
  return absl::OkStatus();
}

// Reads the scaling kind and its parameters from a rope_scaling or
// rope_parameters object.
absl::Status ParseScaling(const JsonFields& rope, RopeScaling& scaling) {
  // 4.x wrote "type" before "rope_type"; prefer the newer key when both exist.
  const absl::string_view type_field =
      (rope.Has("rope_type") || !rope.Has("type")) ? "rope_type" : "type";
  if (!rope.Has(type_field)) {
    // 5.x keys per-layer-type parameter sets by attention type.
    for (const auto& [key, value] : rope.object().items()) {
      if (value.is_object()) {
        return absl::UnimplementedError(absl::StrCat(
            rope.label(), ": field '", rope.FieldPath(key),
            "': per-layer-type RoPE parameters are not supported"));
      }
    }
  }
  ASSIGN_OR_RETURN(const std::string type,
                   rope.StringOr(type_field, "default"));
  if (type == "default") {
    scaling = RopeScaling();
    return absl::OkStatus();
  }
  if (type != "linear" && type != "llama3") {
    return absl::UnimplementedError(
        absl::StrCat(rope.label(), ": field '", rope.FieldPath(type_field),
                     "': unsupported rope type '", type,
                     "' (supported: default, linear, llama3)"));
  }
  scaling.kind =
      type == "linear" ? RopeScalingKind::kLinear : RopeScalingKind::kLlama3;
  ASSIGN_OR_RETURN(scaling.factor, PositiveDouble(rope, "factor"));
  if (scaling.kind == RopeScalingKind::kLlama3) {
    RETURN_IF_ERROR(ParseLlama3(rope, scaling));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseRopeFields(const JsonFields& fields, ModelConfig* config) {
  double theta = kDefaultRopeTheta;
  if (fields.Has("rope_theta")) {
    ASSIGN_OR_RETURN(theta, PositiveDouble(fields, "rope_theta"));
  }
  if (fields.Has("rope_parameters")) {  // 5.x wins over stray 4.x fields.
    ASSIGN_OR_RETURN(const JsonFields rope, fields.Object("rope_parameters"));
    if (rope.Has("rope_theta")) {
      ASSIGN_OR_RETURN(theta, PositiveDouble(rope, "rope_theta"));
    }
    RETURN_IF_ERROR(ParseScaling(rope, config->rope_scaling));
  } else if (fields.Has("rope_scaling")) {
    ASSIGN_OR_RETURN(const JsonFields rope, fields.Object("rope_scaling"));
    RETURN_IF_ERROR(ParseScaling(rope, config->rope_scaling));
  }
  config->rope_theta = theta;
  return absl::OkStatus();
}

}  // namespace dynsparse::hf_config_internal
