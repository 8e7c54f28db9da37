#include "core/graph/backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

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
