// DejaVu predictor training on a GPU: methods/dejavu/train_loop.h's loop
// (same seed -> same initial weights, same shuffled batches as the CPU
// trainer) with the math on the device: the four GEMMs of a step with
// cuBLAS in f32, the input scaling, label expansion + class-weighted BCE
// gradient and AdamW as small kernels (predictor_train_kernels.h).
//
// A layer's samples (f16 inputs and label bitmaps) are uploaded once when
// they fit beside the training buffers in the device's free memory, and the
// epoch's permutation once per epoch; otherwise each batch's rows are
// gathered on the host into pinned memory and uploaded (the upload of batch
// k+1 waits only for that of batch k). Validation computes the logits on the
// device and ranks them on the host (recall_curve.h), chunk by chunk.
#ifndef DYNSPARSE_KERNELS_CUDA_PREDICTOR_TRAINER_H_
#define DYNSPARSE_KERNELS_CUDA_PREDICTOR_TRAINER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "kernels/cuda/device_context.h"
#include "methods/dejavu/trainer.h"

namespace dynsparse::cuda {

enum class SampleResidency {
  kAuto,      // Resident when the samples fit, else streamed.
  kResident,  // ResourceExhausted when they do not fit.
  kStreamed,
};

struct CudaTrainSettings {
  SampleResidency residency = SampleResidency::kAuto;
  // TF32 tensor cores in the GEMMs (CUBLAS_COMPUTE_32F_FAST_TF32): faster,
  // but products keep 10 mantissa bits, so the weights no longer track the
  // CPU trainer's. Off: CUBLAS_COMPUTE_32F under the handle's default math
  // mode, i.e. plain f32 (nothing in this repository enables TF32 on a
  // handle; NVIDIA_TF32_OVERRIDE=1 in the environment would).
  bool allow_tf32 = false;
  int64_t eval_rows = 2048;  // Validation rows per logits chunk (at least).
};

// Trains on ctx's device. metrics["device"] = "cuda", metrics["samples"] =
// "resident" | "streamed", metrics["tf32"]. Errors: train_loop.h's input
// checks, ResourceExhausted naming the bytes needed and free, CUDA/cuBLAS
// failures as Status.
absl::StatusOr<TrainResult> TrainPredictorCuda(
    DeviceContext& ctx, const LayerSamples& samples,
    const TrainOptions& options, const CudaTrainSettings& settings = {},
    const TrainLog& log = nullptr);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_PREDICTOR_TRAINER_H_
