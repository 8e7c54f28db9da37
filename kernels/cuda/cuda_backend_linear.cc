// CudaBackend's dense projections and the elementwise ops around them:
// GEMV/GEMM linears (one-row groups fused into one GEMV, row groups into one
// batched GEMM), norms fused into the GEMV that reads their output, the
// gated MLP, activations and residual adds.
#include <utility>
#include <vector>

#include "kernels/cuda/activation.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/graph_ops.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/norms.h"
#include "kernels/cuda/op_signature.h"

namespace dynsparse::cuda {
namespace {

// A non-owning tensor over [first.raw_data(), + bytes): the concatenation of
// tensors that sit back to back in one allocation. The parts keep it alive.
Tensor SpanOf(const Tensor& first, DType dtype, Shape shape) {
  const size_t bytes =
      static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  auto storage = std::make_shared<Storage>(first.raw_data(), bytes,
                                           Device::kCuda, [](void*) {});
  return Tensor(std::move(storage), 0, dtype, std::move(shape));
}

// True when the tensors are back to back in memory, in order, one dtype.
bool Adjacent(absl::Span<const Tensor* const> parts) {
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const Tensor& a = *parts[i];
    const Tensor& b = *parts[i + 1];
    if (a.empty() || b.empty() || a.dtype() != b.dtype() ||
        a.device() != Device::kCuda || b.device() != Device::kCuda ||
        static_cast<const char*>(a.raw_data()) + a.bytes() != b.raw_data()) {
      return false;
    }
  }
  return true;
}

}  // namespace

void CudaBackend::CheckNotTransposedInPlace(const Tensor& w,
                                            const char* op) const {
  DS_CHECK(transposed_in_place_.empty() ||
           transposed_in_place_.count(w.raw_data()) == 0)
      << op << ": this weight was transposed in place for sparse execution "
      << "(no room for a copy); dense use of it in this process would be "
      << "wrong — run dense jobs in a separate process";
}

void CudaBackend::Linear(const Tensor& x, const Tensor& w, const Tensor& bias,
                         Tensor* y) {
  CheckNotTransposedInPlace(w, "Linear");
  if (in_side_work_ && RoundsInputForLinear(x, w)) {
    // cuda::Linear's own rounded copy would go back to the pool while the
    // side stream still reads it: round into a held tensor instead.
    Linear(RoundedInput(x, w.dtype(), "Linear"), w, bias, y);
    return;
  }
  HoldForSideWork(x);
  HoldForSideWork(*y);
  uint64_t sig =
      MixTensor(MixTensor(MixTensor(MixTensor(kOpLinear, x), w), bias), *y);
  if (!Op(sig)) return;
  Check(cuda::Linear(*active_, *pool_, x, w, bias, y), "Linear");
}

bool CudaBackend::SpanGroup(const Tensor& x, absl::Span<const Tensor* const> w,
                            absl::Span<const Tensor* const> b,
                            absl::Span<Tensor* const> y, Tensor* fw, Tensor* fb,
                            Tensor* fy,
                            std::vector<int64_t>* segment_ends) const {
  const int64_t n = x.rank() == 2 ? x.dim(0) : 0;
  const bool rows_ok =
      n == 1 || (segment_ends != nullptr && n > 1 && n <= kGemvMaxBatch &&
                 w.size() <= 3 && x.dtype() == DType::kF32);
  bool fuse = rows_ok && !w.empty() && Adjacent(w) && Adjacent(y);
  bool any_bias = false, all_bias = true;
  for (const Tensor* t : b) {
    any_bias |= !t->empty();
    all_bias &= !t->empty();
  }
  if (fuse && any_bias) fuse = all_bias && Adjacent(b);
  int64_t out = 0;
  for (size_t i = 0; fuse && i < w.size(); ++i) {
    fuse = w[i]->rank() == 2 && w[i]->dim(1) == x.dim(1) && y[i]->rank() == 2 &&
           y[i]->dim(0) == n && y[i]->dim(1) == w[i]->dim(0) &&
           y[i]->dtype() == DType::kF32;
    out += w[i]->dim(0);
  }
  if (!fuse) return false;
  *fw = SpanOf(*w[0], w[0]->dtype(), {out, x.dim(1)});
  *fb = any_bias ? SpanOf(*b[0], b[0]->dtype(), {out}) : Tensor();
  *fy = SpanOf(*y[0], DType::kF32, {n, out});
  if (segment_ends != nullptr) {
    segment_ends->clear();
    int64_t end = 0;
    for (size_t i = 0; n > 1 && i + 1 < w.size(); ++i) {
      end += w[i]->dim(0);
      segment_ends->push_back(end);
    }
  }
  return true;
}

