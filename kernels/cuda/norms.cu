// RMSNorm / LayerNorm: one block per row. Pass 1 reads the row (adding the
// residual and writing it back when fused) and block-reduces the f32 sum (of
// squares for RMSNorm); LayerNorm's pass 2 reduces the centred squares (two
// passes, so no cancellation in E[x^2] - E[x]^2); the last pass writes y.
// Re-reads of the row hit L1/L2: rows are at most a few tens of KB. The
// element order of each expression follows kernels/cpu so the two agree to
// f32 rounding. y may be f16/bf16: the norm then writes the rounded input a
// cuBLAS prefill GEMM reads (the bits ConvertF32 would give), instead of an
// f32 row that a second kernel rounds.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/norms.h"

namespace dynsparse::cuda {
namespace {

struct NormArgs {
  const float* x;
  float* residual;
  const void* weight;
  FloatKind weight_kind;
  const void* bias;
  FloatKind bias_kind;
  void* y;  // f32, f16 or bf16 (the kernel's TOut).
  int64_t width;
  float eps;
};

// One element of y, in the expressions of kernels/cpu.
template <bool kLayerNorm>
__device__ __forceinline__ float Normed(float x, float w, float b, float mean,
                                        float inv) {
  if constexpr (kLayerNorm) {
    return ((x - mean) * inv) * w + b;
  } else {
    return w * (x * inv);
  }
}

// 1 / sqrt(variance + eps) from the block sum of the centred squares (sq,
// LayerNorm), or 1 / sqrt(mean square + eps) from the block sum `total` of
// the squares (RMSNorm). Every thread of the block calls it.
template <bool kLayerNorm>
__device__ __forceinline__ float InverseScale(float sq, float total,
                                              float inv_width, float eps,
                                              float* scratch) {
  if constexpr (kLayerNorm) {
    const float var = BlockSum(sq, scratch) * inv_width;
    return 1.0f / sqrtf(var + eps);
  } else {
    return 1.0f / sqrtf(total * inv_width + eps);
  }
}

// Elements a thread keeps in registers: rows of up to kCached x 1024 floats
// (OPT-175B's 12288) take the cached kernel, wider ones re-read the row
// (kPerThread = 0).
constexpr int kCached = 12;

// kPerThread > 0: thread t holds elements t + j * blockDim.x (j < kPerThread)
// of the row, and of the weight and bias, in registers, every load issued
// before anything is stored, so a pass costs one memory round trip (a decode
// row's norm took ~15 us of serial loads).
template <bool kLayerNorm, bool kResidual, typename TOut, int kPerThread>
__global__ void __launch_bounds__(1024) NormKernel(const NormArgs a) {
  PdlWait();
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * a.width;
  const float* in = a.x + offset;
  float* res = kResidual ? a.residual + offset : nullptr;
  TOut* out = static_cast<TOut*>(a.y) + offset;
  const int t = threadIdx.x;
  const int stride = blockDim.x;
  const int width = static_cast<int>(a.width);
  constexpr int kRegs = kPerThread > 0 ? kPerThread : 1;
  float v[kRegs], w[kRegs], b[kRegs];

  float sum = 0.0f;
  if constexpr (kPerThread > 0) {
    float add[kRegs];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = t + j * stride;
      v[j] = i < width ? in[i] : 0.0f;
      if constexpr (kResidual) add[j] = i < width ? res[i] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = t + j * stride;
      if (i >= width) continue;
      if constexpr (kResidual) {
        v[j] = add[j] + v[j];
        res[i] = v[j];
      }
      sum += kLayerNorm ? v[j] : v[j] * v[j];
    }
    // Weight (and bias) loads in flight during the reductions.
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = t + j * stride;
      w[j] = i < width ? LoadAsFloat(a.weight, a.weight_kind, i, 1.0f) : 0.0f;
      if constexpr (kLayerNorm) {
        b[j] = i < width ? LoadAsFloat(a.bias, a.bias_kind, i, 0.0f) : 0.0f;
      }
    }
  } else {
    for (int i = t; i < width; i += stride) {
      float x = in[i];
      if constexpr (kResidual) {
        x = res[i] + x;
        res[i] = x;
      }
      sum += kLayerNorm ? x : x * x;
    }
  }
  const float total = BlockSum(sum, scratch);
  const float inv_width = 1.0f / static_cast<float>(width);
  // After pass 1 the normalised input lives in `res` when fused.
  const float* src = kResidual ? res : in;

