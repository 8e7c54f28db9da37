#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/graph_ops.h"
#include "kernels/cuda/kv_access.cuh"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 256;

unsigned GridFor(int64_t elements) {
  return static_cast<unsigned>(
      std::min<int64_t>(CeilDiv(elements, kThreads), int64_t{1} << 20));
}

__global__ void EmbedKernel(const void* table, FloatKind kind, int64_t width,
                            const int32_t* ids, int64_t n, float* out) {
  PdlWait();
  const int64_t total = n * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / width;
    const int64_t col = i - row * width;
    out[i] = LoadAsFloat(table, kind, ids[row] * width + col, 0.f);
  }
}

// Rounds to the cache's type (an f16 cache with DYNSPARSE_CUDA_FUSE=0,
// whose RoPE and K/V write are then the generic ops).
template <typename KvT>
__global__ void WriteRowsKernel(const float* rows, int64_t width,
                                const int32_t* positions, int64_t n,
                                KvT* cache) {
  PdlWait();
  const int64_t total = n * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / width;
    const int64_t col = i - row * width;
    StoreRounded(&cache[static_cast<int64_t>(positions[row]) * width + col],
                 rows[i]);
  }
}

__global__ void MarkKeptKernel(const int32_t* keep, int64_t rows,
                               int64_t per_row, int64_t units, uint8_t* flags) {
  const int64_t total = rows * per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / per_row;
    const int32_t unit = keep[i];
    if (unit >= 0 && unit < units) flags[row * units + unit] = 1;
  }
}

__global__ void ApplyMaskKernel(const uint8_t* flags, int64_t rows,
                                int64_t units, int64_t unit_width, float* x) {
  const int64_t width = units * unit_width;
  const int64_t total = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / width;
    const int64_t unit = (i - row * width) / unit_width;
    if (!flags[row * units + unit]) x[i] = 0.f;
  }
}

// dst = round(src): float4 loads and 4-element stores over the first n_vec
// quads when both pointers allow it, then a scalar tail.
template <typename T>
__global__ void ConvertKernel(const float* src, int64_t n, int64_t n_vec,
                              T* dst) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid =
      blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  for (int64_t i = tid; i < n_vec; i += stride) {
    StoreRounded4(dst + 4 * i, reinterpret_cast<const float4*>(src)[i]);
  }
  for (int64_t i = 4 * n_vec + tid; i < n; i += stride) {
    StoreRounded(dst + i, src[i]);
  }
}

template <typename T>
void LaunchConvert(DeviceContext& ctx, const float* src, int64_t n, T* dst) {
  const bool vec = IsAligned(src, 16) && IsAligned(dst, 4 * sizeof(T));
  const int64_t n_vec = vec ? n / 4 : 0;
  ConvertKernel<<<GridFor(std::max<int64_t>(n_vec, n - 4 * n_vec)), kThreads, 0,
                  ctx.stream()>>>(src, n, n_vec, dst);
}

// Keeps (v, idx) or takes (e, c): the larger value, the lower index on ties.
// NaN never wins (comparisons with NaN are false).
__device__ __forceinline__ void Consider(float e, int32_t c, float& v,
                                         int32_t& idx) {
  if (e > v || (e == v && c < idx)) {
    v = e;
    idx = c;
  }
}

// float4 loads a thread issues before it compares any: a 32000-word
// vocabulary is one memory round trip a thread, where one float at a time
// took ~31 dependent ones (H200: 9.4 us a decode step).
constexpr int kArgmaxLoads = 8;

// One block per row; (value, index) pairs reduce with the lower index
// winning ties.
__global__ void ArgmaxKernel(const float* x, int64_t cols, int32_t* out) {
  __shared__ float best_v[32];
  __shared__ int32_t best_i[32];
  const float* row = x + blockIdx.x * cols;
  float v = -INFINITY;
  int32_t idx = 0x7fffffff;
  if (cols % 4 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int64_t n4 = cols / 4;
    for (int64_t base = threadIdx.x; base < n4;
         base += int64_t{blockDim.x} * kArgmaxLoads) {
      float4 q[kArgmaxLoads];
#pragma unroll
      for (int i = 0; i < kArgmaxLoads; ++i) {
        const int64_t j = base + int64_t{i} * blockDim.x;
        if (j < n4) q[i] = row4[j];
      }
#pragma unroll
      for (int i = 0; i < kArgmaxLoads; ++i) {
        const int64_t j = base + int64_t{i} * blockDim.x;
        if (j >= n4) continue;
        const int32_t c = static_cast<int32_t>(4 * j);
        Consider(q[i].x, c, v, idx);
        Consider(q[i].y, c + 1, v, idx);
        Consider(q[i].z, c + 2, v, idx);
        Consider(q[i].w, c + 3, v, idx);
      }
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      Consider(row[c], static_cast<int32_t>(c), v, idx);
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    Consider(__shfl_xor_sync(0xffffffffu, v, off),
             __shfl_xor_sync(0xffffffffu, idx, off), v, idx);
  }
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) {
    best_v[warp] = v;
    best_i[warp] = idx;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    v = lane < warps ? best_v[lane] : -INFINITY;
    idx = lane < warps ? best_i[lane] : 0x7fffffff;
    for (int off = 16; off > 0; off >>= 1) {
      Consider(__shfl_xor_sync(0xffffffffu, v, off),
               __shfl_xor_sync(0xffffffffu, idx, off), v, idx);
    }
    if (lane == 0) out[blockIdx.x] = idx == 0x7fffffff ? 0 : idx;
  }
}

