// Row-wise and elementwise CPU kernels: embedding gather, norms, activations,
// RoPE, KV writes and unit masks. Reductions accumulate in double so the CPU
// path doubles as a high-precision reference.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace dynsparse::cpu {
namespace {

float ApplyActivation(Activation activation, float v) {
  switch (activation) {
    case Activation::kRelu:
      return v > 0.0f ? v : 0.0f;
    case Activation::kSilu:
      return v / (1.0f + std::exp(-v));
    case Activation::kGelu:
      return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    case Activation::kGeluTanh: {
      const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      return 0.5f * v * (1.0f + std::tanh(inner));
    }
  }
  return v;
}

}  // namespace

void SetThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

int Threads() { return omp_get_max_threads(); }

void Embed(const Tensor& table, absl::Span<const int32_t> ids, Tensor* out) {
  const int64_t width = table.dim(1);
  const size_t row_bytes = width * DTypeSize(table.dtype());
  const char* base = static_cast<const char*>(table.raw_data());
  for (size_t i = 0; i < ids.size(); ++i) {
    DS_CHECK(ids[i] >= 0 && ids[i] < table.dim(0)) << "row " << ids[i];
    ConvertElements(table.dtype(), base + ids[i] * row_bytes, DType::kF32,
                    out->data<float>() + i * width, width);
  }
}

void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
               double eps, Tensor* y) {
  const int64_t rows = x.dim(0);
  const int64_t width = x.dim(1);
  const std::vector<float> w =
      weight.empty() ? std::vector<float>(width, 1.0f) : weight.ToF32Vector();
  const std::vector<float> b =
      bias.empty() ? std::vector<float>(width, 0.0f) : bias.ToF32Vector();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data<float>() + r * width;
    float* out = y->data<float>() + r * width;
    double mean = 0.0;
    for (int64_t i = 0; i < width; ++i) mean += in[i];
    mean /= width;
    double var = 0.0;
    for (int64_t i = 0; i < width; ++i) var += (in[i] - mean) * (in[i] - mean);
    var /= width;
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < width; ++i) {
      out[i] = static_cast<float>((in[i] - mean) * inv) * w[i] + b[i];
    }
  }
}

void RmsNorm(const Tensor& x, const Tensor& weight, double eps, Tensor* y) {
  const int64_t rows = x.dim(0);
  const int64_t width = x.dim(1);
  const std::vector<float> w = weight.ToF32Vector();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data<float>() + r * width;
    float* out = y->data<float>() + r * width;
    double sum_sq = 0.0;
    for (int64_t i = 0; i < width; ++i) sum_sq += double{in[i]} * in[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / width + eps));
    for (int64_t i = 0; i < width; ++i) out[i] = w[i] * (in[i] * inv);
  }
}

void AddInPlace(const Tensor& x, Tensor* y) {
  DS_CHECK_EQ(x.numel(), y->numel());
  const float* in = x.data<float>();
  float* out = y->data<float>();
  const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] += in[i];
}

void Activate(Activation activation, Tensor* x) {
  float* v = x->data<float>();
  const int64_t n = x->numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) v[i] = ApplyActivation(activation, v[i]);
}

void GatedActivate(Activation activation, const Tensor& gate, Tensor* up) {
  DS_CHECK_EQ(gate.numel(), up->numel());
  const float* g = gate.data<float>();
  float* u = up->data<float>();
  const int64_t n = up->numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) u[i] *= ApplyActivation(activation, g[i]);
}

void ApplyRope(const RopeTable& rope, absl::Span<const int32_t> positions,
               int64_t heads, Tensor* x) {
  const int64_t hd = rope.head_dim;
  const int64_t half = hd / 2;
  const int64_t rows = x->dim(0);
  DS_CHECK_EQ(x->dim(1), heads * hd);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    // Angles in f32 as transformers computes them, then cos/sin of that f32.
    std::vector<float> cos_v(half), sin_v(half);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[r]) *
                          static_cast<float>(rope.inv_freq[i]);
      cos_v[i] = static_cast<float>(std::cos(double{angle}));
      sin_v[i] = static_cast<float>(std::sin(double{angle}));
    }
    float* row = x->data<float>() + r * heads * hd;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = row + h * hd;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i];
        const float b = v[i + half];
        v[i] = a * cos_v[i] - b * sin_v[i];
        v[i + half] = b * cos_v[i] + a * sin_v[i];
      }
    }
  }
}

void WriteRows(const Tensor& rows, absl::Span<const int32_t> positions,
               Tensor* cache) {
  const int64_t width = rows.dim(1);
  DS_CHECK_EQ(cache->dim(1), width);
  for (size_t i = 0; i < positions.size(); ++i) {
    DS_CHECK(positions[i] >= 0 && positions[i] < cache->dim(0));
    std::memcpy(cache->data<float>() + positions[i] * width,
                rows.data<float>() + i * width, width * sizeof(float));
  }
}

void MaskUnits(const UnitSelection& keep, int64_t unit_width, Tensor* x) {
  const int64_t rows = x->dim(0);
  const int64_t width = x->dim(1);
  const int64_t units = width / unit_width;
  DS_CHECK(!keep.oracle) << "oracle selections are resolved by the graph";
  const int32_t* ids = keep.indices.data();
  if (!keep.ids.empty()) {
    DS_CHECK(keep.ids.dtype() == DType::kI32 && keep.ids.dim(0) == rows &&
             keep.ids.dim(1) == keep.per_row);
    ids = keep.ids.data<int32_t>();
  } else {
    DS_CHECK_EQ(static_cast<int64_t>(keep.indices.size()), rows * keep.per_row);
  }
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<char> kept(units, 0);
    for (int64_t k = 0; k < keep.per_row; ++k) {
      const int32_t u = ids[r * keep.per_row + k];
      DS_CHECK(u >= 0 && u < units) << "unit " << u << " of " << units;
      kept[u] = 1;
    }
    float* row = x->data<float>() + r * width;
    for (int64_t u = 0; u < units; ++u) {
      if (!kept[u])
        std::memset(row + u * unit_width, 0, unit_width * sizeof(float));
    }
  }
}

}  // namespace dynsparse::cpu
