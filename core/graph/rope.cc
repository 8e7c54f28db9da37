#include "core/graph/rope.h"

#include <cmath>
#include <numbers>

namespace dynsparse {
namespace {

void ApplyLlama3Scaling(const RopeScaling& s, std::vector<double>* inv_freq) {
  const double old_context =
      static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  for (double& f : *inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen > low_freq_wavelen) {
      f = f / s.factor;  // Long wavelengths: fully interpolated.
    } else if (wavelen >= high_freq_wavelen) {
      // Medium band: blend interpolated and original frequencies.
      const double smooth = (old_context / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      f = (1.0 - smooth) * f / s.factor + smooth * f;
    }  // Short wavelengths stay unscaled.
  }
}

}  // namespace

RopeTable MakeRopeTable(const ModelConfig& config) {
  RopeTable table;
  if (config.family != ModelFamily::kLlama) return table;
  table.head_dim = config.head_dim;
  const int64_t half = config.head_dim / 2;
  table.inv_freq.resize(half);
  for (int64_t i = 0; i < half; ++i) {
    // transformers computes the exponent in float32; keep that rounding so the
    // tables agree to the last bit of the f32 angle.
    const float exponent =
        static_cast<float>(2 * i) / static_cast<float>(config.head_dim);
    table.inv_freq[i] =
        static_cast<float>(1.0 / std::pow(config.rope_theta, exponent));
  }
  switch (config.rope_scaling.kind) {
    case RopeScalingKind::kNone:
      break;
    case RopeScalingKind::kLinear:
      for (double& f : table.inv_freq) f /= config.rope_scaling.factor;
      break;
    case RopeScalingKind::kLlama3:
      ApplyLlama3Scaling(config.rope_scaling, &table.inv_freq);
      break;
  }
  return table;
}

}  // namespace dynsparse