absl::Status CheckF32Matrix(const Tensor& t, const char* what) {
  if (absl::Status s = CheckOnDevice(t, what); !s.ok()) return s;
  if (t.dtype() != DType::kF32 || t.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected an f32 matrix, got ", t.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EmbedRows(DeviceContext& ctx, const Tensor& table,
                       const int32_t* ids, Tensor* out) {
  if (absl::Status s = CheckOnDevice(table, "embedding table"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckF32Matrix(*out, "embedding output"); !s.ok()) {
    return s;
  }
  const FloatKind kind = ToFloatKind(table.dtype());
  if (kind == FloatKind::kNone || table.rank() != 2 ||
      table.dim(1) != out->dim(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding: table ", table.DebugString(), " vs output ",
                     out->DebugString()));
  }
  const int64_t total = out->numel();
  if (total == 0) return absl::OkStatus();
  LaunchKernel(ctx.programmatic_launch(), EmbedKernel, dim3(GridFor(total)),
               dim3(kThreads), 0, ctx.stream(), table.raw_data(), kind,
               table.dim(1), ids, out->dim(0), out->data<float>());
  return LastLaunchStatus("EmbedKernel");
}

absl::Status WriteCacheRows(DeviceContext& ctx, const Tensor& rows,
                            const int32_t* positions, Tensor* cache) {
  if (absl::Status s = CheckF32Matrix(rows, "cache rows"); !s.ok()) return s;
  if (absl::Status s = CheckOnDevice(*cache, "cache"); !s.ok()) return s;
  if (absl::Status s = CheckKvDtype(*cache, "cache"); !s.ok()) return s;
  if (cache->rank() != 2 || rows.dim(1) != cache->dim(1)) {
    return absl::InvalidArgumentError(absl::StrCat("cache write: rows ",
                                                   rows.DebugString(), " vs ",
                                                   cache->DebugString()));
  }
  const int64_t total = rows.numel();
  if (total == 0) return absl::OkStatus();
  DispatchKv(*cache, [&](auto t) {
    using KvT = decltype(t);
    LaunchKernel(ctx.programmatic_launch(), WriteRowsKernel<KvT>,
                 dim3(GridFor(total)), dim3(kThreads), 0, ctx.stream(),
                 rows.data<float>(), rows.dim(1), positions, rows.dim(0),
                 static_cast<KvT*>(cache->raw_data()));
  });
  return LastLaunchStatus("WriteRowsKernel");
}

absl::Status MaskUnitsDevice(DeviceContext& ctx, const int32_t* keep,
                             int64_t per_row, int64_t unit_width,
                             uint8_t* flags, Tensor* x) {
  if (absl::Status s = CheckF32Matrix(*x, "masked tensor"); !s.ok()) return s;
  if (unit_width <= 0 || x->dim(1) % unit_width != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mask: width ", x->dim(1), " is not a multiple of unit ", unit_width));
  }
  const int64_t rows = x->dim(0);
  const int64_t units = x->dim(1) / unit_width;
  DS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
      flags, 0, static_cast<size_t>(rows * units), ctx.stream()));
  if (rows * per_row > 0) {
    MarkKeptKernel<<<GridFor(rows * per_row), kThreads, 0, ctx.stream()>>>(
        keep, rows, per_row, units, flags);
    if (absl::Status s = LastLaunchStatus("MarkKeptKernel"); !s.ok()) return s;
  }
  if (x->numel() == 0) return absl::OkStatus();
  ApplyMaskKernel<<<GridFor(x->numel()), kThreads, 0, ctx.stream()>>>(
      flags, rows, units, unit_width, x->data<float>());
  return LastLaunchStatus("ApplyMaskKernel");
}

absl::Status ConvertF32(DeviceContext& ctx, const Tensor& src, Tensor* dst) {
  if (absl::Status s = CheckOnDevice(src, "convert source"); !s.ok()) return s;
  if (absl::Status s = CheckOnDevice(*dst, "convert target"); !s.ok()) {
    return s;
  }
  if (src.dtype() != DType::kF32 || src.numel() != dst->numel()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convert: ", src.DebugString(), " -> ", dst->DebugString()));
  }
  const int64_t n = src.numel();
  if (n == 0) return absl::OkStatus();
  switch (dst->dtype()) {
    case DType::kF16:
      LaunchConvert(ctx, src.data<float>(), n, dst->data<__half>());
      break;
    case DType::kBF16:
      LaunchConvert(ctx, src.data<float>(), n, dst->data<__nv_bfloat16>());
      break;
    case DType::kF32:
      LaunchConvert(ctx, src.data<float>(), n, dst->data<float>());
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("convert: target ", dst->DebugString()));
  }
  return LastLaunchStatus("ConvertKernel");
}

absl::Status ArgmaxRows(DeviceContext& ctx, const Tensor& x, int32_t* out) {
  if (absl::Status s = CheckF32Matrix(x, "argmax input"); !s.ok()) return s;
  if (x.dim(0) == 0) return absl::OkStatus();
  ArgmaxKernel<<<static_cast<unsigned>(x.dim(0)), 1024, 0, ctx.stream()>>>(
      x.data<float>(), x.dim(1), out);
  return LastLaunchStatus("ArgmaxKernel");
}

}  // namespace dynsparse::cuda
