// Backend: the operations the model graph is written against.
//
// The graph (core/graph/forward.cc) is written once; kernels/cpu implements
// these ops with Eigen + OpenMP and kernels/cuda with cuBLAS and our kernels.
// Activations are f32 on the CPU backend; weights may be f32, f16 or bf16 and
// are converted on the fly where they are read.
#ifndef DYNSPARSE_CORE_GRAPH_BACKEND_H_
#define DYNSPARSE_CORE_GRAPH_BACKEND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/rope.h"
#include "core/graph/unit_selection.h"
#include "core/model_config.h"
#include "core/model_weights.h"
#include "core/tensor.h"

namespace dynsparse {

// Causal attention of `q` rows over the first `num_keys` rows of a layer's KV
// cache. Query row i sits at position query_positions[i]; key row j sits at
// position j and is visible to query i iff j <= query_positions[i].
// Token pruning (LazyLLM) passes `key_positions` instead: the keys are the
// cache rows key_positions[0..num_keys), ascending, each at its own (original)
// position, visible to query i iff key_positions[j] <= query_positions[i].
struct AttentionArgs {
  const Tensor* q = nullptr;        // [n, num_heads * head_dim]
  const Tensor* k_cache = nullptr;  // [capacity, num_kv_heads * head_dim]
  const Tensor* v_cache = nullptr;
  int64_t num_keys = 0;
  absl::Span<const int32_t> query_positions;
  absl::Span<const int32_t> key_positions;  // Empty: keys 0..num_keys-1.
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // GQA: query head h reads kv head h / (H / KV).
  int64_t head_dim = 0;
  float scale = 1.0f;
  Tensor* out = nullptr;  // [n, num_heads * head_dim]
};

// The token-scoring probe of LazyLLM: the attention probabilities of one
// query row over a set of cached keys, averaged over all query heads (GQA:
// every query head, each reading its kv head). Only this row's scores exist,
// never the n x n matrix; no causal mask (every key precedes the query).
struct LastQueryArgs {
  const Tensor* q = nullptr;        // [1, num_heads * head_dim], after RoPE
  const Tensor* k_cache = nullptr;  // [capacity, num_kv_heads * head_dim]
  absl::Span<const int32_t> key_positions;  // Cache rows scored, ascending.
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
  Tensor* out = nullptr;  // f32 [key_positions.size()]
};

// Lazy K/V completion for skipped heads (DejaVu's ring, METHODS.md §1.8;
// core/graph/sparse_blocks.h). A layer keeps the attention inputs of its
// last F decode tokens in a ring; a kv head's K/V for a ring token is computed
// exactly once: when the head is next active, at the latest F - 1 steps
// later (a head owing the K/V of the token whose slot the next token will
// take is active for that step), or at a flush.
struct LazyKvArgs {
  // This token's attention input [1, hidden] (post-norm), or null for a flush
  // without a new token (before a dense attention step reads the cache).
  const Tensor* h = nullptr;
  // Active query heads, i32 [1, K] on the device; kv head g is active when
  // some active query head maps to it (GQA: q head / (H / KV)). Ignored
  // (may be null) when flushing.
  const Tensor* head_ids = nullptr;
  // {position, slot, flush}: the token's position, its ring slot, and 1 when
  // every kv head completes every pending slot this step (SparseBlocks
  // flushes only without a new token, h null). Host values (staged
  // on CUDA, so a decode step keeps one graph whatever the values are).
  absl::Span<const int32_t> step;
  Tensor* ring_x = nullptr;        // f32 [F, hidden]
  Tensor* ring_pos = nullptr;      // i32 [F]: the position each slot holds
  Tensor* ring_pending = nullptr;  // i32 [F, num_kv_heads]: 1 = K/V missing
  const Tensor* wk = nullptr;      // [kv_dim, hidden]
  const Tensor* wv = nullptr;
  const Tensor* bk = nullptr;  // [kv_dim] or empty
  const Tensor* bv = nullptr;
  const RopeTable* rope = nullptr;  // Applied to K when enabled().
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  Tensor* k_cache = nullptr;  // [capacity, kv_dim]
  Tensor* v_cache = nullptr;
};

// A block's pre-norm, for the ops below that normalise their own input
// (Backend::NormLinearGroup, NormGatedMlp): RmsNorm(x, weight) when `rms`,
// else LayerNorm(x, weight, bias) (bias may be empty).
struct InputNorm {
  bool rms = true;
  const Tensor* weight = nullptr;
  const Tensor* bias = nullptr;
  double eps = 0.0;
};

// One decode row through every decoder layer (Backend::DecodeStack): the
// residual x enters after the embedding and leaves before the final norm.
struct DecodeStackArgs {
  const ModelConfig* config = nullptr;
  const std::vector<LayerWeights>* layers = nullptr;
  const RopeTable* rope = nullptr;
  absl::Span<Tensor* const> k_caches;  // One per layer, as Attention's.
  absl::Span<Tensor* const> v_caches;
  int32_t position = 0;  // Of the row; the caches hold positions below it.
  Tensor* x = nullptr;   // f32 [1, hidden], updated in place.
};

// What a backend says at the end of one Session::Forward step.
enum class StepOutcome {
  kDone,   // Outputs (including ToHost results) are valid.
  kRerun,  // Nothing ran (e.g. a CUDA graph replay did not match the ops):
           // run the same step again; the backend runs it eagerly.
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  // Activation storage on this backend's device. Contents are unspecified
  // (CpuBackend zero-fills; CudaBackend recycles): every op writes its whole
  // output.
  virtual Tensor Allocate(DType dtype, Shape shape) = 0;
  // The element type of KvCache's keys and values for a model whose
  // projection weights are `weights`: f32 unless a backend's attention
  // kernels read a narrower cache (CudaBackend: f16 for f16 and bf16
  // weights). Ops that take a cache accept it in this type.
  virtual DType KvCacheDtype(DType weights) const { return DType::kF32; }

