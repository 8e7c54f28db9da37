// Elementwise kernels: a grid-stride loop over float4s (when both operands
// are 16-byte aligned) and a scalar tail. Formulas match kernels/cpu
// (expf/erff/tanhf are the accurate CUDA versions, within a few ulp).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/cuda_utils.cuh"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 256;

// out = act(in) (in may alias out).
template <Activation A>
struct ActOp {
  __device__ float operator()(float in, float /*out*/) const {
    return Act<A>(in);
  }
};
// out = out * act(in): the gated MLP, in = gate, out = up.
template <Activation A>
struct GatedOp {
  __device__ float operator()(float gate, float up) const {
    return up * Act<A>(gate);
  }
};
struct AddOp {
  __device__ float operator()(float in, float out) const { return out + in; }
};

// out[i] = op(in[i], out[i]); the first n_vec float4s vectorised.
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    ElementwiseKernel(const float* in, float* out, int64_t n, int64_t n_vec,
                      Op op) {
  PdlWait();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  float4* out4 = reinterpret_cast<float4*>(out);
  for (int64_t i = tid; i < n_vec; i += stride) {
    const float4 a = in4[i];
    float4 o = out4[i];
    o.x = op(a.x, o.x);
    o.y = op(a.y, o.y);
    o.z = op(a.z, o.z);
    o.w = op(a.w, o.w);
    out4[i] = o;
  }
  for (int64_t i = 4 * n_vec + tid; i < n; i += stride)
    out[i] = op(in[i], out[i]);
}

// out[i] = round(up[i] * act(gate[i])) in T: the gated product straight into
// the dtype a cuBLAS GEMM reads, with the same rounding as ConvertF32; float4
// loads over the first n_vec quads when the pointers allow.
template <Activation A, typename T>
__global__ void __launch_bounds__(kThreads)
    GatedRoundedKernel(const float* gate, const float* up, T* out, int64_t n,
                       int64_t n_vec) {
  PdlWait();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < n_vec; i += stride) {
    const float4 g = reinterpret_cast<const float4*>(gate)[i];
    const float4 u = reinterpret_cast<const float4*>(up)[i];
    StoreRounded4(out + 4 * i,
                  make_float4(u.x * Act<A>(g.x), u.y * Act<A>(g.y),
                              u.z * Act<A>(g.z), u.w * Act<A>(g.w)));
  }
  for (int64_t i = 4 * n_vec + tid; i < n; i += stride) {
    StoreRounded(out + i, up[i] * Act<A>(gate[i]));
  }
}

__global__ void __launch_bounds__(kThreads)
    AddBiasKernel(float* y, int64_t n, int64_t cols, const void* bias,
                  FloatKind kind) {
  PdlWait();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    y[i] += LoadAsFloat(bias, kind, i % cols, 0.0f);
  }
}

int GridFor(const DeviceContext& ctx, int64_t work_items) {
  return static_cast<int>(std::clamp<int64_t>(CeilDiv(work_items, kThreads), 1,
                                              int64_t{8} * ctx.sm_count()));
}

template <typename Op>
absl::Status LaunchElementwise(DeviceContext& ctx, const float* in, float* out,
                               int64_t n, Op op, const char* name) {
  if (n == 0) return absl::OkStatus();
  const bool aligned = IsAligned(in, 16) && IsAligned(out, 16);
  const int64_t n_vec = aligned ? n / 4 : 0;
  RETURN_IF_ERROR(ctx.Activate());
  LaunchKernel(ctx.programmatic_launch(), ElementwiseKernel<Op>,
               dim3(GridFor(ctx, std::max<int64_t>(n_vec, n - 4 * n_vec))),
               dim3(kThreads), 0, ctx.stream(), in, out, n, n_vec, op);
  return LastLaunchStatus(name);
}

absl::Status CheckF32(const Tensor& t, absl::string_view what) {
  RETURN_IF_ERROR(CheckOnDevice(t, what));
  if (t.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be f32, got ", t.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Activate(DeviceContext& ctx, Activation activation, Tensor* x) {
  RETURN_IF_ERROR(CheckF32(*x, "Activate x"));
  float* p = x->data<float>();
  const int64_t n = x->numel();
  switch (activation) {
    case Activation::kRelu:
      return LaunchElementwise(ctx, p, p, n, ActOp<Activation::kRelu>(),
                               "Relu");
    case Activation::kSilu:
      return LaunchElementwise(ctx, p, p, n, ActOp<Activation::kSilu>(),
                               "Silu");
    case Activation::kGelu:
      return LaunchElementwise(ctx, p, p, n, ActOp<Activation::kGelu>(),
                               "Gelu");
    case Activation::kGeluTanh:
      return LaunchElementwise(ctx, p, p, n, ActOp<Activation::kGeluTanh>(),
                               "GeluTanh");
  }
  return absl::InvalidArgumentError("unknown activation");
}

absl::Status GatedActivate(DeviceContext& ctx, Activation activation,
                           const Tensor& gate, Tensor* up) {
  RETURN_IF_ERROR(CheckF32(gate, "GatedActivate gate"));
  RETURN_IF_ERROR(CheckF32(*up, "GatedActivate up"));
  if (gate.numel() != up->numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GatedActivate gate ", gate.DebugString(), " and up ",
                     up->DebugString(), " differ in size"));
  }
  const float* g = gate.data<float>();
  float* u = up->data<float>();
  const int64_t n = up->numel();
  switch (activation) {
    case Activation::kRelu:
      return LaunchElementwise(ctx, g, u, n, GatedOp<Activation::kRelu>(),
                               "GatedRelu");
    case Activation::kSilu:
      return LaunchElementwise(ctx, g, u, n, GatedOp<Activation::kSilu>(),
                               "SwiGLU");
    case Activation::kGelu:
      return LaunchElementwise(ctx, g, u, n, GatedOp<Activation::kGelu>(),
                               "GeGLU");
    case Activation::kGeluTanh:
      return LaunchElementwise(ctx, g, u, n, GatedOp<Activation::kGeluTanh>(),
                               "GeGLUTanh");
  }
  return absl::InvalidArgumentError("unknown activation");
}

