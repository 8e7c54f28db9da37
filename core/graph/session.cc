#include "core/graph/session.h"

#include <cmath>
#include <deque>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dynsparse {

Session::Session(const ModelConfig& config, const ModelWeights& weights,
                 Backend& backend, Method& method, int64_t max_tokens)
    : config_(config),
      weights_(weights),
      backend_(backend),
      method_(method),
      rope_(MakeRopeTable(config)),
      cache_(config, max_tokens,
             backend.KvCacheDtype(weights.layers.empty()
                                      ? DType::kF32
                                      : weights.layers[0].wq.dtype()),
             backend),
      sparse_(config, weights, backend, rope_, method) {
  if (method_.SelectsTokens()) {
    tokens_ = std::make_unique<TokenState>(config, max_tokens);
  }
  method_.BeginSequence();
}

void Session::Reset() {
  cache_.set_length(0);
  if (tokens_ != nullptr) tokens_->Clear();
  method_.BeginSequence();
}

absl::Status Session::Truncate(int64_t length) {
  if (length < 0 || length > this->length()) {
    return absl::OutOfRangeError(
        absl::StrCat("cannot truncate a ", this->length(),
                     "-token sequence to ", length, " tokens"));
  }
  cache_.set_length(length);
  if (tokens_ != nullptr) tokens_->Truncate(length);
  return absl::OkStatus();
}

absl::Status Session::CheckTokens(absl::Span<const int32_t> tokens) const {
  if (tokens.empty()) return absl::InvalidArgumentError("no tokens to run");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token id ", tokens[i], " at index ", i,
          " is outside the vocabulary [0, ", config_.vocab_size, ")"));
    }
  }
  return CheckEnd(length() + static_cast<int64_t>(tokens.size()));
}

absl::Status Session::CheckEnd(int64_t end) const {
  if (end > capacity()) {
    return absl::OutOfRangeError(absl::StrCat("sequence of ", end,
                                              " tokens exceeds the session's ",
                                              capacity(), "-token KV cache"));
  }
  if (config_.family == ModelFamily::kOpt &&
      end > config_.max_position_embeddings) {
    return absl::OutOfRangeError(
        absl::StrCat("sequence of ", end, " tokens exceeds this OPT model's ",
                     config_.max_position_embeddings, " learned positions"));
  }
  if (config_.sliding_window > 0 && end > config_.sliding_window) {
    return absl::UnimplementedError(absl::StrCat(
        "sequence of ", end, " tokens exceeds sliding_window ",
        config_.sliding_window, "; windowed attention is not implemented"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Session::Forward(absl::Span<const int32_t> tokens,
                                        int64_t first_logit_row) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (absl::Status s = CheckTokens(tokens); !s.ok()) return s;
  if (first_logit_row < 0 || first_logit_row >= n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "first_logit_row ", first_logit_row, " outside [0, ", n, ")"));
  }
  return Step(tokens, /*greedy=*/false, first_logit_row);
}

absl::Status Session::DecodeGreedy(
    int32_t first_token, int64_t max_steps,
    const std::function<bool(int32_t)>& on_token) {
  if (max_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("DecodeGreedy: max_steps ", max_steps, " must be >= 1"));
  }
  if (absl::Status s = CheckTokens(absl::MakeConstSpan(&first_token, 1));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckEnd(length() + max_steps); !s.ok()) return s;
  if (device_token_.empty()) {
    absl::StatusOr<Tensor> t = backend_.Upload(Tensor::Zeros(DType::kI32, {1}));
    if (!t.ok()) return t.status();
    device_token_ = *t;
  }
  backend_.StageIds(absl::MakeConstSpan(&first_token, 1), &device_token_);

  // Step i feeds the token step i - 1 chose (first_token for i = 0). With a
  // pipelining backend step i + 1 is launched before step i's token is read.
  const size_t depth = backend_.PipelinesSteps() ? 2 : 1;
  const int64_t start = length();
  std::deque<Tensor> chosen;  // Host tokens of the steps not yet delivered.
  int64_t launched = 0;
  int64_t delivered = 0;
  bool stopped = false;
  absl::Status status;
  while (true) {
    while (status.ok() && !stopped && launched < max_steps &&
           chosen.size() < depth) {
      absl::StatusOr<Tensor> token = Step({}, /*greedy=*/true, 0);
      if (!token.ok()) {
        status = token.status();
        break;
      }
      chosen.push_back(*std::move(token));
      ++launched;
    }
    if (chosen.empty()) break;
    if (absl::Status s = backend_.WaitStep(); !s.ok() && status.ok()) {
      status = s;
    }
    const int32_t token = chosen.front().data<int32_t>()[0];
    chosen.pop_front();
    if (!status.ok() || stopped) continue;  // Drain what still runs.
    ++delivered;
    stopped = !on_token(token);
  }
  if (!status.ok()) return status;
  // Steps launched after the stop fed tokens past it: forget them.
  return Truncate(start + delivered);
}

