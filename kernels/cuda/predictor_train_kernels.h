// The elementwise and per-row kernels of the CUDA predictor trainer
// (predictor_trainer.h; its GEMMs are cuBLAS's). Each computes what
// methods/dejavu/trainer.cc computes on the CPU, in the same expression
// order; they are not bit-identical: expf is not Eigen's vectorised exp, and
// either compiler may fuse a multiply and an add (nvcc by default, g++ for
// C++ on an FMA host). Pointers are device memory; every call queues on
// ctx's stream and reports the launch status.
#ifndef DYNSPARSE_KERNELS_CUDA_PREDICTOR_TRAIN_KERNELS_H_
#define DYNSPARSE_KERNELS_CUDA_PREDICTOR_TRAIN_KERNELS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/device_context.h"
#include "methods/dejavu/adamw.h"

namespace dynsparse::cuda {

// Which sample row batch row i reads: rows[i] when `rows` is set (the
// epoch's permutation, uploaded once per epoch), else first + i (rows that
// were staged contiguously, or a validation range).
struct SampleRows {
  const int32_t* rows = nullptr;
  int64_t first = 0;
};

// out[i, :] = x[row(i), :] * s, x f16 bits [*, hidden], out f32 [n, hidden],
// s = (float)(1 / sqrt(sum(x^2) / hidden + 1e-12)) with the sum in f64.
absl::Status ScaleInputRows(DeviceContext& ctx, const uint16_t* x,
                            SampleRows rows, int64_t n, int64_t hidden,
                            float* out);

// In place over z f32 [n, units], with y = bit j of label row row(i)
// (bitmap rows of ceil(units / 8) bytes, labels.h):
//   z[i, j] = (sigmoid(z) - y) * (y + neg_weight * (1 - y)) * inv_elements.
absl::Status BceGradient(DeviceContext& ctx, const uint8_t* labels,
                         SampleRows rows, int64_t n, int64_t units,
                         float neg_weight, float inv_elements, float* z);

// One AdamW step (methods/dejavu/adamw.h's expressions) on `count`
// parameters p with moments m, v and gradient g.
absl::Status AdamWUpdate(DeviceContext& ctx, const float* g,
                         const AdamWScalars& s, int64_t count, float* m,
                         float* v, float* p);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_PREDICTOR_TRAIN_KERNELS_H_