  // Bracket the ops of one Session::Forward of `rows` new tokens, after
  // which the sequence holds `keys` tokens (the most any row attends to).
  // Between them a backend may defer work (CudaBackend captures
  // single-token steps into a CUDA graph and replays it), so host tensors
  // returned by ToHost hold their values only after EndStep returns kDone.
  virtual void BeginStep(int64_t rows, int64_t keys) {}
  virtual absl::StatusOr<StepOutcome> EndStep() { return StepOutcome::kDone; }
  // Pipelined steps (Session::DecodeGreedy): EndStepAsync ends a step like
  // EndStep but may return while its work still runs, so the host prepares
  // the next step meanwhile; BeginStep then does not wait for it. A step's
  // ToHost results hold their values once WaitStep() has returned for it
  // (WaitStep waits for the oldest step not yet waited for, in launch order;
  // nothing to wait for is no error). Inputs of a step run this way must be
  // device tensors or values staged inside the step. Defaults: EndStep, and
  // nothing to wait for.
  virtual absl::StatusOr<StepOutcome> EndStepAsync() { return EndStep(); }
  virtual absl::Status WaitStep() { return absl::OkStatus(); }
  // True when a step may still run after EndStepAsync returns. Otherwise its
  // results are final then, and a caller must read them before the next
  // step (CpuBackend's ToHost hands back the device tensor itself).
  virtual bool PipelinesSteps() const { return false; }