  float mean = 0.0f, sq = 0.0f;
  if constexpr (kLayerNorm) {
    mean = total * inv_width;
    if constexpr (kPerThread > 0) {
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const float d = v[j] - mean;
        if (t + j * stride < width) sq += d * d;
      }
    } else {
      for (int i = t; i < width; i += stride) {
        const float d = src[i] - mean;
        sq += d * d;
      }
    }
  }
  const float inv =
      InverseScale<kLayerNorm>(sq, total, inv_width, a.eps, scratch);
  const auto normed = [&](float x, float wi, float bi) {
    return Normed<kLayerNorm>(x, wi, bi, mean, inv);
  };
  if constexpr (kPerThread > 0) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = t + j * stride;
      if (i < width) StoreRounded(out + i, normed(v[j], w[j], b[j]));
    }
  } else {
    for (int i = t; i < width; i += stride) {
      const float wi = LoadAsFloat(a.weight, a.weight_kind, i, 1.0f);
      const float bi =
          kLayerNorm ? LoadAsFloat(a.bias, a.bias_kind, i, 0.0f) : 0.0f;
      StoreRounded(out + i, normed(src[i], wi, bi));
    }
  }
}

// Four consecutive weights of type TW as floats (16 or 8 bytes, aligned).
template <typename TW>
__device__ __forceinline__ float4 LoadFloat4(const void* p, int64_t quad) {
  if constexpr (std::is_same_v<TW, float>) {
    return reinterpret_cast<const float4*>(p)[quad];
  } else {
    const uint2 raw = reinterpret_cast<const uint2*>(p)[quad];
    float2 lo, hi;
    if constexpr (std::is_same_v<TW, __half>) {
      lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
      hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
    } else {
      lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
      hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
    }
    return make_float4(lo.x, lo.y, hi.x, hi.y);
  }
}

constexpr int kVecMaxThreads = 384;

// NormKernel for rows of a multiple of 4 floats: thread t holds quads t +
// j * blockDim.x (j < kQuads) of the row, weight and bias (one type TW) in
// registers. A decode row's LayerNorm in NormKernel issued ~830
// instructions a warp (per-element weight-type switches, bounds tests,
// spills) and took 11 us under Nsight Compute (results/bench/h200_run32);
// here an OPT-66B row adds 7.5 us to a decode step instead of 10
// (h200_run31 -> h200_run33).
template <bool kLayerNorm, bool kResidual, typename TOut, typename TW,
          int kQuads>
__global__ void __launch_bounds__(kVecMaxThreads) NormVecKernel(NormArgs a) {
  PdlWait();
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * a.width;
  const float4* in = reinterpret_cast<const float4*>(a.x + offset);
  float4* res =
      kResidual ? reinterpret_cast<float4*>(a.residual + offset) : nullptr;
  TOut* out = static_cast<TOut*>(a.y) + offset;
  const int t = threadIdx.x, stride = blockDim.x;
  const int quads = static_cast<int>(a.width / 4);
  float4 v[kQuads], w[kQuads], b[kQuads];
  float sum = 0.0f;
  {
    float4 add[kQuads];
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      const int q = t + j * stride;
      const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
      v[j] = q < quads ? in[q] : zero;
      if constexpr (kResidual) add[j] = q < quads ? res[q] : zero;
    }
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      const int q = t + j * stride;
      if (q >= quads) continue;
      if constexpr (kResidual) {
        v[j] = make_float4(add[j].x + v[j].x, add[j].y + v[j].y,
                           add[j].z + v[j].z, add[j].w + v[j].w);
        res[q] = v[j];
      }
      sum += kLayerNorm ? (v[j].x + v[j].y) + (v[j].z + v[j].w)
                        : (v[j].x * v[j].x + v[j].y * v[j].y) +
                              (v[j].z * v[j].z + v[j].w * v[j].w);
    }
  }
  // Weight and bias loads in flight during the reductions.