absl::StatusOr<Tensor> Session::Step(absl::Span<const int32_t> tokens,
                                     bool greedy, int64_t first_logit_row) {
  const int64_t n = greedy ? 1 : static_cast<int64_t>(tokens.size());
  std::vector<int32_t> positions(n);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(length()));
  const Phase phase =
      (length() == 0 || n > 1) ? Phase::kPrefill : Phase::kDecode;

  // A backend that deferred the step (CUDA graph replay) may ask for it to
  // be run again; the second attempt runs eagerly.
  for (int attempt = 0;; ++attempt) {
    if (tokens_ != nullptr) tokens_->BeginStep();
    backend_.BeginStep(n, length() + n);
    Tensor x = greedy ? EmbedDevice(device_token_, positions)
                      : Embed(tokens, positions);
    absl::StatusOr<Tensor> logits =
        RunStep(std::move(x), positions, phase, first_logit_row);
    Tensor result;
    if (logits.ok() && greedy) {
      // Greedy decoding: the next step reads the choice where it is.
      backend_.Argmax(*logits, &device_token_);
      result = backend_.ToHost(device_token_);
    } else if (logits.ok()) {
      result = backend_.ToHost(*logits);
    }
    absl::StatusOr<StepOutcome> outcome =
        greedy ? backend_.EndStepAsync() : backend_.EndStep();
    if (!logits.ok()) return logits.status();
    if (!outcome.ok()) return outcome.status();
    if (*outcome == StepOutcome::kDone) {
      cache_.set_length(length() + n);
      return result;
    }
    if (tokens_ != nullptr) tokens_->Rollback();  // Nothing of it counts.
    if (attempt > 0) {
      return absl::InternalError(
          absl::StrCat(backend_.name(), " asked to rerun a step twice"));
    }
  }
}

absl::StatusOr<Tensor> Session::RunStep(Tensor x,
                                        absl::Span<const int32_t> positions,
                                        Phase phase, int64_t first_logit_row) {
  const int64_t n = static_cast<int64_t>(positions.size());
  Tensor pending;  // Pre-norm: the last block's output, not yet added to x.
  if (tokens_ != nullptr) {
    absl::Status s =
        RunTokenLayers(positions, phase, first_logit_row, &x, &pending);
    if (!s.ok()) return s;
  } else if (!RunDecodeStack(positions, &x)) {
    for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
      RunLayer(layer, phase, positions, &x, &pending);
    }
  }

  // Token pruning leaves fewer rows in x; the logit rows are always its last.
  const int64_t out_rows = n - first_logit_row;
  const int64_t first_row = x.dim(0) - out_rows;
  Tensor rows = x.Rows(first_row, x.dim(0));
  if (pending.empty() && config_.final_norm && !config_.has_projection() &&
      backend_.FusesInputNorm()) {
    // The final norm inside the lm_head projection.
    Tensor logits =
        backend_.Allocate(DType::kF32, {out_rows, config_.vocab_size});
    const Tensor* ws[] = {&weights_.lm_head};
    const Tensor none;
    const Tensor* bs[] = {&none};
    Tensor* ys[] = {&logits};
    backend_.NormLinearGroup(
        rows, NormOf(weights_.final_norm_w, weights_.final_norm_b), ws, bs,
        std::nullopt, ys);
    return logits;
  }
  backend_.WaitAllSideWork();  // The ops below write x.
  if (!pending.empty() && config_.final_norm) {
    Tensor normed = backend_.Allocate(DType::kF32, rows.shape());
    backend_.AddNorm(pending.Rows(first_row, x.dim(0)), &rows,
                     config_.family != ModelFamily::kOpt, weights_.final_norm_w,
                     weights_.final_norm_b, config_.norm_eps, &normed);
    rows = normed;
  } else {
    if (!pending.empty()) {
      backend_.AddInPlace(pending.Rows(first_row, x.dim(0)), &rows);
    }
    if (config_.final_norm) {
      Tensor normed = backend_.Allocate(DType::kF32, rows.shape());
      Norm(rows, weights_.final_norm_w, weights_.final_norm_b, &normed);
      rows = normed;
    }
  }
  if (config_.has_projection()) {
    Tensor projected =
        backend_.Allocate(DType::kF32, {out_rows, config_.embed_dim()});
    backend_.Linear(rows, weights_.project_out, Tensor(), &projected);
    rows = projected;
  }
  Tensor logits =
      backend_.Allocate(DType::kF32, {out_rows, config_.vocab_size});
  backend_.Linear(rows, weights_.lm_head, Tensor(), &logits);
  return logits;
}

