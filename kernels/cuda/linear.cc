#include "kernels/cuda/linear.h"

#include "absl/strings/str_cat.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/graph_ops.h"

namespace dynsparse::cuda {
namespace {

cudaDataType_t CudaType(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// y [n, out] f32 = x [n, in] times w (+ bias), one cuBLAS GEMM, for w stored
// [out, in] (Linear) or, with w_transposed, [in, out] (LinearTransposed).
// x is rounded to w's dtype when they differ (f16/bf16 weights).
absl::Status RowMajorGemm(DeviceContext& ctx, DevicePool& pool, const Tensor& x,
                          const Tensor& w, bool w_transposed,
                          const Tensor& bias, Tensor* y) {
  const int64_t n = x.dim(0), in = x.dim(1), out = y->dim(1);
  Tensor a = x;
  if (w.dtype() != x.dtype()) {
    absl::StatusOr<Tensor> rounded = pool.Allocate(w.dtype(), x.shape());
    if (!rounded.ok()) return rounded.status();
    if (absl::Status s = ConvertF32(ctx, x, &*rounded); !s.ok()) return s;
    a = *rounded;
  }
  // Row-major y[n, out] is column-major y^T[out, n] = W x^T, x^T being
  // [in, n] column-major. Row-major w [out, in] is column-major [in, out],
  // used transposed; row-major w [in, out] is column-major [out, in] as is.
  const float alpha = 1.0f, beta = 0.0f;
  DS_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
      ctx.cublas(), w_transposed ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N,
      static_cast<int>(out), static_cast<int>(n), static_cast<int>(in), &alpha,
      w.raw_data(), CudaType(w.dtype()),
      static_cast<int>(w_transposed ? out : in), a.raw_data(),
      CudaType(a.dtype()), static_cast<int>(in), &beta, y->raw_data(),
      CUDA_R_32F, static_cast<int>(out), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
  if (!bias.empty()) return AddBias(ctx, bias, y);
  return absl::OkStatus();
}

}  // namespace

bool RoundsInputForLinear(const Tensor& x, const Tensor& w) {
  return x.rank() == 2 && x.dtype() == DType::kF32 &&
         x.dim(0) > kGemvMaxBatch &&
         (w.dtype() == DType::kF16 || w.dtype() == DType::kBF16);
}

absl::Status Linear(DeviceContext& ctx, DevicePool& pool, const Tensor& x,
                    const Tensor& w, const Tensor& bias, Tensor* y,
                    std::optional<Activation> activation) {
  if (x.rank() != 2 || w.rank() != 2 || y->rank() != 2 ||
      x.dim(1) != w.dim(1) || y->dim(0) != x.dim(0) || y->dim(1) != w.dim(0) ||
      (x.dtype() != DType::kF32 &&
       (x.dtype() != w.dtype() || x.dim(0) <= kGemvMaxBatch)) ||
      y->dtype() != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear: x ", x.DebugString(), " w ", w.DebugString(),
                     " y ", y->DebugString()));
  }
  const int64_t n = x.dim(0);
  if (n == 0) return absl::OkStatus();
  if (n <= kGemvMaxBatch) {
    GemvOptions options;
    options.activation = activation;
    return Gemv(ctx, x, w, bias, y, options);
  }

  if (absl::Status s =
          RowMajorGemm(ctx, pool, x, w, /*w_transposed=*/false, bias, y);
      !s.ok()) {
    return s;
  }
  if (activation.has_value()) return Activate(ctx, *activation, y);
  return absl::OkStatus();
}

absl::Status LinearTransposed(DeviceContext& ctx, DevicePool& pool,
                              const Tensor& x, const Tensor& w_t,
                              const Tensor& bias, Tensor* y) {
  if (!RoundsInputForLinear(x, w_t) || y->rank() != 2 ||
      x.dim(1) != w_t.dim(0) || y->dim(0) != x.dim(0) ||
      y->dim(1) != w_t.dim(1) || y->dtype() != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear (transposed weight): x ", x.DebugString(), " w_t ",
                     w_t.DebugString(), " y ", y->DebugString()));
  }
  return RowMajorGemm(ctx, pool, x, w_t, /*w_transposed=*/true, bias, y);
}

absl::Status LinearBatched(DeviceContext& ctx, const Tensor& x,
                           const Tensor& w_first, int64_t count,
                           Tensor* y_first) {
  if (x.rank() != 2 || w_first.rank() != 2 || y_first->rank() != 2 ||
      count < 1 || x.dtype() != w_first.dtype() || x.dim(0) <= kGemvMaxBatch ||
      x.dim(1) != w_first.dim(1) || y_first->dim(0) != x.dim(0) ||
      y_first->dim(1) != w_first.dim(0) || y_first->dtype() != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batched linear: x ", x.DebugString(), " w ", w_first.DebugString(),
        " x ", count, " y ", y_first->DebugString()));
  }
  const int64_t n = x.dim(0);
  const int64_t out = w_first.dim(0);
  const int64_t in = w_first.dim(1);
  const float alpha = 1.0f, beta = 0.0f;
  // As in Linear, column-major: y_i^T [out, n] = w_i^T^T x^T; x is shared
  // (stride 0), the weights and outputs follow each other.
  DS_CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
      ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out),
      static_cast<int>(n), static_cast<int>(in), &alpha, w_first.raw_data(),
      CudaType(w_first.dtype()), static_cast<int>(in), out * in, x.raw_data(),
      CudaType(x.dtype()), static_cast<int>(in), 0, &beta, y_first->raw_data(),
      CUDA_R_32F, static_cast<int>(out), n * out, static_cast<int>(count),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

}  // namespace dynsparse::cuda