void CudaBackend::LinearGroup(const Tensor& x,
                              absl::Span<const Tensor* const> w,
                              absl::Span<const Tensor* const> b,
                              absl::Span<Tensor* const> y) {
  // One GEMV over the concatenated weights when the outputs are adjacent
  // too (Session allocates them so) and the weights were uploaded back to
  // back (UploadWeights, DeviceRandomWeights); a step of a few rows (a
  // LazyLLM step's revived rows, --batch) writes each output's own matrix.
  Tensor fw, fb, fy;
  std::vector<int64_t> segment_ends;
  if (w.size() < 2 ||
      !SpanGroup(x, w, b, y, &fw, &fb, &fy,
                 options_.fused_row_groups ? &segment_ends : nullptr)) {
    LinearGroupRounded(x, w, b, y);
    return;
  }
  if (segment_ends.empty()) {
    Linear(x, fw, fb, &fy);
    return;
  }
  CheckNotTransposedInPlace(fw, "LinearGroup");
  HoldForSideWork(x);
  HoldForSideWork(fy);
  uint64_t sig = MixTensor(
      MixTensor(MixTensor(MixTensor(kOpLinearSegments, x), fw), fb), fy);
  for (int64_t end : segment_ends) sig = Mix(sig, static_cast<uint64_t>(end));
  if (!Op(sig)) return;
  GemvOptions options;
  options.segment_ends = std::move(segment_ends);
  Check(Gemv(*active_, x, fw, fb, &fy, options), "LinearGroup");
}

void CudaBackend::LinearGroupRounded(const Tensor& x,
                                     absl::Span<const Tensor* const> w,
                                     absl::Span<const Tensor* const> b,
                                     absl::Span<Tensor* const> y) {
  // cuBLAS takes x rounded to the weights' dtype: round it once for the
  // group (q/k/v, up/gate of a prefill) instead of once per weight.
  bool shared = w.size() > 1;
  for (const Tensor* t : w) {
    shared =
        shared && RoundsInputForLinear(x, *t) && t->dtype() == w[0]->dtype();
  }
  if (!shared) {
    Backend::LinearGroup(x, w, b, y);
    return;
  }
  const Tensor rounded = RoundedInput(x, w[0]->dtype(), "LinearGroup");
  if (BatchesGroup(x, w, b, y)) {
    for (Tensor* t : y) HoldForSideWork(*t);
    const uint64_t sig =
        Mix(MixTensor(MixTensor(MixTensor(kOpLinearBatched, rounded), *w[0]),
                      *y[0]),
            w.size());
    if (Op(sig)) {
      Check(cuda::LinearBatched(*active_, rounded, *w[0],
                                static_cast<int64_t>(w.size()), y[0]),
            "LinearGroup");
    }
    return;
  }
  for (size_t i = 0; i < w.size(); ++i) Linear(rounded, *w[i], *b[i], y[i]);
}

