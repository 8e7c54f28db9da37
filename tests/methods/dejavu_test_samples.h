// Synthetic predictor-training samples for the trainer tests (CPU and CUDA):
// inputs Normal(0, 1) times a per-row scale in [0.5, 4) (the trainers scale
// rows to unit RMS), stored as f16; unit j is labelled when the input's
// projection on a random rank-4 teacher direction exceeds 0.67 standard
// deviations, so about a quarter of the units are positive and a rank >= 4
// predictor can rank them well. TeacherTrainOptions: the small training
// setting both trainer tests use on them.
#ifndef DYNSPARSE_TESTS_METHODS_DEJAVU_TEST_SAMPLES_H_
#define DYNSPARSE_TESTS_METHODS_DEJAVU_TEST_SAMPLES_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "methods/dejavu/calibration.h"
#include "methods/dejavu/labels.h"
#include "methods/dejavu/trainer.h"

namespace dynsparse::testing {

inline LayerSamples TeacherSamples(int64_t rows, int64_t hidden, int64_t units,
                                   uint64_t seed) {
  constexpr int64_t kTeacherRank = 4;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> row_scale(0.5f, 4.0f);
  // Teacher t = u v: u [hidden, r], v [r, units].
  std::vector<float> u(hidden * kTeacherRank), v(kTeacherRank * units);
  for (float& w : u) w = normal(rng);
  for (float& w : v) w = normal(rng);
  LayerSamples s;
  s.rows = rows;
  s.hidden = hidden;
  s.units = units;
  s.x.resize(rows * hidden);
  const int64_t bytes = BitmapRowBytes(units);
  s.y.assign(rows * bytes, 0);
  std::vector<float> x(hidden);
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = row_scale(rng);
    for (int64_t j = 0; j < hidden; ++j) {
      s.x[r * hidden + j] = F32ToF16(normal(rng) * scale);
      x[j] = F16ToF32(s.x[r * hidden + j]) / scale;
    }
    float p[kTeacherRank] = {};
    for (int64_t k = 0; k < kTeacherRank; ++k) {
      for (int64_t j = 0; j < hidden; ++j)
        p[k] += x[j] * u[j * kTeacherRank + k];
    }
    for (int64_t j = 0; j < units; ++j) {
      float score = 0.0f;
      for (int64_t k = 0; k < kTeacherRank; ++k)
        score += p[k] * v[k * units + j];
      // score ~ Normal(0, hidden * kTeacherRank).
      const float sd = std::sqrt(static_cast<float>(hidden * kTeacherRank));
      if (score > 0.67f * sd) s.y[r * bytes + j / 8] |= uint8_t(1u << (j % 8));
    }
  }
  return s;
}

// Rank 8, batches of 128, 6 epochs at lr 3e-3, 10% validation, seed 7. Every
// epoch runs (no early stop): on TeacherSamples(2000, 48, 100, 1) the CPU's
// validation recall@25 rises 0.31, 0.38, 0.49, 0.57, 0.63, 0.69.
inline TrainOptions TeacherTrainOptions() {
  TrainOptions o;
  o.rank = 8;
  o.batch = 128;
  o.epochs = 6;
  o.lr = 3e-3;
  o.val_fraction = 0.1;
  o.seed = 7;
  o.patience = 100;
  o.stop_recall = 2.0;
  return o;
}

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_METHODS_DEJAVU_TEST_SAMPLES_H_