  // out[i, :] = table[ids[i], :]  (out is f32 [n, width]).
  virtual void Embed(const Tensor& table, absl::Span<const int32_t> ids,
                     Tensor* out) = 0;
  // y = x * w^T (+ bias): x [n, in] f32, w [out, in], bias [out] or empty.
  virtual void Linear(const Tensor& x, const Tensor& w, const Tensor& bias,
                      Tensor* y) = 0;
  // y[i] = x * w[i]^T (+ b[i]) for weights sharing one input (q/k/v,
  // up/gate); b[i] may be empty. Runs Linear per weight unless the backend
  // fuses them (CUDA: one GEMV when the weights, biases and outputs are
  // adjacent in memory).
  virtual void LinearGroup(const Tensor& x, absl::Span<const Tensor* const> w,
                           absl::Span<const Tensor* const> b,
                           absl::Span<Tensor* const> y);
  // h = x + delta (x updated in place), then y = norm(h) with LayerNorm
  // (bias may be empty: weight and bias as LayerNorm) or RmsNorm (`rms`).
  // The residual add and the next block's pre-norm in one pass on CUDA.
  virtual void AddNorm(const Tensor& delta, Tensor* x, bool rms,
                       const Tensor& weight, const Tensor& bias, double eps,
                       Tensor* y);
  virtual void LayerNorm(const Tensor& x, const Tensor& weight,
                         const Tensor& bias, double eps, Tensor* y) = 0;
  virtual void RmsNorm(const Tensor& x, const Tensor& weight, double eps,
                       Tensor* y) = 0;
  // y += x (same shape).
  virtual void AddInPlace(const Tensor& x, Tensor* y) = 0;
  virtual void Activate(Activation activation, Tensor* x) = 0;
  // up = act(gate) * up, elementwise (SwiGLU when act is SiLU).
  virtual void GatedActivate(Activation activation, const Tensor& gate,
                             Tensor* up) = 0;
  // Rotates each head of x ([n, heads * head_dim]) by its row's position.
  virtual void ApplyRope(const RopeTable& rope,
                         absl::Span<const int32_t> positions, int64_t heads,
                         Tensor* x) = 0;
  // cache rows positions[i] = rows[i].
  virtual void WriteRows(const Tensor& rows,
                         absl::Span<const int32_t> positions,
                         Tensor* cache) = 0;
  virtual void Attention(const AttentionArgs& args) = 0;
  // The attention prologue of a step: RoPE of q ([n, num_heads * head_dim])
  // and k ([n, num_kv_heads * head_dim]) when rope.enabled(), then k and v
  // written to cache rows positions[i]. Default: ApplyRope and WriteRows;
  // CUDA does it in one kernel (one launch instead of three per layer).
  virtual void RopeWriteKv(const RopeTable& rope,
                           absl::Span<const int32_t> positions,
                           int64_t num_heads, int64_t num_kv_heads, Tensor* q,
                           Tensor* k, const Tensor& v, Tensor* k_cache,
                           Tensor* v_cache);
  // A step's attention from its q/k/v projections: RopeWriteKv at
  // args.query_positions, then Attention(args), where args.q is q and
  // args.k_cache / v_cache are k_cache / v_cache. Afterwards q and k hold
  // unspecified values: CUDA, for one new row over the whole cache, rotates
  // them in registers inside the decode attention (one launch instead of
  // two). Default: exactly RopeWriteKv, then Attention.
  virtual void RopeWriteKvAttention(const RopeTable& rope, Tensor* q, Tensor* k,
                                    const Tensor& v, Tensor* k_cache,
                                    Tensor* v_cache, const AttentionArgs& args);
  // --- Work beside the main sequence (DejaVu's predictors, LazyLLM's
  // probe and its download) ---
  // Ops issued between BeginSideWork() and EndSideWork() start after every
  // op issued before BeginSideWork() and may run concurrently with the ops
  // issued after them, until WaitSideWork(token) orders every later op after
  // that work. Side work must read only tensors nothing issued later writes,
  // except the residual stream: Session calls WaitAllSideWork() before any
  // op that writes it, so a method's side work may read the x it was given.
  // CUDA runs it on a second stream (TopK's one block beside the attention
  // block). Defaults: ops run in order; the token is 0 and waiting on it does
  // nothing.
  virtual void BeginSideWork() {}
  virtual int EndSideWork() { return 0; }
  virtual void WaitSideWork(int token) { (void)token; }
  // WaitSideWork for every token issued so far (tokens stay valid).
  virtual void WaitAllSideWork() {}
  // The dtype in which a projection by w over `rows` rows wants its input.
  // Session writes a block's normed input in it when only dense projections
  // read it (AddNorm, LayerNorm, RmsNorm then take that y). CUDA: w's f16 /
  // bf16 for cuBLAS prefills, the rounding Linear would otherwise do in a
  // pass of its own. Default: f32.
  virtual DType ProjectionInputDType(const Tensor& w, int64_t rows) const {
    (void)w;
    (void)rows;
    return DType::kF32;
  }
  // y = act(x * w^T (+ bias)): the ungated MLP's up projection. Default:
  // Linear then Activate; CUDA applies the activation in the GEMV epilogue.
  virtual void LinearActivate(const Tensor& x, const Tensor& w,
                              const Tensor& bias, Activation activation,
                              Tensor* y);
  // The gated MLP after its norm: up = h w_up^T + b_up, gate = h w_gate^T +
  // b_gate, y = (act(gate) * up) w_down^T + b_down (biases may be empty).
  // up and gate are scratch: their contents afterwards are unspecified.
  // Default: LinearGroup, GatedActivate, Linear. CUDA at batch 1: the
  // activation in the up/gate GEMV's epilogue and the product in the down
  // GEMV's input load (two launches instead of three).
  virtual void GatedMlp(const Tensor& h, const Tensor& w_up,
                        const Tensor& w_gate, const Tensor& b_up,
                        const Tensor& b_gate, Activation activation,
                        const Tensor& w_down, const Tensor& b_down, Tensor* up,
                        Tensor* gate, Tensor* y);

