#include "kernels/cuda/predictor_trainer.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "kernels/cuda/predictor_train_kernels.h"
#include "methods/dejavu/labels.h"
#include "methods/dejavu/train_loop.h"

namespace dynsparse::cuda {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Kept free beside the plan below: cuBLAS's own workspace, allocation
// rounding.
constexpr int64_t kHeadroomBytes = int64_t{256} << 20;

struct PinnedFree {
  void operator()(uint8_t* p) const { (void)cudaFreeHost(p); }
};
using PinnedBuffer = std::unique_ptr<uint8_t[], PinnedFree>;

absl::StatusOr<PinnedBuffer> AllocatePinned(int64_t bytes) {
  void* p = nullptr;
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  const cudaError_t error = cudaHostAlloc(&p, size, cudaHostAllocDefault);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return CudaErrorToStatus(
        error, absl::StrFormat("cudaHostAlloc of %d bytes", size));
  }
  return PinnedBuffer(static_cast<uint8_t*>(p));
}

// `bytes` of device memory (label bitmaps, row ids) as i32 words.
absl::StatusOr<Tensor> AllocateDeviceBytes(const DeviceContext& ctx,
                                           int64_t bytes) {
  return AllocateDevice(ctx, DType::kI32,
                        {std::max<int64_t>(1, (bytes + 3) / 4)});
}

// The shapes of one layer's training, and the device memory they take.
struct Dims {
  int64_t rows = 0, train = 0, hidden = 0, units = 0, rank = 0;
  int64_t batch = 0;  // Most rows of a training step.
  int64_t chunk = 0;  // Most rows of any forward pass (steps, validation).
  int64_t row_bytes = 0;

  int64_t Params() const { return rank * hidden + units * rank; }
  // Weights, best weights, gradients and the two AdamW moments, and the
  // activations x, h, g b, z of one chunk (f32).
  int64_t WorkingBytes() const {
    return 4 * (5 * Params() + chunk * (hidden + 2 * rank + units));
  }
  // Every sample row (f16 inputs, label bitmaps) and the epoch's row ids.
  int64_t ResidentBytes() const {
    return rows * (2 * hidden + row_bytes) + 4 * train;
  }
  // One chunk of staged rows.
  int64_t StagedBytes() const { return chunk * (2 * hidden + row_bytes); }
};

struct DeviceWeights {
  Tensor a, b;  // f32 [rank, hidden], [units, rank]
};

class CudaMath : public PredictorMath {
 public:
  static absl::StatusOr<std::unique_ptr<CudaMath>> Create(
      DeviceContext& ctx, const LayerSamples& s, const TrainOptions& o,
      const TrainSplit& split, const CudaTrainSettings& settings);

  ~CudaMath() override {
    // Queued work may still read the buffers that are freed next.
    (void)cudaStreamSynchronize(ctx_.stream());
    if (staged_ != nullptr) (void)cudaEventDestroy(staged_);
  }

  std::string device() const override { return "cuda"; }
  bool resident() const { return resident_; }