Tensor Session::Embed(absl::Span<const int32_t> tokens,
                      absl::Span<const int32_t> positions) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  Tensor embedded = backend_.Allocate(DType::kF32, {n, config_.embed_dim()});
  backend_.Embed(weights_.tok_embed, tokens, &embedded);
  return AddPositions(embedded, positions);
}

Tensor Session::EmbedDevice(const Tensor& tokens,
                            absl::Span<const int32_t> positions) {
  Tensor embedded =
      backend_.Allocate(DType::kF32, {tokens.numel(), config_.embed_dim()});
  backend_.EmbedIds(weights_.tok_embed, tokens, &embedded);
  return AddPositions(embedded, positions);
}

Tensor Session::AddPositions(const Tensor& embedded,
                             absl::Span<const int32_t> positions) {
  const int64_t n = embedded.dim(0);
  Tensor x = embedded;
  if (config_.has_projection()) {
    x = backend_.Allocate(DType::kF32, {n, config_.hidden_size});
    backend_.Linear(embedded, weights_.project_in, Tensor(), &x);
  }
  if (config_.family == ModelFamily::kOpt) {
    std::vector<int32_t> rows(n);
    for (int64_t i = 0; i < n; ++i) {
      rows[i] = positions[i] + static_cast<int32_t>(config_.position_offset);
    }
    Tensor pos = backend_.Allocate(DType::kF32, {n, config_.hidden_size});
    backend_.Embed(weights_.pos_embed, rows, &pos);
    backend_.AddInPlace(pos, &x);
  }
  return x;
}

void Session::Norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   Tensor* y) {
  if (config_.family == ModelFamily::kOpt) {
    backend_.LayerNorm(x, weight, bias, config_.norm_eps, y);
  } else {
    backend_.RmsNorm(x, weight, config_.norm_eps, y);
  }
}

Tensor Session::BlockInput(Tensor* x, Tensor* pending, const Tensor& weight,
                           const Tensor& bias, const Tensor& reader) {
  if (!config_.pre_norm) return *x;
  const int64_t rows = x->dim(0);
  const DType dtype = rows > SparseBlocks::kMaxRows
                          ? backend_.ProjectionInputDType(reader, rows)
                          : DType::kF32;
  Tensor normed = backend_.Allocate(dtype, x->shape());
  if (!pending->empty()) {
    // The previous block's residual add fused with this block's norm. It
    // writes x, which side work may still read (Backend::BeginSideWork).
    backend_.WaitAllSideWork();
    backend_.AddNorm(*pending, x, config_.family != ModelFamily::kOpt, weight,
                     bias, config_.norm_eps, &normed);
    *pending = Tensor();
  } else {
    Norm(*x, weight, bias, &normed);
  }
  return normed;
}

void Session::EndBlock(const Tensor& out, const Tensor& norm_weight,
                       const Tensor& norm_bias, Tensor* x, Tensor* pending) {
  if (config_.pre_norm) {
    *pending = out;  // Added by the next block's (or the final) norm.
    return;
  }
  backend_.WaitAllSideWork();
  backend_.AddInPlace(out, x);
  Tensor normed = backend_.Allocate(DType::kF32, x->shape());
  Norm(*x, norm_weight, norm_bias, &normed);
  *x = normed;
}