  // --- The residual stream without norm launches (dense decode) ---
  // Session takes these on its plain dense route (one row, every head and
  // neuron) when FusesInputNorm() is true: the producing projection adds
  // into the residual and the consuming projection normalises its input.
  // The defaults are exactly the unfused sequence, so they compute what
  // AddNorm's route computes.
  virtual bool FusesInputNorm() const { return false; }
  // y[i] = act(norm(x) * w[i]^T (+ b[i])) (act when `activation` is set).
  // Default: the norm into a scratch tensor, then LinearGroup (or
  // LinearActivate per weight).
  virtual void NormLinearGroup(const Tensor& x, const InputNorm& norm,
                               absl::Span<const Tensor* const> w,
                               absl::Span<const Tensor* const> b,
                               std::optional<Activation> activation,
                               absl::Span<Tensor* const> y);
  // residual += x * w^T (+ bias). Default: Linear, then AddInPlace.
  virtual void LinearAccumulate(const Tensor& x, const Tensor& w,
                                const Tensor& bias, Tensor* residual);
  // residual += GatedMlp(norm(residual)): the whole gated MLP block. up and
  // gate are scratch as in GatedMlp. Default: the norm, GatedMlp into a
  // scratch tensor, AddInPlace.
  virtual void NormGatedMlp(Tensor* residual, const InputNorm& norm,
                            const Tensor& w_up, const Tensor& w_gate,
                            const Tensor& b_up, const Tensor& b_gate,
                            Activation activation, const Tensor& w_down,
                            const Tensor& b_down, Tensor* up, Tensor* gate);
  // The plain dense route's layers all at once (CUDA: one persistent
  // kernel), for a method that keeps every head and neuron. False, having
  // done nothing, where the backend does not run this model so; Session then
  // runs the layers one by one.
  virtual bool DecodeStack(const DecodeStackArgs& args) { return false; }
  // Copies a host tensor (any dtype) to this backend's device, e.g. the
  // predictor weights a method brings. CPU: the tensor itself.
  virtual absl::StatusOr<Tensor> Upload(const Tensor& host);
  // indices[r, :] = ids of the k largest scores[r, :], ascending by id
  // (scores f32 [rows, n], indices i32 [rows, k], 0 < k <= n). Ties go to the
  // lower id. Default: on host tensors only.
  virtual void TopK(const Tensor& scores, int64_t k, Tensor* indices);
  // norms[r, u] = L2 norm of x[r, u * unit_width, (u + 1) * unit_width)
  // (unit_width 1: |x|). Default: on host tensors only.
  virtual void UnitNorms(const Tensor& x, int64_t unit_width, Tensor* norms);
  // Masked execution of a unit selection: zeroes, per row, the units (blocks
  // of `unit_width` columns) that the row does not keep (host `indices` or
  // device `ids`; oracle selections are resolved to ids by the graph first).
  virtual void MaskUnits(const UnitSelection& keep, int64_t unit_width,
                         Tensor* x) = 0;
  // --- Sparse execution (DejaVu; core/graph/sparse_blocks.h) ---
  // `ids` below are i32 [rows, K] on this device (row r's kept unit ids, each
  // in [0, units)); a unit is `unit_width` consecutive weight rows (neurons:
  // 1, heads: head_dim). Backends that return false here run sparse methods
  // masked (Session falls back).
  virtual bool SupportsSparse() const { return false; }
  // ids = the host values (rows * K, row-major), staged for this step.
  // Outside a step the values are in place before any later step runs.
  virtual void StageIds(absl::Span<const int32_t> host, Tensor* ids);
  // A [in, out] copy of weight w [out, in] in w's dtype (the down projection
  // that GatherLinearT reads row-wise). Made once per weight and cached by the
  // backend; default: on host tensors.
  const Tensor& TransposedWeight(const Tensor& w);
  // y[r, j * uw + i] = act(x[r] . w[ids[r, j] * uw + i] + bias[...]) (act
  // applied only when `activate`): the gathered up projection (DejaVu's
  // gather-GEMV with fused bias and activation) and head-subset Q.
  virtual void GatherLinear(const Tensor& x, const Tensor& w,
                            const Tensor& bias, const Tensor& ids,
                            int64_t unit_width, bool activate,
                            Activation activation, Tensor* y);
  // Gated MLP, gathered: y[r, j] = act(x[r] . w_gate[id] + b_gate[id]) *
  // (x[r] . w_up[id] + b_up[id]) with id = ids[r, j].
  virtual void GatherGatedLinear(const Tensor& x, const Tensor& w_up,
                                 const Tensor& w_gate, const Tensor& b_up,
                                 const Tensor& b_gate, const Tensor& ids,
                                 Activation activation, Tensor* y);
  // y[r, :] = sum_j x[r, j] * w_t[ids[r, j], :] + bias: the down projection
  // over the kept neurons, from its transposed copy w_t [units, out] (each
  // neuron's weights contiguous). Empty ids: all units (x is [rows, units]).
  virtual void GatherLinearT(const Tensor& x, const Tensor& w_t,
                             const Tensor& bias, const Tensor& ids, Tensor* y);
  // The sparse MLP over the kept neurons ids [rows, k]: GatherLinear (with
  // `act`; GatherGatedLinear when w_gate is given) into `hidden` [rows, k],
  // then GatherLinearT over w_down_t into y. A backend may run it as one
  // kernel for a decode row and then leaves `hidden` unwritten.
  virtual void GatherMlp(const Tensor& x, const Tensor& w_up,
                         const Tensor& b_up, const Tensor* w_gate,
                         const Tensor* b_gate, const Tensor& w_down_t,
                         const Tensor& b_down, const Tensor& ids,
                         Activation act, Tensor* hidden, Tensor* y);
  // y[r, o] = sum_j sum_i x[r, j * uw + i] * w[o, ids[r, j] * uw + i] +
  // bias[o]: the head-subset output projection (x holds the kept heads'
  // contexts, compact).
  virtual void GatherColumnsLinear(const Tensor& x, const Tensor& w,
                                   const Tensor& bias, const Tensor& ids,
                                   int64_t unit_width, Tensor* y);
  // y[r, j * uw + i] = x[r, ids[r, j] * uw + i] (compacts kept units).
  virtual void GatherColumns(const Tensor& x, const Tensor& ids,
                             int64_t unit_width, Tensor* y);
  // Decode attention of the kept heads only: args.q and args.out are
  // compact [n, K * head_dim]; compact head j is query head head_ids[r, j]
  // (kv head head_ids / (H / KV)).
  virtual void SparseAttention(const AttentionArgs& args,
                               const Tensor& head_ids);
  virtual void LazyKv(const LazyKvArgs& args);