namespace {

template <Activation A>
absl::Status LaunchGatedRounded(DeviceContext& ctx, const Tensor& gate,
                                const Tensor& up, Tensor* out) {
  const int64_t n = up.numel();
  if (n == 0) return absl::OkStatus();
  RETURN_IF_ERROR(ctx.Activate());
  const bool vec = IsAligned(gate.raw_data(), 16) &&
                   IsAligned(up.raw_data(), 16) &&
                   IsAligned(out->raw_data(), 4 * DTypeSize(out->dtype()));
  const int64_t n_vec = vec ? n / 4 : 0;
  const dim3 grid(GridFor(ctx, std::max<int64_t>(n_vec, n - 4 * n_vec)));
  if (out->dtype() == DType::kF16) {
    LaunchKernel(ctx.programmatic_launch(), GatedRoundedKernel<A, __half>, grid,
                 dim3(kThreads), 0, ctx.stream(), gate.data<float>(),
                 up.data<float>(), out->data<__half>(), n, n_vec);
  } else {
    LaunchKernel(ctx.programmatic_launch(),
                 GatedRoundedKernel<A, __nv_bfloat16>, grid, dim3(kThreads), 0,
                 ctx.stream(), gate.data<float>(), up.data<float>(),
                 out->data<__nv_bfloat16>(), n, n_vec);
  }
  return LastLaunchStatus("GatedActivateRounded");
}

}  // namespace

absl::Status GatedActivateRounded(DeviceContext& ctx, Activation activation,
                                  const Tensor& gate, const Tensor& up,
                                  Tensor* out) {
  RETURN_IF_ERROR(CheckF32(gate, "GatedActivateRounded gate"));
  RETURN_IF_ERROR(CheckF32(up, "GatedActivateRounded up"));
  RETURN_IF_ERROR(CheckOnDevice(*out, "GatedActivateRounded out"));
  if (gate.numel() != up.numel() || out->numel() != up.numel() ||
      (out->dtype() != DType::kF16 && out->dtype() != DType::kBF16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GatedActivateRounded wants f32 gate and up and an f16/bf16 out of "
        "one size, got gate ",
        gate.DebugString(), ", up ", up.DebugString(), ", out ",
        out->DebugString()));
  }
  switch (activation) {
    case Activation::kRelu:
      return LaunchGatedRounded<Activation::kRelu>(ctx, gate, up, out);
    case Activation::kSilu:
      return LaunchGatedRounded<Activation::kSilu>(ctx, gate, up, out);
    case Activation::kGelu:
      return LaunchGatedRounded<Activation::kGelu>(ctx, gate, up, out);
    case Activation::kGeluTanh:
      return LaunchGatedRounded<Activation::kGeluTanh>(ctx, gate, up, out);
  }
  return absl::InvalidArgumentError("unknown activation");
}

absl::Status AddBias(DeviceContext& ctx, const Tensor& bias, Tensor* y) {
  RETURN_IF_ERROR(CheckF32(*y, "AddBias y"));
  RETURN_IF_ERROR(CheckOnDevice(bias, "AddBias bias"));
  if (y->rank() != 2 || ToFloatKind(bias.dtype()) == FloatKind::kNone ||
      bias.numel() != y->dim(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("AddBias wants y [rows, cols] and a floating bias [cols], "
                     "got y ",
                     y->DebugString(), " and bias ", bias.DebugString()));
  }
  const int64_t n = y->numel();
  if (n == 0) return absl::OkStatus();
  RETURN_IF_ERROR(ctx.Activate());
  AddBiasKernel<<<GridFor(ctx, n), kThreads, 0, ctx.stream()>>>(
      y->data<float>(), n, y->dim(1), bias.raw_data(),
      ToFloatKind(bias.dtype()));
  return LastLaunchStatus("AddBias");
}

absl::Status AddInPlace(DeviceContext& ctx, const Tensor& x, Tensor* y) {
  RETURN_IF_ERROR(CheckF32(x, "AddInPlace x"));
  RETURN_IF_ERROR(CheckF32(*y, "AddInPlace y"));
  if (x.numel() != y->numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AddInPlace x ", x.DebugString(), " and y ",
                     y->DebugString(), " differ in size"));
  }
  return LaunchElementwise(ctx, x.data<float>(), y->data<float>(), y->numel(),
                           AddOp(), "AddInPlace");
}

}  // namespace dynsparse::cuda
