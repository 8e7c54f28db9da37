#include "core/graph/backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "core/logging.h"

namespace dynsparse {

void Backend::LinearGroup(const Tensor& x, absl::Span<const Tensor* const> w,
                          absl::Span<const Tensor* const> b,
                          absl::Span<Tensor* const> y) {
  for (size_t i = 0; i < w.size(); ++i) Linear(x, *w[i], *b[i], y[i]);
}

void Backend::AddNorm(const Tensor& delta, Tensor* x, bool rms,
                      const Tensor& weight, const Tensor& bias, double eps,
                      Tensor* y) {
  AddInPlace(delta, x);
  if (rms) {
    RmsNorm(*x, weight, eps, y);
  } else {
    LayerNorm(*x, weight, bias, eps, y);
  }
}

void Backend::RopeWriteKv(const RopeTable& rope,
                          absl::Span<const int32_t> positions,
                          int64_t num_heads, int64_t num_kv_heads, Tensor* q,
                          Tensor* k, const Tensor& v, Tensor* k_cache,
                          Tensor* v_cache) {
  if (rope.enabled()) {
    ApplyRope(rope, positions, num_heads, q);
    ApplyRope(rope, positions, num_kv_heads, k);
  }
  WriteRows(*k, positions, k_cache);
  WriteRows(v, positions, v_cache);
}

void Backend::LinearActivate(const Tensor& x, const Tensor& w,
                             const Tensor& bias, Activation activation,
                             Tensor* y) {
  Linear(x, w, bias, y);
  Activate(activation, y);
}

void Backend::GatedMlp(const Tensor& h, const Tensor& w_up,
                       const Tensor& w_gate, const Tensor& b_up,
                       const Tensor& b_gate, Activation activation,
                       const Tensor& w_down, const Tensor& b_down, Tensor* up,
                       Tensor* gate, Tensor* y) {
  const Tensor* ws[] = {&w_up, &w_gate};
  const Tensor* bs[] = {&b_up, &b_gate};
  Tensor* ys[] = {up, gate};
  LinearGroup(h, ws, bs, ys);
  GatedActivate(activation, *gate, up);
  Linear(*up, w_down, b_down, y);
}

void Backend::CopyRows(const Tensor& src, absl::Span<const int32_t> src_rows,
                       absl::Span<const int32_t> dst_rows, Tensor* dst) {
  DS_CHECK(src.device() == Device::kCpu && dst->device() == Device::kCpu);
  DS_CHECK(src_rows.size() == dst_rows.size());
  const int64_t width = src.dim(1);
  DS_CHECK(dst->dim(1) == width);
  const float* from = src.data<float>();
  float* to = dst->data<float>();
  for (size_t i = 0; i < src_rows.size(); ++i) {
    std::memcpy(to + dst_rows[i] * width, from + src_rows[i] * width,
                static_cast<size_t>(width) * sizeof(float));
  }
}

absl::StatusOr<double> Backend::MeasureCopyBandwidth(int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError("copy size must be > 0");
  // Host memory: a plain memcpy between two buffers the size of the request.
  auto src = std::make_unique<char[]>(static_cast<size_t>(bytes));
  auto dst = std::make_unique<char[]>(static_cast<size_t>(bytes));
  std::memset(src.get(), 1, static_cast<size_t>(bytes));
  std::memset(dst.get(), 0, static_cast<size_t>(bytes));
  double best = 0.0;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(dst.get(), src.get(), static_cast<size_t>(bytes));
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, 2.0 * static_cast<double>(bytes) / s / 1e9);
  }
  return best;
}

}  // namespace dynsparse