  // Copies a device tensor to a host tensor (identity on CPU): f32 for
  // floating-point tensors, i32 for i32 ones.
  virtual Tensor ToHost(const Tensor& x) = 0;

  // Greedy decoding on the device (Session::DecodeGreedy): the next step's
  // token never visits the host first.
  // ids[r] = the column of the largest logit of row r (f32 [rows, vocab]);
  // ties go to the lowest id, as Sampler's greedy choice. ids: i32 [rows] on
  // this device. Default: on host tensors.
  virtual void Argmax(const Tensor& logits, Tensor* ids);
  // Embed with ids already on this device (i32 [n], each in range: the
  // caller's duty). Default: host ids, through Embed.
  virtual void EmbedIds(const Tensor& table, const Tensor& ids, Tensor* out);

  // Token-axis ops (LazyLLM, core/graph/session_tokens.cc).
  // dst[dst_rows[i], :] = src[src_rows[i], :] for f32 matrices of one width:
  // row gathers (compaction) and scatters (Aux Cache writes) in one op.
  // Default: host memory only; device backends override.
  virtual void CopyRows(const Tensor& src, absl::Span<const int32_t> src_rows,
                        absl::Span<const int32_t> dst_rows, Tensor* dst);
  virtual void LastQueryAttention(const LastQueryArgs& args) = 0;
  // indices = the ascending positions of the `count` largest scores (f32
  // [n], finite), ties to the lower position (core/graph/top_count.h);
  // i32 [count] on this device, 0 < count < n. LazyLLM's choice, run next
  // to the probe so the host reads `count` indices, not n scores.
  // Default: host tensors.
  virtual void TopCount(const Tensor& scores, int64_t count, Tensor* indices);
  // Whether Session picks LazyLLM's tokens with TopCount (true) or on the
  // host from downloaded scores: the same choice, a switch for A/B timing.
  virtual bool TopCountEnabled() const { return true; }
  // A copy whose values are valid on return, even inside a step: the host
  // decides on them before the step goes on (token selection). A backend that
  // replays recorded steps cannot honour it and runs such steps eagerly.
  virtual Tensor ReadNow(const Tensor& x) { return ToHost(x); }
  // ReadNow in two halves, so the host can queue more work before it waits:
  // StartRead queues the download of x (f32 or i32; nothing may write x until
  // FinishRead) and returns at once; FinishRead returns its values, waiting
  // for that download only, not for the ops queued after it. One read may
  // be started at a time. Default: the values are read in StartRead.
  struct StartedRead {
    Tensor values;  // Host f32 or i32, filled by FinishRead at the latest.
    Tensor source;  // x, when the backend reads it in FinishRead only.
  };
  virtual StartedRead StartRead(const Tensor& x) {
    return {ReadNow(x), Tensor()};
  }
  virtual Tensor FinishRead(StartedRead read) { return read.values; }

  // Timing support for `dynsparse bench` and the latency metric.
  // Device time of the last completed step in ms (CUDA events around the
  // step's work), or a negative value when the backend has no device clock.
  virtual double LastStepDeviceMs() const { return -1.0; }
  // Host time of the last step in ms, from its start to the launch of its
  // recorded work (a replay's pass over the graph's ops, which the device
  // waits for), and of that launch call; negative when not recorded.
  virtual double LastStepHostPassMs() const { return -1.0; }
  virtual double LastStepLaunchMs() const { return -1.0; }
  // Memory bandwidth of this device in GB/s, measured now by copying
  // `bytes` (bytes read + bytes written per second, best of a few runs).
  virtual absl::StatusOr<double> MeasureCopyBandwidth(int64_t bytes);

 protected:
  // Makes TransposedWeight's copy; default: host tensors only.
  virtual Tensor Transpose(const Tensor& w);

 private:
  // TransposedWeight's cache, keyed by the weight's address and shape.
  std::vector<std::pair<std::pair<const void*, Shape>, Tensor>> transposed_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_BACKEND_H_