bool Session::PlainDenseRow(int64_t n) const {
  // A token-pruned step's one-row layers qualify too: x holds the whole
  // residual after them as after the AddNorm route, which is all the token
  // path's row moves (Aux Cache writes, gathers) need.
  return backend_.FusesInputNorm() && config_.pre_norm && n == 1 &&
         !method_.observes();
}

InputNorm Session::NormOf(const Tensor& weight, const Tensor& bias) const {
  InputNorm norm;
  norm.rms = config_.family != ModelFamily::kOpt;
  norm.weight = &weight;
  norm.bias = &bias;
  norm.eps = config_.norm_eps;
  return norm;
}

bool Session::RunDecodeStack(absl::Span<const int32_t> positions, Tensor* x) {
  if (!PlainDenseRow(x->dim(0)) || !method_.KeepsEverything()) return false;
  std::vector<Tensor*> keys(config_.num_layers), values(config_.num_layers);
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    keys[layer] = &cache_.keys(layer);
    values[layer] = &cache_.values(layer);
  }
  DecodeStackArgs args;
  args.config = &config_;
  args.layers = &weights_.layers;
  args.rope = &rope_;
  args.k_caches = keys;
  args.v_caches = values;
  args.position = positions.back();
  args.x = x;
  return backend_.DecodeStack(args);
}

void Session::RunLayer(int64_t layer, Phase phase,
                       absl::Span<const int32_t> positions, Tensor* x,
                       Tensor* pending, bool rows_changed) {
  Attention(layer, phase, positions, x, pending, rows_changed);
  Mlp(layer, phase, x, pending);
}

