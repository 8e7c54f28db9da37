#include "core/graph/backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/top_count.h"
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

void Backend::RopeWriteKvAttention(const RopeTable& rope, Tensor* q, Tensor* k,
                                   const Tensor& v, Tensor* k_cache,
                                   Tensor* v_cache, const AttentionArgs& args) {
  DS_CHECK(args.q == q && args.k_cache == k_cache && args.v_cache == v_cache)
      << "RopeWriteKvAttention: args must read q and the caches written";
  RopeWriteKv(rope, args.query_positions, args.num_heads, args.num_kv_heads, q,
              k, v, k_cache, v_cache);
  Attention(args);
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

namespace {

Tensor NormInto(Backend& backend, const Tensor& x, const InputNorm& norm) {
  Tensor normed = backend.Allocate(DType::kF32, x.shape());
  if (norm.rms) {
    backend.RmsNorm(x, *norm.weight, norm.eps, &normed);
  } else {
    backend.LayerNorm(x, *norm.weight, *norm.bias, norm.eps, &normed);
  }
  return normed;
}

}  // namespace

void Backend::NormLinearGroup(const Tensor& x, const InputNorm& norm,
                              absl::Span<const Tensor* const> w,
                              absl::Span<const Tensor* const> b,
                              std::optional<Activation> activation,
                              absl::Span<Tensor* const> y) {
  const Tensor normed = NormInto(*this, x, norm);
  if (!activation.has_value()) {
    LinearGroup(normed, w, b, y);
    return;
  }
  for (size_t i = 0; i < w.size(); ++i) {
    LinearActivate(normed, *w[i], *b[i], *activation, y[i]);
  }
}

void Backend::LinearAccumulate(const Tensor& x, const Tensor& w,
                               const Tensor& bias, Tensor* residual) {
  Tensor out = Allocate(DType::kF32, residual->shape());
  Linear(x, w, bias, &out);
  AddInPlace(out, residual);
}

void Backend::NormGatedMlp(Tensor* residual, const InputNorm& norm,
                           const Tensor& w_up, const Tensor& w_gate,
                           const Tensor& b_up, const Tensor& b_gate,
                           Activation activation, const Tensor& w_down,
                           const Tensor& b_down, Tensor* up, Tensor* gate) {
  const Tensor normed = NormInto(*this, *residual, norm);
  Tensor down = Allocate(DType::kF32, residual->shape());
  GatedMlp(normed, w_up, w_gate, b_up, b_gate, activation, w_down, b_down, up,
           gate, &down);
  AddInPlace(down, residual);
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

void Backend::TopCount(const Tensor& scores, int64_t count, Tensor* indices) {
  DS_CHECK(scores.device() == Device::kCpu && indices->device() == Device::kCpu)
      << name() << ": TopCount on host tensors only";
  DS_CHECK(scores.dtype() == DType::kF32 && indices->dtype() == DType::kI32 &&
           indices->numel() == count && count > 0 && count < scores.numel());
  // TopK's contract on one row.
  Tensor row = indices->Reshape({1, count});
  TopK(scores.Reshape({1, scores.numel()}), count, &row);
}

void Backend::Argmax(const Tensor& logits, Tensor* ids) {
  DS_CHECK(logits.device() == Device::kCpu && ids->device() == Device::kCpu)
      << name() << ": Argmax on host tensors only";
  DS_CHECK(logits.dtype() == DType::kF32 && logits.rank() == 2 &&
           ids->dtype() == DType::kI32 && ids->numel() == logits.dim(0));
  const int64_t cols = logits.dim(1);
  for (int64_t r = 0; r < logits.dim(0); ++r) {
    const float* row = logits.data<float>() + r * cols;
    // Strictly greater: the lowest id wins ties; NaN never wins (a row of
    // NaN gives 0, as the CUDA kernel does).
    int64_t best = -1;
    for (int64_t c = 0; c < cols; ++c) {
      if (best < 0 ? !std::isnan(row[c]) : row[c] > row[best]) best = c;
    }
    ids->data<int32_t>()[r] = static_cast<int32_t>(std::max<int64_t>(best, 0));
  }
}

void Backend::EmbedIds(const Tensor& table, const Tensor& ids, Tensor* out) {
  DS_CHECK(ids.device() == Device::kCpu && ids.dtype() == DType::kI32)
      << name() << ": EmbedIds on host ids only";
  Embed(table, absl::MakeConstSpan(ids.data<int32_t>(), ids.numel()), out);
}

absl::StatusOr<Tensor> Backend::Upload(const Tensor& host) {
  if (device() != Device::kCpu) {
    return absl::UnimplementedError(
        absl::StrCat(name(), " cannot upload tensors"));
  }
  return host;
}

void Backend::TopK(const Tensor& scores, int64_t k, Tensor* indices) {
  DS_CHECK(scores.device() == Device::kCpu && indices->device() == Device::kCpu)
      << name() << " has no TopK for device tensors";
  const int64_t rows = scores.dim(0), n = scores.dim(1);
  DS_CHECK(k > 0 && k <= n) << "TopK k " << k << " of " << n;
  DS_CHECK(indices->dtype() == DType::kI32 && indices->dim(0) == rows &&
           indices->dim(1) == k);
  // LazyLLM's host choice has the same contract (ascending ids, ties to the
  // lower id, -0 equal to +0): one selection for both.
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int32_t> top =
        TopCountIndices(absl::MakeConstSpan(scores.data<float>() + r * n,
                                            static_cast<size_t>(n)),
                        k);
    std::copy(top.begin(), top.end(), indices->data<int32_t>() + r * k);
  }
}

void Backend::UnitNorms(const Tensor& x, int64_t unit_width, Tensor* norms) {
  DS_CHECK(x.device() == Device::kCpu && norms->device() == Device::kCpu)
      << name() << " has no UnitNorms for device tensors";
  const int64_t rows = x.dim(0), width = x.dim(1);
  DS_CHECK(unit_width > 0 && width % unit_width == 0);
  const int64_t units = width / unit_width;
  DS_CHECK(norms->dim(0) == rows && norms->dim(1) == units);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data<float>() + r * width;
    for (int64_t u = 0; u < units; ++u) {
      double sum = 0.0;
      for (int64_t j = 0; j < unit_width; ++j) {
        const double v = row[u * unit_width + j];
        sum += v * v;
      }
      norms->data<float>()[r * units + u] = static_cast<float>(std::sqrt(sum));
    }
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

namespace dynsparse {

void Backend::StageIds(absl::Span<const int32_t> host, Tensor* ids) {
  DS_CHECK(ids->device() == Device::kCpu) << name() << " cannot stage ids";
  DS_CHECK(ids->dtype() == DType::kI32 &&
           ids->numel() == static_cast<int64_t>(host.size()));
  std::copy(host.begin(), host.end(), ids->data<int32_t>());
}

const Tensor& Backend::TransposedWeight(const Tensor& w) {
  const std::pair<const void*, Shape> key(w.raw_data(), w.shape());
  for (const auto& [k, t] : transposed_) {
    if (k == key) return t;
  }
  transposed_.emplace_back(key, Transpose(w));
  return transposed_.back().second;
}

Tensor Backend::Transpose(const Tensor& w) {
  DS_CHECK(w.device() == Device::kCpu) << name() << " cannot transpose";
  const int64_t rows = w.dim(0), cols = w.dim(1);
  const size_t es = DTypeSize(w.dtype());
  Tensor t = Tensor::Zeros(w.dtype(), {cols, rows});
  const char* src = static_cast<const char*>(w.raw_data());
  char* dst = static_cast<char*>(t.raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::memcpy(dst + (c * rows + r) * es, src + (r * cols + c) * es, es);
    }
  }
  return t;
}

#define DS_NO_SPARSE() \
  DS_CHECK(false) << name() << " has no sparse kernels (SupportsSparse)"

void Backend::GatherLinear(const Tensor&, const Tensor&, const Tensor&,
                           const Tensor&, int64_t, bool, Activation, Tensor*) {
  DS_NO_SPARSE();
}
void Backend::GatherGatedLinear(const Tensor&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&, const Tensor&,
                                Activation, Tensor*) {
  DS_NO_SPARSE();
}
void Backend::GatherLinearT(const Tensor&, const Tensor&, const Tensor&,
                            const Tensor&, Tensor*) {
  DS_NO_SPARSE();
}
void Backend::GatherMlp(const Tensor& x, const Tensor& w_up, const Tensor& b_up,
                        const Tensor* w_gate, const Tensor* b_gate,
                        const Tensor& w_down_t, const Tensor& b_down,
                        const Tensor& ids, Activation act, Tensor* hidden,
                        Tensor* y) {
  if (w_gate != nullptr) {
    GatherGatedLinear(x, w_up, *w_gate, b_up, *b_gate, ids, act, hidden);
  } else {
    GatherLinear(x, w_up, b_up, ids, 1, /*activate=*/true, act, hidden);
  }
  GatherLinearT(*hidden, w_down_t, b_down, ids, y);
}
void Backend::GatherColumnsLinear(const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor&, int64_t, Tensor*) {
  DS_NO_SPARSE();
}
void Backend::GatherColumns(const Tensor&, const Tensor&, int64_t, Tensor*) {
  DS_NO_SPARSE();
}
void Backend::SparseAttention(const AttentionArgs&, const Tensor&) {
  DS_NO_SPARSE();
}
void Backend::LazyKv(const LazyKvArgs&) { DS_NO_SPARSE(); }

#undef DS_NO_SPARSE

}  // namespace dynsparse