bool CudaBackend::BatchesGroup(const Tensor& x,
                               absl::Span<const Tensor* const> w,
                               absl::Span<const Tensor* const> b,
                               absl::Span<Tensor* const> y) const {
  // A few hundred rows at most: a LazyLLM decode step's revived rows, whose
  // GEMMs are weight-bound and pay cuBLAS's host time per call (h200_run78).
  // Longer prefills keep one GEMM per weight: batching them is unmeasured.
  constexpr int64_t kMaxBatchedRows = 512;
  const std::vector<const Tensor*> outputs(y.begin(), y.end());
  if (!options_.fused_ops || x.dim(0) > kMaxBatchedRows || !Adjacent(w) ||
      !Adjacent(outputs)) {
    return false;
  }
  for (size_t i = 0; i < w.size(); ++i) {
    if (!b[i]->empty() || w[i]->shape() != w[0]->shape() ||
        w[i]->dtype() != w[0]->dtype() || y[i]->shape() != y[0]->shape() ||
        y[i]->dtype() != DType::kF32) {
      return false;
    }
  }
  return true;
}

Tensor CudaBackend::RoundedInput(const Tensor& x, DType dtype, const char* op) {
  Tensor rounded = Allocate(dtype, x.shape());
  if (Op(MixTensor(MixTensor(kOpRoundInput, x), rounded))) {
    Check(ConvertF32(*active_, x, &rounded), op);
  }
  return rounded;
}

bool CudaBackend::FusedNorm(const InputNorm& norm, const Tensor& x,
                            const Tensor& w, const Tensor& b,
                            GemvNorm* gemv_norm, Tensor* gemv_bias) {
  const Tensor& gamma = *norm.weight;
  // The one-row CUDA-core GEMV's conditions (gemv.h PlanGemv).
  if (!FusesInputNorm() || gamma.empty() || gamma.dtype() != w.dtype() ||
      reinterpret_cast<uintptr_t>(x.raw_data()) % 16 != 0 ||
      (w.dtype() != DType::kF16 && w.dtype() != DType::kBF16) ||
      gamma.numel() != w.dim(1) || w.dim(1) % 8 != 0 ||
      reinterpret_cast<uintptr_t>(gamma.raw_data()) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(w.raw_data()) % 16 != 0) {
    return false;
  }
  gemv_norm->weight = gamma;
  gemv_norm->eps = norm.eps;
  *gemv_bias = b;
  if (norm.rms) return true;
  const Tensor& beta = *norm.bias;
  const FoldKey key{w.raw_data(), w.dim(0), gamma.raw_data(),
                    beta.empty() ? nullptr : beta.raw_data(),
                    b.empty() ? nullptr : b.raw_data()};
  for (const auto& [k, fold] : layer_norm_folds_) {
    if (k == key) {
      gemv_norm->row_sums = fold.row_sums;
      *gemv_bias = fold.bias;
      return true;
    }
  }
  // Folding copies and synchronizes, which a capture cannot contain (the
  // first decode step is eager, so a replay never gets here).
  if (mode_ != Mode::kEager) return false;
  absl::StatusOr<LayerNormFold> fold = FoldLayerNorm(*ctx_, w, gamma, beta, b);
  Check(fold.status(), "FoldLayerNorm");
  layer_norm_folds_.emplace_back(key, *fold);
  gemv_norm->row_sums = fold->row_sums;
  *gemv_bias = fold->bias;
  return true;
}

void CudaBackend::NormLinearGroup(const Tensor& x, const InputNorm& norm,
                                  absl::Span<const Tensor* const> w,
                                  absl::Span<const Tensor* const> b,
                                  std::optional<Activation> activation,
                                  absl::Span<Tensor* const> y) {
  Tensor fw, fb, fy, bias;
  GemvNorm gemv_norm;
  if (!SpanGroup(x, w, b, y, &fw, &fb, &fy) ||
      !FusedNorm(norm, x, fw, fb, &gemv_norm, &bias)) {
    Backend::NormLinearGroup(x, norm, w, b, activation, y);
    return;
  }
  CheckNotTransposedInPlace(fw, "NormLinearGroup");
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpNormLinear, x), fw), bias);
  sig = MixTensor(MixTensor(MixTensor(sig, fy), gemv_norm.weight),
                  gemv_norm.row_sums);
  sig = MixDouble(sig, norm.eps);
  if (!Op(Mix(sig, activation.has_value()
                       ? static_cast<uint64_t>(*activation) + 1
                       : 0))) {
    return;
  }
  GemvOptions options;
  options.norm = gemv_norm;
  options.activation = activation;
  Check(Gemv(*active_, x, fw, bias, &fy, options), "NormLinearGroup");
}