#pragma unroll
  for (int j = 0; j < kQuads; ++j) {
    const int q = t + j * stride;
    const bool inside = q < quads;
    w[j] = inside && a.weight != nullptr ? LoadFloat4<TW>(a.weight, q)
                                         : make_float4(1.f, 1.f, 1.f, 1.f);
    if constexpr (kLayerNorm) {
      b[j] = inside && a.bias != nullptr ? LoadFloat4<TW>(a.bias, q)
                                         : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  const float total = BlockSum(sum, scratch);
  const float inv_width = 1.0f / static_cast<float>(a.width);
  float mean = 0.0f, sq = 0.0f;
  if constexpr (kLayerNorm) {
    mean = total * inv_width;
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      if (t + j * stride >= quads) continue;
      const float dx = v[j].x - mean, dy = v[j].y - mean;
      const float dz = v[j].z - mean, dw = v[j].w - mean;
      sq += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
  }
  const float inv =
      InverseScale<kLayerNorm>(sq, total, inv_width, a.eps, scratch);
  const auto normed = [&](float x, float wi, float bi) {
    return Normed<kLayerNorm>(x, wi, bi, mean, inv);
  };
#pragma unroll
  for (int j = 0; j < kQuads; ++j) {
    const int q = t + j * stride;
    if (q >= quads) continue;
    const float4 bj = kLayerNorm ? b[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    StoreRounded4(out + 4 * q, make_float4(normed(v[j].x, w[j].x, bj.x),
                                           normed(v[j].y, w[j].y, bj.y),
                                           normed(v[j].z, w[j].z, bj.z),
                                           normed(v[j].w, w[j].w, bj.w)));
  }
}

absl::Status CheckVector(const Tensor& v, int64_t width,
                         absl::string_view what) {
  if (v.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(CheckOnDevice(v, what));
  if (ToFloatKind(v.dtype()) == FloatKind::kNone || v.numel() != width) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a floating [", width, "] tensor, got ",
                     v.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status CheckActivations(const Tensor& t, absl::string_view what) {
  RETURN_IF_ERROR(CheckOnDevice(t, what));
  if (t.dtype() != DType::kF32 || t.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be f32 [rows, width], got ", t.DebugString()));
  }
  return absl::OkStatus();
}

template <typename TOut, int kPerThread>
void LaunchNormKernel(DeviceContext& ctx, bool layer_norm, bool fused,
                      int64_t rows, int threads, const NormArgs& args) {
  void (*kernel)(NormArgs) =
      layer_norm ? (fused ? NormKernel<true, true, TOut, kPerThread>
                          : NormKernel<true, false, TOut, kPerThread>)
                 : (fused ? NormKernel<false, true, TOut, kPerThread>
                          : NormKernel<false, false, TOut, kPerThread>);
  LaunchKernel(ctx.programmatic_launch(), kernel,
               dim3(static_cast<unsigned>(rows)), dim3(threads), 0,
               ctx.stream(), args);
}

template <typename TOut, typename TW, int kQuads>
void LaunchNormVecKernel(DeviceContext& ctx, bool layer_norm, bool fused,
                         int64_t rows, const NormArgs& args) {
  void (*kernel)(NormArgs) =
      layer_norm ? (fused ? NormVecKernel<true, true, TOut, TW, kQuads>
                          : NormVecKernel<true, false, TOut, TW, kQuads>)
                 : (fused ? NormVecKernel<false, true, TOut, TW, kQuads>
                          : NormVecKernel<false, false, TOut, TW, kQuads>);
  const int64_t threads = CeilDiv(CeilDiv(args.width / 4, kQuads), 32) * 32;
  LaunchKernel(ctx.programmatic_launch(), kernel,
               dim3(static_cast<unsigned>(rows)),
               dim3(static_cast<unsigned>(threads)), 0, ctx.stream(), args);
}

bool Aligned(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// NormVecKernel's conditions: rows of whole, aligned quads (x, residual, y
// and the weights), weight and bias of one type, and at most
// kVecMaxThreads x 12 quads.
template <typename TOut>
bool LaunchNormVec(DeviceContext& ctx, bool layer_norm, bool fused,
                   int64_t rows, const NormArgs& args) {
  const int64_t quads = args.width / 4;
  if (args.width % 4 != 0 || quads > int64_t{kVecMaxThreads} * 12 ||
      !Aligned(args.x, 16) || (fused && !Aligned(args.residual, 16)) ||
      !Aligned(args.y, 4 * static_cast<int>(sizeof(TOut)))) {
    return false;
  }
  FloatKind kind = args.weight_kind;
  if (kind == FloatKind::kNone) kind = args.bias_kind;
  if (args.bias_kind != FloatKind::kNone && args.bias_kind != kind) {
    return false;
  }
  const int weight_bytes = kind == FloatKind::kF32 ? 16 : 8;
  if ((args.weight != nullptr && !Aligned(args.weight, weight_bytes)) ||
      (args.bias != nullptr && !Aligned(args.bias, weight_bytes))) {
    return false;
  }
  const bool few = quads <= int64_t{kVecMaxThreads} * 4;
  const auto launch = [&](auto weight_type) {
    using TW = decltype(weight_type);
    if (few) {
      LaunchNormVecKernel<TOut, TW, 4>(ctx, layer_norm, fused, rows, args);
    } else {
      LaunchNormVecKernel<TOut, TW, 12>(ctx, layer_norm, fused, rows, args);
    }
  };
  switch (kind) {
    case FloatKind::kF16:
      launch(__half{});
      break;
    case FloatKind::kBF16:
      launch(__nv_bfloat16{});
      break;
    default:  // f32, or neither weight nor bias.
      launch(float{});
      break;
  }
  return true;
}

template <typename TOut>
void LaunchNormKernel(DeviceContext& ctx, bool layer_norm, bool fused,
                      int64_t rows, int threads, const NormArgs& args) {
  if (LaunchNormVec<TOut>(ctx, layer_norm, fused, rows, args)) return;
  if (args.width <= static_cast<int64_t>(threads) * kCached) {
    LaunchNormKernel<TOut, kCached>(ctx, layer_norm, fused, rows, threads,
                                    args);
  } else {
    LaunchNormKernel<TOut, 0>(ctx, layer_norm, fused, rows, threads, args);
  }
}

absl::Status LaunchNorm(DeviceContext& ctx, bool layer_norm, const Tensor& x,
                        const Tensor& weight, const Tensor& bias, double eps,
                        Tensor* y, Tensor* residual) {
  RETURN_IF_ERROR(CheckActivations(x, "norm x"));
  RETURN_IF_ERROR(CheckOnDevice(*y, "norm y"));
  if (ToFloatKind(y->dtype()) == FloatKind::kNone || y->rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("norm y must be a floating [rows, width] tensor, got ",
                     y->DebugString()));
  }
  if (y->shape() != x.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "norm y ", y->DebugString(), " does not match x ", x.DebugString()));
  }
  if (residual != nullptr) {
    RETURN_IF_ERROR(CheckActivations(*residual, "norm residual"));
    if (residual->shape() != x.shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("norm residual ", residual->DebugString(),
                       " does not match x ", x.DebugString()));
    }
  }
  const int64_t rows = x.dim(0);
  const int64_t width = x.dim(1);
  if (width == 0) return absl::InvalidArgumentError("norm of width 0");
  if (!layer_norm && weight.empty()) {
    return absl::InvalidArgumentError("RmsNorm needs a weight");
  }
  RETURN_IF_ERROR(CheckVector(weight, width, "norm weight"));
  RETURN_IF_ERROR(CheckVector(bias, width, "norm bias"));
  if (rows == 0) return absl::OkStatus();
  if (rows > 0x7fffffff || width > 0x7fffffff) {
    return absl::InvalidArgumentError("norm: too many rows or columns");
  }

  NormArgs args;
  args.x = x.data<float>();
  args.residual = residual == nullptr ? nullptr : residual->data<float>();
  args.weight = weight.empty() ? nullptr : weight.raw_data();
  args.weight_kind =
      weight.empty() ? FloatKind::kNone : ToFloatKind(weight.dtype());
  args.bias = bias.empty() ? nullptr : bias.raw_data();
  args.bias_kind = bias.empty() ? FloatKind::kNone : ToFloatKind(bias.dtype());
  args.y = y->raw_data();
  args.width = width;
  args.eps = static_cast<float>(eps);

  // About 8 elements per thread, 64..1024 threads.
  const int threads =
      static_cast<int>(std::clamp<int64_t>(CeilDiv(width, 256) * 32, 64, 1024));
  RETURN_IF_ERROR(ctx.Activate());
  const bool fused = residual != nullptr;
  switch (y->dtype()) {
    case DType::kF16:
      LaunchNormKernel<__half>(ctx, layer_norm, fused, rows, threads, args);
      break;
    case DType::kBF16:
      LaunchNormKernel<__nv_bfloat16>(ctx, layer_norm, fused, rows, threads,
                                      args);
      break;
    default:
      LaunchNormKernel<float>(ctx, layer_norm, fused, rows, threads, args);
      break;
  }
  return LastLaunchStatus(layer_norm ? "LayerNorm" : "RmsNorm");
}

}  // namespace

absl::Status RmsNorm(DeviceContext& ctx, const Tensor& x, const Tensor& weight,
                     double eps, Tensor* y, Tensor* residual) {
  return LaunchNorm(ctx, /*layer_norm=*/false, x, weight, Tensor(), eps, y,
                    residual);
}

absl::Status LayerNorm(DeviceContext& ctx, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, double eps,
                       Tensor* y, Tensor* residual) {
  return LaunchNorm(ctx, /*layer_norm=*/true, x, weight, bias, eps, y,
                    residual);
}

}  // namespace dynsparse::cuda