  absl::Status Start(const std::vector<float>& a,
                     const std::vector<float>& b) override {
    if (static_cast<int64_t>(a.size()) != d_.rank * d_.hidden ||
        static_cast<int64_t>(b.size()) != d_.units * d_.rank) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "initial weights of %d and %d values for rank %d, hidden %d, "
          "units %d",
          a.size(), b.size(), d_.rank, d_.hidden, d_.units));
    }
    RETURN_IF_ERROR(CopyHostToDevice(
        ctx_, Tensor::FromF32(a, {d_.rank, d_.hidden}), &current_.a));
    RETURN_IF_ERROR(CopyHostToDevice(
        ctx_, Tensor::FromF32(b, {d_.units, d_.rank}), &current_.b));
    for (DeviceWeights* w : {&m_, &v_}) {
      RETURN_IF_ERROR(FillBytes(ctx_, 0, &w->a));
      RETURN_IF_ERROR(FillBytes(ctx_, 0, &w->b));
    }
    return KeepBest();
  }

  absl::Status BeginEpoch(const std::vector<int64_t>& order) override {
    order_ = &order;
    if (!resident_) return absl::OkStatus();
    // Row ids fit i32: Create checked the row count.
    order32_.assign(order.begin(), order.end());
    DS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        order_dev_.raw_data(), order32_.data(), order32_.size() * 4,
        cudaMemcpyHostToDevice, ctx_.stream()));
    return absl::OkStatus();
  }

  absl::Status Step(const BatchStep& step) override {
    if (order_ == nullptr || step.n <= 0 || step.n > d_.batch ||
        step.start < 0 ||
        step.start + step.n > static_cast<int64_t>(order_->size())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "cuda predictor step: rows [%d, %d) of an epoch of %d (batch %d)",
          step.start, step.start + step.n,
          order_ == nullptr ? 0 : order_->size(), d_.batch));
    }
    const int64_t n = step.n;
    SampleRows rows;
    if (resident_) {
      rows.rows = order_dev_.data<int32_t>() + step.start;
    } else {
      RETURN_IF_ERROR(StageBatch(step.start, n));
    }
    RETURN_IF_ERROR(Forward(current_, rows, n));
    float* g = z_.data<float>();  // The gradient overwrites the logits.
    RETURN_IF_ERROR(BceGradient(ctx_, samples_y_.data<uint8_t>(), rows, n,
                                d_.units, step.neg_weight, step.inv_elements,
                                g));
    // Row-major M [r, c] is column-major M^T with leading dimension c; each
    // product below is written for the column-major transposes.
    // gh [n, rank] = g b:        gh^T = b^T g^T.
    RETURN_IF_ERROR(Gemm(CUBLAS_OP_N, CUBLAS_OP_N, d_.rank, n, d_.units,
                         current_.b.data<float>(), d_.rank, g, d_.units,
                         gh_.data<float>(), d_.rank));
    // grad_b [units, rank] = g^T h:  grad_b^T = h^T g.
    RETURN_IF_ERROR(Gemm(CUBLAS_OP_N, CUBLAS_OP_T, d_.rank, d_.units, n,
                         h_.data<float>(), d_.rank, g, d_.units,
                         grad_.b.data<float>(), d_.rank));
    // grad_a [rank, hidden] = gh^T x:  grad_a^T = x^T gh.
    RETURN_IF_ERROR(Gemm(CUBLAS_OP_N, CUBLAS_OP_T, d_.hidden, d_.rank, n,
                         x_.data<float>(), d_.hidden, gh_.data<float>(),
                         d_.rank, grad_.a.data<float>(), d_.hidden));
    // b before a, as the CPU trainer (neither reads the other's update).
    RETURN_IF_ERROR(AdamWUpdate(ctx_, grad_.b.data<float>(), step.adam,
                                d_.units * d_.rank, m_.b.data<float>(),
                                v_.b.data<float>(), current_.b.data<float>()));
    return AdamWUpdate(ctx_, grad_.a.data<float>(), step.adam,
                       d_.rank * d_.hidden, m_.a.data<float>(),
                       v_.a.data<float>(), current_.a.data<float>());
  }

  absl::Status Synchronize() override { return ctx_.Synchronize(); }

  absl::Status AddToCurve(WhichWeights which, int64_t begin, int64_t end,
                          RecallCurve* curve) override {
    if (begin < 0 || end > d_.rows || begin > end) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cuda predictor validation: rows [%d, %d) of %d",
                          begin, end, d_.rows));
    }
    const DeviceWeights& w = which == WhichWeights::kBest ? best_ : current_;
    logits_.resize(d_.chunk * d_.units);
    for (int64_t r = begin; r < end; r += d_.chunk) {
      const int64_t n = std::min(d_.chunk, end - r);
      SampleRows rows;
      if (resident_) {
        rows.first = r;
      } else {
        // Pageable source: the call returns once the bytes are staged.
        DS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
            samples_x_.raw_data(), s_.x.data() + r * d_.hidden,
            n * d_.hidden * 2, cudaMemcpyHostToDevice, ctx_.stream()));
      }
      RETURN_IF_ERROR(Forward(w, rows, n));
      DS_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(logits_.data(), z_.raw_data(), n * d_.units * 4,
                          cudaMemcpyDeviceToHost, ctx_.stream()));
      RETURN_IF_ERROR(ctx_.Synchronize());
      AddToRecallCurve(logits_.data(), s_.y.data() + r * d_.row_bytes, n,
                       d_.units, curve);
    }
    return absl::OkStatus();
  }

  absl::Status KeepBest() override {
    RETURN_IF_ERROR(CopyDeviceToDevice(ctx_, current_.a, &best_.a));
    return CopyDeviceToDevice(ctx_, current_.b, &best_.b);
  }

  absl::StatusOr<PredictorWeights> BestWeights() override {
    PredictorWeights out;
    ASSIGN_OR_RETURN(out.w1, ToHost(ctx_, best_.a));
    ASSIGN_OR_RETURN(out.w2, ToHost(ctx_, best_.b));
    return out;
  }

 private:
  CudaMath(DeviceContext& ctx, const LayerSamples& s, const Dims& d,
           bool resident, bool tf32)
      : ctx_(ctx),
        s_(s),
        d_(d),
        resident_(resident),
        compute_(tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F) {}

  absl::Status Allocate();

  // C [m, n] = op(A) op(B), column-major, f32.
  absl::Status Gemm(cublasOperation_t op_a, cublasOperation_t op_b, int64_t m,
                    int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc) {
    const float one = 1.0f, zero = 0.0f;
    DS_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
        ctx_.cublas(), op_a, op_b, static_cast<int>(m), static_cast<int>(n),
        static_cast<int>(k), &one, a, CUDA_R_32F, static_cast<int>(lda), b,
        CUDA_R_32F, static_cast<int>(ldb), &zero, c, CUDA_R_32F,
        static_cast<int>(ldc), compute_, CUBLAS_GEMM_DEFAULT));
    return absl::OkStatus();
  }

  // x_ = scaled input rows, h_ = x a^T, z_ = h b^T (n rows).
  absl::Status Forward(const DeviceWeights& w, SampleRows rows, int64_t n) {
    RETURN_IF_ERROR(ScaleInputRows(ctx_, samples_x_.data<uint16_t>(), rows, n,
                                   d_.hidden, x_.data<float>()));
    // h^T [rank, n] = a x^T.
    RETURN_IF_ERROR(Gemm(CUBLAS_OP_T, CUBLAS_OP_N, d_.rank, n, d_.hidden,
                         w.a.data<float>(), d_.hidden, x_.data<float>(),
                         d_.hidden, h_.data<float>(), d_.rank));
    // z^T [units, n] = b h^T.
    return Gemm(CUBLAS_OP_T, CUBLAS_OP_N, d_.units, n, d_.rank,
                w.b.data<float>(), d_.rank, h_.data<float>(), d_.rank,
                z_.data<float>(), d_.units);
  }

  // Streamed samples: gathers rows order[start, start + n) into the pinned
  // buffers and queues their upload into the staging tensors.
  absl::Status StageBatch(int64_t start, int64_t n) {
    // The previous batch's upload must have read the pinned buffers.
    DS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(staged_));
    const int64_t x_bytes = d_.hidden * 2;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = (*order_)[start + i];
      std::memcpy(pinned_x_.get() + i * x_bytes, s_.x.data() + row * d_.hidden,
                  x_bytes);
      std::memcpy(pinned_y_.get() + i * d_.row_bytes,
                  s_.y.data() + row * d_.row_bytes, d_.row_bytes);
    }
    DS_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(samples_x_.raw_data(), pinned_x_.get(), n * x_bytes,
                        cudaMemcpyHostToDevice, ctx_.stream()));
    DS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        samples_y_.raw_data(), pinned_y_.get(), n * d_.row_bytes,
        cudaMemcpyHostToDevice, ctx_.stream()));
    DS_CUDA_RETURN_IF_ERROR(cudaEventRecord(staged_, ctx_.stream()));
    return absl::OkStatus();
  }

  DeviceContext& ctx_;
  const LayerSamples& s_;
  const Dims d_;
  const bool resident_;
  const cublasComputeType_t compute_;
  DeviceWeights current_, best_, grad_, m_, v_;
  Tensor x_, h_, gh_, z_;  // f32 activations of one chunk.
  // Resident: every row (f16 inputs, bitmaps) and the epoch's row ids.
  // Streamed: one chunk of rows, staged from pinned buffers of one batch.
  Tensor samples_x_, samples_y_, order_dev_;
  PinnedBuffer pinned_x_, pinned_y_;
  cudaEvent_t staged_ = nullptr;
  const std::vector<int64_t>* order_ = nullptr;
  std::vector<int32_t> order32_;
  std::vector<float> logits_;
};