void CudaBackend::LinearAccumulate(const Tensor& x, const Tensor& w,
                                   const Tensor& bias, Tensor* residual) {
  if (!FusesInputNorm() || x.rank() != 2 || x.dim(0) > kGemvMaxBatch) {
    Backend::LinearAccumulate(x, w, bias, residual);
    return;
  }
  CheckNotTransposedInPlace(w, "LinearAccumulate");
  uint64_t sig = MixTensor(MixTensor(kOpLinearAccumulate, x), w);
  if (!Op(MixTensor(MixTensor(sig, bias), *residual))) return;
  GemvOptions options;
  options.accumulate = true;
  options.early_loads_every = static_cast<int>(options_.accumulate_early_every);
  Check(Gemv(*active_, x, w, bias, residual, options), "LinearAccumulate");
}

void CudaBackend::NormGatedMlp(Tensor* residual, const InputNorm& norm,
                               const Tensor& w_up, const Tensor& w_gate,
                               const Tensor& b_up, const Tensor& b_gate,
                               Activation activation, const Tensor& w_down,
                               const Tensor& b_down, Tensor* up, Tensor* gate) {
  // As GatedMlp, with the norm in the up/gate GEMV's load and the residual
  // add in the down GEMV's epilogue: two launches for the whole block.
  // up, gate and w_down as GatedGemv wants them (one aligned row, f16/bf16).
  const Tensor* ws[] = {&w_up, &w_gate};
  const Tensor* bs[] = {&b_up, &b_gate};
  Tensor* ys[] = {up, gate};
  Tensor fw, fb, fy, bias;
  GemvNorm gemv_norm;
  const bool fuse = w_up.rank() == 2 && w_up.shape() == w_gate.shape() &&
                    up->shape() == gate->shape() &&
                    SpanGroup(*residual, ws, bs, ys, &fw, &fb, &fy) &&
                    GatedGemvSupported(*gate, *up, w_down) &&
                    FusedNorm(norm, *residual, fw, fb, &gemv_norm, &bias);
  if (!fuse) {
    Backend::NormGatedMlp(residual, norm, w_up, w_gate, b_up, b_gate,
                          activation, w_down, b_down, up, gate);
    return;
  }
  CheckNotTransposedInPlace(w_down, "NormGatedMlp");
  uint64_t sig = MixTensor(MixTensor(kOpNormGatedMlp, *residual), fw);
  sig = MixTensor(MixTensor(MixTensor(sig, bias), fy), gemv_norm.weight);
  sig =
      MixTensor(MixTensor(MixTensor(sig, gemv_norm.row_sums), w_down), b_down);
  sig = MixDouble(Mix(sig, static_cast<uint64_t>(activation)), norm.eps);
  if (!Op(sig)) return;
  GemvOptions options;
  options.norm = gemv_norm;
  options.activation = activation;
  options.activation_from_row = w_up.dim(0);
  if (!options_.gated_pairs) {
    Check(Gemv(*active_, *residual, fw, bias, &fy, options), "NormGatedMlp");
    Check(
        GatedGemv(*active_, std::nullopt, *gate, *up, w_down, b_down, residual,
                  /*accumulate=*/true),
        "NormGatedMlp");
    return;
  }
  // One warp owns neuron j's up and gate rows and writes act(gate) * up
  // into `up`, so the down GEMV reads one vector (gemv.h gated_pairs).
  options.gated_pairs = true;
  Check(Gemv(*active_, *residual, fw, bias, up, options), "NormGatedMlp");
  GemvOptions down;
  down.accumulate = true;
  Check(Gemv(*active_, *up, w_down, b_down, residual, down), "NormGatedMlp");
}