// Projections that share an input are written into one buffer (adjacent
// slices), which lets a backend run them as one GEMV (a single row) or one
// batched GEMM (more rows).
void Session::Attention(int64_t layer, Phase phase,
                        absl::Span<const int32_t> positions, Tensor* x,
                        Tensor* pending, bool rows_changed) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t n = x->dim(0);
  // The plain dense route: with nothing pending x already holds the whole
  // residual, so the method sees the same x whether the norm ran or not, and
  // the norm can wait for the q/k/v projection. A block that keeps every
  // head adds its output into x (pending stays empty), so the route resumes
  // after a block that left it.
  const bool plain = PlainDenseRow(n);
  const bool defer_norm = plain && pending->empty();
  Tensor h;
  if (!defer_norm) {
    h = BlockInput(x, pending, w.attn_norm_w, w.attn_norm_b, w.wq);
  }
  UnitSelection heads;
  method_.SelectHeads({layer, phase, rows_changed}, *x, &heads);
  backend_.WaitSideWork(heads.side_work);
  const bool accumulate = plain && heads.all;
  const bool fuse_norm = defer_norm && heads.all;
  if (defer_norm && !fuse_norm) {
    h = BlockInput(x, pending, w.attn_norm_w, w.attn_norm_b, w.wq);
  }
  // Token pruning needs the dense attention below (live keys, the probe's
  // query); head sparsity then still applies to W_O (OutOfKept).
  if (sparse_.enabled() && !heads.all && !heads.oracle &&
      phase == Phase::kDecode && n == 1 && !method_.observes() &&
      tokens_ == nullptr) {
    Tensor out = sparse_.DecodeAttention(layer, h, positions, heads, &cache_);
    EndBlock(out, w.attn_norm_w, w.attn_norm_b, x, pending);
    return;
  }
  sparse_.Flush(layer, &cache_);  // Dense attention reads every head's K/V.

  const int64_t qd = config_.q_dim(), kvd = config_.kv_dim();
  const Tensor qkv = backend_.Allocate(DType::kF32, {n * (qd + 2 * kvd)});
  Tensor q = qkv.Rows(0, n * qd).Reshape({n, qd});
  Tensor k = qkv.Rows(n * qd, n * (qd + kvd)).Reshape({n, kvd});
  Tensor v = qkv.Rows(n * (qd + kvd), n * (qd + 2 * kvd)).Reshape({n, kvd});
  const Tensor* ws[] = {&w.wq, &w.wk, &w.wv};
  const Tensor* bs[] = {&w.bq, &w.bk, &w.bv};
  Tensor* ys[] = {&q, &k, &v};
  if (fuse_norm) {
    backend_.NormLinearGroup(*x, NormOf(w.attn_norm_w, w.attn_norm_b), ws, bs,
                             std::nullopt, ys);
  } else {
    backend_.LinearGroup(h, ws, bs, ys);
  }

  Tensor context = backend_.Allocate(DType::kF32, {n, qd});
  AttentionArgs args;
  args.q = &q;
  args.k_cache = &cache_.keys(layer);
  args.v_cache = &cache_.values(layer);
  args.num_keys = positions.back() + 1;
  args.query_positions = positions;
  args.num_heads = config_.num_heads;
  args.num_kv_heads = config_.num_kv_heads;
  args.head_dim = config_.head_dim;
  args.scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
  args.out = &context;
  if (tokens_ == nullptr) {
    // Nothing reads q or k after the attention: RoPE, the KV-cache write and
    // the attention may run as one op (one kernel for a CUDA decode row).
    backend_.RopeWriteKvAttention(rope_, &q, &k, v, &cache_.keys(layer),
                                  &cache_.values(layer), args);
  } else {
    // Token pruning: the probe keeps the rotated q (last_query_), and the
    // keys are those live at this layer.
    backend_.RopeWriteKv(rope_, positions, config_.num_heads,
                         config_.num_kv_heads, &q, &k, v, &cache_.keys(layer),
                         &cache_.values(layer));
    if (!live_keys_.empty()) {
      args.key_positions = live_keys_;
      args.num_keys = static_cast<int64_t>(live_keys_.size());
    }
    last_query_ = q.Rows(n - 1, n);
    // The next layer's probe reads only q and this layer's keys, so it
    // starts before the attention: while the host waits for it and then
    // selects, the device still has the attention, the O-projection and
    // the MLP queued, not only the last two.
    if (!next_probe_keys_.empty()) StartNextProbe(layer);
    backend_.Attention(args);
  }
  if (method_.observes()) {
    method_.ObserveHeads({layer, phase}, backend_.ToHost(context));
  }
  if (!heads.all) {
    ResolveOracle(context, config_.head_dim, &heads);
    if (sparse_.enabled() && n <= SparseBlocks::kMaxRows) {
      Tensor out = sparse_.OutOfKept(layer, context, heads);
      EndBlock(out, w.attn_norm_w, w.attn_norm_b, x, pending);
      return;
    }
    backend_.MaskUnits(heads, config_.head_dim, &context);
  }

  if (accumulate) {
    backend_.WaitAllSideWork();
    backend_.LinearAccumulate(context, w.wo, w.bo, x);
    return;
  }
  Tensor out = backend_.Allocate(DType::kF32, x->shape());
  backend_.Linear(context, w.wo, w.bo, &out);
  EndBlock(out, w.attn_norm_w, w.attn_norm_b, x, pending);
}

