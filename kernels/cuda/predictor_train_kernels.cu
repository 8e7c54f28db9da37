// See predictor_train_kernels.h. Simple kernels: next to the GEMMs of an
// OPT-66B-shape step (hidden 9216, units 36864, rank 1000) these read and
// write each element once.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/predictor_train_kernels.h"

namespace dynsparse::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ int64_t RowOf(SampleRows rows, int64_t i) {
  return rows.rows != nullptr ? static_cast<int64_t>(rows.rows[i])
                              : rows.first + i;
}

// Sum over the block in f64; every thread gets the result.
__device__ double BlockSumF64(double v, double* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double total = lane < warps ? scratch[lane] : 0.0;
  for (int offset = 16; offset > 0; offset >>= 1) {
    total += __shfl_xor_sync(0xffffffffu, total, offset);
  }
  return total;
}

// One block per batch row.
__global__ void __launch_bounds__(kThreads)
    ScaleInputRowsKernel(const __half* x, SampleRows rows, int64_t hidden,
                         float* out) {
  __shared__ double scratch[32];
  const int64_t i = blockIdx.x;
  const __half* src = x + RowOf(rows, i) * hidden;
  float* dst = out + i * hidden;
  double sum = 0.0;
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    const double v = __half2float(src[j]);
    sum += v * v;
  }
  sum = BlockSumF64(sum, scratch);
  const float scale =
      static_cast<float>(1.0 / sqrt(sum / static_cast<double>(hidden) + 1e-12));
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    dst[j] = __half2float(src[j]) * scale;
  }
}

// Grid: x over units, y strides over the batch rows.
__global__ void __launch_bounds__(kThreads)
    BceGradientKernel(const uint8_t* labels, SampleRows rows, int64_t n,
                      int64_t units, int64_t row_bytes, float neg_weight,
                      float inv_elements, float* z) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= units) return;
  for (int64_t i = blockIdx.y; i < n; i += gridDim.y) {
    const uint8_t* bits = labels + RowOf(rows, i) * row_bytes;
    const float y = ((bits[j >> 3] >> (j & 7)) & 1) != 0 ? 1.0f : 0.0f;
    float* zp = z + i * units + j;
    const float p = 1.0f / (expf(-*zp) + 1.0f);
    *zp = ((p - y) * (y + neg_weight * (1.0f - y))) * inv_elements;
  }
}

__global__ void __launch_bounds__(kThreads)
    AdamWKernel(const float* g, AdamWScalars s, int64_t count, float* m,
                float* v, float* p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       k < count; k += stride) {
    const float gk = g[k];
    const float mk = s.b1 * m[k] + s.one_minus_b1 * gk;
    const float vk = s.b2 * v[k] + s.one_minus_b2 * (gk * gk);
    m[k] = mk;
    v[k] = vk;
    const float pk = p[k] * s.decay;
    p[k] = pk - s.lr * (mk * s.c1) / (sqrtf(vk * s.c2) + s.eps);
  }
}

absl::Status CheckSizes(const char* what, int64_t n, int64_t width) {
  if (n < 0 || width <= 0 || n > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", n, " rows of width ", width));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ScaleInputRows(DeviceContext& ctx, const uint16_t* x,
                            SampleRows rows, int64_t n, int64_t hidden,
                            float* out) {
  if (absl::Status s = CheckSizes("ScaleInputRows", n, hidden); !s.ok()) {
    return s;
  }
  if (n == 0) return absl::OkStatus();
  ScaleInputRowsKernel<<<static_cast<unsigned>(n), kThreads, 0, ctx.stream()>>>(
      reinterpret_cast<const __half*>(x), rows, hidden, out);
  return LastLaunchStatus("ScaleInputRowsKernel");
}

absl::Status BceGradient(DeviceContext& ctx, const uint8_t* labels,
                         SampleRows rows, int64_t n, int64_t units,
                         float neg_weight, float inv_elements, float* z) {
  if (absl::Status s = CheckSizes("BceGradient", n, units); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  const dim3 grid(static_cast<unsigned>(CeilDiv(units, kThreads)),
                  static_cast<unsigned>(std::min<int64_t>(n, 65535)));
  BceGradientKernel<<<grid, kThreads, 0, ctx.stream()>>>(
      labels, rows, n, units, (units + 7) / 8, neg_weight, inv_elements, z);
  return LastLaunchStatus("BceGradientKernel");
}

absl::Status AdamWUpdate(DeviceContext& ctx, const float* g,
                         const AdamWScalars& s, int64_t count, float* m,
                         float* v, float* p) {
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AdamWUpdate: ", count, " parameters"));
  }
  if (count == 0) return absl::OkStatus();
  // Grid-stride: a few waves of blocks cover any count.
  const int64_t blocks =
      std::min<int64_t>(CeilDiv(count, kThreads), int64_t{ctx.sm_count()} * 16);
  AdamWKernel<<<static_cast<unsigned>(std::max<int64_t>(blocks, 1)), kThreads,
                0, ctx.stream()>>>(g, s, count, m, v, p);
  return LastLaunchStatus("AdamWKernel");
}

}  // namespace dynsparse::cuda