void CudaBackend::AddNorm(const Tensor& delta, Tensor* x, bool rms,
                          const Tensor& weight, const Tensor& bias, double eps,
                          Tensor* y) {
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpAddNorm, delta), *x), *y);
  sig = MixDouble(Mix(MixTensor(MixTensor(sig, weight), bias), rms), eps);
  if (!Op(sig)) return;
  // norms.h: the kernel's input is residual + x, written back to residual.
  Check(rms ? cuda::RmsNorm(*active_, delta, weight, eps, y, x)
            : cuda::LayerNorm(*active_, delta, weight, bias, eps, y, x),
        "AddNorm");
}

void CudaBackend::LayerNorm(const Tensor& x, const Tensor& weight,
                            const Tensor& bias, double eps, Tensor* y) {
  uint64_t sig = MixDouble(
      MixTensor(MixTensor(MixTensor(MixTensor(kOpLayerNorm, x), weight), bias),
                *y),
      eps);
  if (!Op(sig)) return;
  Check(cuda::LayerNorm(*active_, x, weight, bias, eps, y), "LayerNorm");
}

void CudaBackend::RmsNorm(const Tensor& x, const Tensor& weight, double eps,
                          Tensor* y) {
  uint64_t sig = MixDouble(
      MixTensor(MixTensor(MixTensor(kOpRmsNorm, x), weight), *y), eps);
  if (!Op(sig)) return;
  Check(cuda::RmsNorm(*active_, x, weight, eps, y), "RmsNorm");
}

void CudaBackend::AddInPlace(const Tensor& x, Tensor* y) {
  if (!Op(MixTensor(MixTensor(kOpAdd, x), *y))) return;
  Check(cuda::AddInPlace(*active_, x, y), "AddInPlace");
}

void CudaBackend::Activate(Activation activation, Tensor* x) {
  if (!Op(Mix(MixTensor(kOpActivate, *x), static_cast<uint64_t>(activation)))) {
    return;
  }
  Check(cuda::Activate(*active_, activation, x), "Activate");
}

void CudaBackend::GatedActivate(Activation activation, const Tensor& gate,
                                Tensor* up) {
  if (!Op(Mix(MixTensor(MixTensor(kOpGated, gate), *up),
              static_cast<uint64_t>(activation)))) {
    return;
  }
  Check(cuda::GatedActivate(*active_, activation, gate, up), "GatedActivate");
}

DType CudaBackend::ProjectionInputDType(const Tensor& w, int64_t rows) const {
  // cuda::Linear's cuBLAS route takes x in w's dtype (RoundsInputForLinear).
  const bool gemm = rows > kGemvMaxBatch &&
                    (w.dtype() == DType::kF16 || w.dtype() == DType::kBF16);
  return options_.rounded_norm_output && gemm ? w.dtype() : DType::kF32;
}

void CudaBackend::LinearActivate(const Tensor& x, const Tensor& w,
                                 const Tensor& bias, Activation activation,
                                 Tensor* y) {
  if (!options_.fused_ops) {
    Backend::LinearActivate(x, w, bias, activation, y);
    return;
  }
  uint64_t sig = MixTensor(MixTensor(kOpLinearActivate, x), w);
  sig = MixTensor(MixTensor(sig, bias), *y);
  if (!Op(Mix(sig, static_cast<uint64_t>(activation)))) return;
  Check(cuda::Linear(*active_, *pool_, x, w, bias, y, activation),
        "LinearActivate");
}