void Session::Mlp(int64_t layer, Phase phase, Tensor* x, Tensor* pending) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t n = x->dim(0);
  const int64_t inter = config_.intermediate_size;
  // As in Attention; with something pending the MLP keeps AddNorm's route.
  const bool plain = PlainDenseRow(n) && pending->empty();
  Tensor h;
  if (!plain) h = BlockInput(x, pending, w.mlp_norm_w, w.mlp_norm_b, w.w_up);
  UnitSelection neurons;
  method_.SelectNeurons({layer, phase}, *x, &neurons);
  backend_.WaitSideWork(neurons.side_work);
  if (plain) {
    if (neurons.all && !sparse_.down_in_place(layer)) {
      FusedNormMlp(w, x);
      return;
    }
    h = BlockInput(x, pending, w.mlp_norm_w, w.mlp_norm_b, w.w_up);
  }
  const bool sparse = sparse_.enabled() && !neurons.all &&
                      n <= SparseBlocks::kMaxRows && !method_.observes();
  if (sparse && !neurons.oracle) {
    EndBlock(sparse_.Mlp(layer, h, neurons), w.mlp_norm_w, w.mlp_norm_b, x,
             pending);
    return;
  }

  Tensor up;
  if (config_.gated_mlp) {
    // Back to back, as q/k/v (see Attention).
    const Tensor both = backend_.Allocate(DType::kF32, {2 * n * inter});
    up = both.Rows(0, n * inter).Reshape({n, inter});
    Tensor gate = both.Rows(n * inter, 2 * n * inter).Reshape({n, inter});
    if (neurons.all && !method_.observes() && !sparse_.down_in_place(layer)) {
      // Nothing reads up or gate but the down projection: a backend may fuse
      // the whole MLP (Backend::GatedMlp). Not when W2 was transposed in
      // place: then only DownOfAll below may read it.
      Tensor down = backend_.Allocate(DType::kF32, x->shape());
      backend_.GatedMlp(h, w.w_up, w.w_gate, w.b_up, w.b_gate,
                        config_.activation, w.w_down, w.b_down, &up, &gate,
                        &down);
      EndBlock(down, w.mlp_norm_w, w.mlp_norm_b, x, pending);
      return;
    }
    const Tensor* ws[] = {&w.w_up, &w.w_gate};
    const Tensor* bs[] = {&w.b_up, &w.b_gate};
    Tensor* ys[] = {&up, &gate};
    backend_.LinearGroup(h, ws, bs, ys);
    backend_.GatedActivate(config_.activation, gate, &up);
  } else {
    up = backend_.Allocate(DType::kF32, {n, inter});
    backend_.LinearActivate(h, w.w_up, w.b_up, config_.activation, &up);
  }
  if (method_.observes()) {
    method_.ObserveNeurons({layer, phase}, backend_.ToHost(up));
  }
  if (!neurons.all) {
    ResolveOracle(up, 1, &neurons);
    if (sparse) {
      EndBlock(sparse_.DownOfKept(layer, up, neurons), w.mlp_norm_w,
               w.mlp_norm_b, x, pending);
      return;
    }
    backend_.MaskUnits(neurons, 1, &up);
  }

  if (sparse_.down_in_place(layer)) {
    EndBlock(sparse_.DownOfAll(layer, up), w.mlp_norm_w, w.mlp_norm_b, x,
             pending);
    return;
  }
  Tensor down = backend_.Allocate(DType::kF32, x->shape());
  backend_.Linear(up, w.w_down, w.b_down, &down);
  EndBlock(down, w.mlp_norm_w, w.mlp_norm_b, x, pending);
}

void Session::FusedNormMlp(const LayerWeights& w, Tensor* x) {
  const int64_t inter = config_.intermediate_size;
  const InputNorm norm = NormOf(w.mlp_norm_w, w.mlp_norm_b);
  if (config_.gated_mlp) {
    // Adjacent up and gate, as in Mlp, so a backend can run one GEMV.
    Tensor both = backend_.Allocate(DType::kF32, {2 * inter});
    Tensor up = both.Rows(0, inter).Reshape({1, inter});
    Tensor gate = both.Rows(inter, 2 * inter).Reshape({1, inter});
    backend_.WaitAllSideWork();
    backend_.NormGatedMlp(x, norm, w.w_up, w.w_gate, w.b_up, w.b_gate,
                          config_.activation, w.w_down, w.b_down, &up, &gate);
    return;
  }
  Tensor up = backend_.Allocate(DType::kF32, {1, inter});
  const Tensor* ws[] = {&w.w_up};
  const Tensor* bs[] = {&w.b_up};
  Tensor* ys[] = {&up};
  backend_.NormLinearGroup(*x, norm, ws, bs, config_.activation, ys);
  backend_.WaitAllSideWork();
  backend_.LinearAccumulate(up, w.w_down, w.b_down, x);
}

void Session::ResolveOracle(const Tensor& x, int64_t unit_width,
                            UnitSelection* selection) {
  if (selection->all || !selection->oracle) return;
  const int64_t rows = x.dim(0);
  Tensor norms = backend_.Allocate(DType::kF32, {rows, x.dim(1) / unit_width});
  backend_.UnitNorms(x, unit_width, &norms);
  selection->ids = backend_.Allocate(DType::kI32, {rows, selection->per_row});
  backend_.TopK(norms, selection->per_row, &selection->ids);
  selection->oracle = false;
}

}  // namespace dynsparse