absl::Status CudaMath::Allocate() {
  auto f32 = [&](Shape shape, Tensor* t) -> absl::Status {
    ASSIGN_OR_RETURN(*t, AllocateDevice(ctx_, DType::kF32, std::move(shape)));
    return absl::OkStatus();
  };
  for (DeviceWeights* w : {&current_, &best_, &grad_, &m_, &v_}) {
    RETURN_IF_ERROR(f32({d_.rank, d_.hidden}, &w->a));
    RETURN_IF_ERROR(f32({d_.units, d_.rank}, &w->b));
  }
  RETURN_IF_ERROR(f32({d_.chunk, d_.hidden}, &x_));
  RETURN_IF_ERROR(f32({d_.chunk, d_.rank}, &h_));
  RETURN_IF_ERROR(f32({d_.chunk, d_.rank}, &gh_));
  RETURN_IF_ERROR(f32({d_.chunk, d_.units}, &z_));
  const int64_t staged_rows = resident_ ? d_.rows : d_.chunk;
  ASSIGN_OR_RETURN(samples_x_,
                   AllocateDevice(ctx_, DType::kF16, {staged_rows, d_.hidden}));
  ASSIGN_OR_RETURN(samples_y_,
                   AllocateDeviceBytes(ctx_, staged_rows * d_.row_bytes));
  if (resident_) {
    ASSIGN_OR_RETURN(order_dev_, AllocateDevice(ctx_, DType::kI32, {d_.train}));
    // Pageable sources: synchronous for the host, ordered on the stream.
    DS_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(samples_x_.raw_data(), s_.x.data(), s_.x.size() * 2,
                        cudaMemcpyHostToDevice, ctx_.stream()));
    DS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(samples_y_.raw_data(), s_.y.data(),
                                            s_.y.size(), cudaMemcpyHostToDevice,
                                            ctx_.stream()));
    return ctx_.Synchronize();
  }
  ASSIGN_OR_RETURN(pinned_x_, AllocatePinned(d_.batch * d_.hidden * 2));
  ASSIGN_OR_RETURN(pinned_y_, AllocatePinned(d_.batch * d_.row_bytes));
  DS_CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&staged_, cudaEventDisableTiming));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaMath>> CudaMath::Create(
    DeviceContext& ctx, const LayerSamples& s, const TrainOptions& o,
    const TrainSplit& split, const CudaTrainSettings& settings) {
  Dims d;
  d.rows = s.rows;
  d.train = split.train;
  d.hidden = s.hidden;
  d.units = s.units;
  d.rank = o.rank;
  d.batch = std::min(o.batch, split.train);
  d.chunk = std::min(std::max(d.batch, settings.eval_rows), s.rows);
  d.row_bytes = BitmapRowBytes(s.units);
  // cuBLAS takes int dimensions; the kernels read i32 row ids.
  for (int64_t v : {d.rows, d.hidden, d.units, d.rank, d.chunk}) {
    if (v > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "cuda predictor training: rows %d, hidden %d, units %d, rank %d, "
          "chunk %d: each must be < 2^31",
          d.rows, d.hidden, d.units, d.rank, d.chunk));
    }
  }
  size_t free_bytes = 0, total_bytes = 0;
  DS_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  const int64_t free = static_cast<int64_t>(free_bytes);
  const int64_t working = d.WorkingBytes() + kHeadroomBytes;
  bool resident = settings.residency == SampleResidency::kResident;
  if (settings.residency == SampleResidency::kAuto) {
    resident = working + d.ResidentBytes() <= free;
  }
  const int64_t need =
      working + (resident ? d.ResidentBytes() : d.StagedBytes());
  if (need > free) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cuda predictor training: %.2f GiB of device memory needed (rank %d, "
        "hidden %d, units %d, %d rows per chunk, samples %s: %.2f GiB) but "
        "%.2f GiB free",
        need / kGiB, d.rank, d.hidden, d.units, d.chunk,
        resident ? "resident" : "streamed",
        (resident ? d.ResidentBytes() : d.StagedBytes()) / kGiB, free / kGiB));
  }
  std::unique_ptr<CudaMath> math(
      new CudaMath(ctx, s, d, resident, settings.allow_tf32));
  RETURN_IF_ERROR(math->Allocate());
  return math;
}

}  // namespace

absl::StatusOr<TrainResult> TrainPredictorCuda(
    DeviceContext& ctx, const LayerSamples& samples,
    const TrainOptions& options, const CudaTrainSettings& settings,
    const TrainLog& log) {
  ASSIGN_OR_RETURN(const TrainSplit split, CheckTrainInputs(samples, options));
  if (settings.eval_rows <= 0) {
    return absl::InvalidArgumentError("eval_rows must be > 0");
  }
  RETURN_IF_ERROR(ctx.Activate());
  DS_CUBLAS_RETURN_IF_ERROR(
      cublasSetPointerMode(ctx.cublas(), CUBLAS_POINTER_MODE_HOST));
  ASSIGN_OR_RETURN(std::unique_ptr<CudaMath> math,
                   CudaMath::Create(ctx, samples, options, split, settings));
  ASSIGN_OR_RETURN(TrainResult result,
                   RunTraining(samples, options, *math, log));
  result.metrics["samples"] = math->resident() ? "resident" : "streamed";
  result.metrics["tf32"] = settings.allow_tf32;
  return result;
}

}  // namespace dynsparse::cuda