void CudaBackend::GatedMlp(const Tensor& h, const Tensor& w_up,
                           const Tensor& w_gate, const Tensor& b_up,
                           const Tensor& b_gate, Activation activation,
                           const Tensor& w_down, const Tensor& b_down,
                           Tensor* up, Tensor* gate, Tensor* y) {
  CheckNotTransposedInPlace(w_down, "GatedMlp");
  // Fused when up/gate can run as one GEMV (as in LinearGroup) and the down
  // GEMV can take the product in its load (gemv.h GatedGemvSupported).
  const Tensor* ws[] = {&w_up, &w_gate};
  const Tensor* bs[] = {&b_up, &b_gate};
  const Tensor* ys[] = {up, gate};
  bool fuse = options_.fused_ops && h.rank() == 2 && h.dim(0) == 1 &&
              w_up.rank() == 2 && w_up.shape() == w_gate.shape() &&
              w_up.dim(1) == h.dim(1) && up->rank() == 2 &&
              up->shape() == gate->shape() && up->dim(0) == 1 &&
              up->dim(1) == w_up.dim(0) && up->dtype() == DType::kF32 &&
              Adjacent(ws) && Adjacent(ys) &&
              GatedGemvSupported(*gate, *up, w_down);
  if (fuse && (!b_up.empty() || !b_gate.empty())) {
    fuse = !b_up.empty() && !b_gate.empty() && Adjacent(bs);
  }
  if (!fuse) {
    if (options_.fused_ops && RoundsInputForLinear(*up, w_down)) {
      GatedMlpRounded(h, w_up, w_gate, b_up, b_gate, activation, w_down, b_down,
                      up, gate, y);
      return;
    }
    Backend::GatedMlp(h, w_up, w_gate, b_up, b_gate, activation, w_down, b_down,
                      up, gate, y);
    return;
  }
  const int64_t inter = w_up.dim(0);
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpGatedMlp, h), w_up), w_gate);
  sig = MixTensor(MixTensor(MixTensor(sig, b_up), b_gate), w_down);
  sig = MixTensor(MixTensor(MixTensor(MixTensor(sig, b_down), *up), *gate), *y);
  if (!Op(Mix(sig, static_cast<uint64_t>(activation)))) return;
  const Tensor fw = SpanOf(w_up, w_up.dtype(), {2 * inter, h.dim(1)});
  const Tensor fb =
      b_up.empty() ? Tensor() : SpanOf(b_up, b_up.dtype(), {2 * inter});
  Tensor fy = SpanOf(*up, DType::kF32, {1, 2 * inter});
  GemvOptions options;
  options.activation = activation;
  options.activation_from_row = inter;  // gate = act(h w_gate^T + b_gate).
  Check(Gemv(*active_, h, fw, fb, &fy, options), "GatedMlp");
  Check(GatedGemv(*active_, std::nullopt, *gate, *up, w_down, b_down, y),
        "GatedMlp");
}

void CudaBackend::GatedMlpRounded(const Tensor& h, const Tensor& w_up,
                                  const Tensor& w_gate, const Tensor& b_up,
                                  const Tensor& b_gate, Activation activation,
                                  const Tensor& w_down, const Tensor& b_down,
                                  Tensor* up, Tensor* gate, Tensor* y) {
  const Tensor* ws[] = {&w_up, &w_gate};
  const Tensor* bs[] = {&b_up, &b_gate};
  Tensor* ys[] = {up, gate};
  LinearGroup(h, ws, bs, ys);
  // The product goes straight into the dtype cuBLAS reads: one pass instead
  // of GatedActivate + the down GEMM's rounding copy, same bits.
  Tensor product = Allocate(w_down.dtype(), up->shape());
  if (Op(Mix(
          MixTensor(MixTensor(MixTensor(kOpGatedRounded, *gate), *up), product),
          static_cast<uint64_t>(activation)))) {
    Check(GatedActivateRounded(*active_, activation, *gate, *up, &product),
          "GatedMlp");
  }
  Linear(product, w_down, b_down, y);
}

}  // namespace dynsparse::cuda
