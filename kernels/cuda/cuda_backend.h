// CudaBackend: the Backend interface on one NVIDIA GPU.
//
// Weights live on the device in f16/bf16 (or f32) and activations and the KV
// cache in f32 device memory (kernels accumulate in f32). Linear layers run
// our GEMV for a few rows and cuBLAS for many (linear.h), attention runs the
// flash-style prefill and the split-K decode kernels (attention.h).
//
// Host spans (token ids, positions, unit selections) are staged in pinned
// memory and copied to a device arena, once per distinct span per step, so
// every kernel reads its indices from device memory.
//
// CUDA graphs: a single-token step (decode) is run eagerly once, captured on
// the next such step, and replayed after that. During a replay the ops only
// check that they match the captured sequence (op kind, operand addresses,
// shapes), refresh the staged indices in pinned memory and hand back the
// captured activation buffers; EndStep launches the graph. When anything
// differs (another session's KV cache, a method that masks units) the step is
// reported as StepOutcome::kRerun, Session runs it again eagerly, and the
// graph is captured anew.
//
// Pipelined steps (EndStepAsync, Session::DecodeGreedy): the pinned index and
// download buffers have two halves; a step uses the half the step still
// running does not, and a replay first points the graph's host copy kernels
// at its half (host_copies.h), so the host prepares and launches step t + 1
// while the device runs step t.
#ifndef DYNSPARSE_KERNELS_CUDA_CUDA_BACKEND_H_
#define DYNSPARSE_KERNELS_CUDA_CUDA_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/backend.h"
#include "core/model_weights.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_backend_options.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_pool.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/host_copies.h"
#include "kernels/cuda/sparse_mlp.h"

namespace dynsparse::cuda {

struct CudaGraphStats {
  int64_t eager_steps = 0;
  int64_t captures = 0;
  int64_t replays = 0;
  int64_t reruns = 0;  // Replays or captures that had to run again eagerly.
};

class CudaBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      const CudaBackendOptions& options = {});
  ~CudaBackend() override;

  DeviceContext& context() { return *ctx_; }
  DevicePool& pool() { return *pool_; }
  const CudaGraphStats& graph_stats() const { return stats_; }
  // Decode steps whose layers ran as one DecodeStack kernel (eager,
  // captured or replayed).
  int64_t decode_stack_steps() const { return stack_steps_; }
  // Forgets the captured graph (the next decode step runs eagerly again).
  void DropGraph();

  // Device copies of host weights (kept dtypes, tied tensors stay tied).
  absl::StatusOr<ModelWeights> UploadWeights(const ModelWeights& host);

  Device device() const override { return Device::kCuda; }
  std::string name() const override;
  Tensor Allocate(DType dtype, Shape shape) override;
  // f16 for a model in f16 or bf16 (CudaBackendOptions::f16_kv_cache),
  // unless the decode stack, which reads f32 caches only, is on; an f32
  // model keeps f32 K/V (its logits match the CPU's to summation order).
  DType KvCacheDtype(DType weights) const override {
    return options_.f16_kv_cache && !options_.decode_stack &&
                   weights != DType::kF32
               ? DType::kF16
               : DType::kF32;
  }
  void BeginStep(int64_t rows, int64_t keys) override;
  absl::StatusOr<StepOutcome> EndStep() override;
  absl::StatusOr<StepOutcome> EndStepAsync() override;
  absl::Status WaitStep() override;
  // Pipelining needs the staged indices inside the graph (stage_once).
  bool PipelinesSteps() const override { return options_.stage_once; }
  void Embed(const Tensor& table, absl::Span<const int32_t> ids,
             Tensor* out) override;
  void Linear(const Tensor& x, const Tensor& w, const Tensor& bias,
              Tensor* y) override;
  void LinearGroup(const Tensor& x, absl::Span<const Tensor* const> w,
                   absl::Span<const Tensor* const> b,
                   absl::Span<Tensor* const> y) override;
  void AddNorm(const Tensor& delta, Tensor* x, bool rms, const Tensor& weight,
               const Tensor& bias, double eps, Tensor* y) override;
  void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 double eps, Tensor* y) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, double eps,
               Tensor* y) override;
  void AddInPlace(const Tensor& x, Tensor* y) override;
  void Activate(Activation activation, Tensor* x) override;
  void GatedActivate(Activation activation, const Tensor& gate,
                     Tensor* up) override;
  void ApplyRope(const RopeTable& rope, absl::Span<const int32_t> positions,
                 int64_t heads, Tensor* x) override;
  void WriteRows(const Tensor& rows, absl::Span<const int32_t> positions,
                 Tensor* cache) override;
  void Attention(const AttentionArgs& args) override;
  void RopeWriteKv(const RopeTable& rope, absl::Span<const int32_t> positions,
                   int64_t num_heads, int64_t num_kv_heads, Tensor* q,
                   Tensor* k, const Tensor& v, Tensor* k_cache,
                   Tensor* v_cache) override;
  void RopeWriteKvAttention(const RopeTable& rope, Tensor* q, Tensor* k,
                            const Tensor& v, Tensor* k_cache, Tensor* v_cache,
                            const AttentionArgs& args) override;
  DType ProjectionInputDType(const Tensor& w, int64_t rows) const override;
  void BeginSideWork() override;
  int EndSideWork() override;
  void WaitSideWork(int token) override;
  void WaitAllSideWork() override;
  void LinearActivate(const Tensor& x, const Tensor& w, const Tensor& bias,
                      Activation activation, Tensor* y) override;
  void GatedMlp(const Tensor& h, const Tensor& w_up, const Tensor& w_gate,
                const Tensor& b_up, const Tensor& b_gate, Activation activation,
                const Tensor& w_down, const Tensor& b_down, Tensor* up,
                Tensor* gate, Tensor* y) override;
  // cuda_backend_stack.cc: the persistent decode kernel (decode_stack.h).
  bool DecodeStack(const DecodeStackArgs& args) override;
  bool FusesInputNorm() const override {
    return options_.fused_ops && options_.fuse_norm;
  }
  void NormLinearGroup(const Tensor& x, const InputNorm& norm,
                       absl::Span<const Tensor* const> w,
                       absl::Span<const Tensor* const> b,
                       std::optional<Activation> activation,
                       absl::Span<Tensor* const> y) override;
  void LinearAccumulate(const Tensor& x, const Tensor& w, const Tensor& bias,
                        Tensor* residual) override;
  void NormGatedMlp(Tensor* residual, const InputNorm& norm, const Tensor& w_up,
                    const Tensor& w_gate, const Tensor& b_up,
                    const Tensor& b_gate, Activation activation,
                    const Tensor& w_down, const Tensor& b_down, Tensor* up,
                    Tensor* gate) override;
  absl::StatusOr<Tensor> Upload(const Tensor& host) override;
  void MaskUnits(const UnitSelection& keep, int64_t unit_width,
                 Tensor* x) override;
  Tensor ToHost(const Tensor& x) override;
  void Argmax(const Tensor& logits, Tensor* ids) override;
  void EmbedIds(const Tensor& table, const Tensor& ids, Tensor* out) override;
  // Token-axis ops (cuda_backend_tokens.cc); eager only.
  void CopyRows(const Tensor& src, absl::Span<const int32_t> src_rows,
                absl::Span<const int32_t> dst_rows, Tensor* dst) override;
  void LastQueryAttention(const LastQueryArgs& args) override;
  void TopCount(const Tensor& scores, int64_t count, Tensor* indices) override;
  bool TopCountEnabled() const override { return options_.top_count; }
  Tensor ReadNow(const Tensor& x) override;
  StartedRead StartRead(const Tensor& x) override;
  Tensor FinishRead(StartedRead read) override;

  // Sparse execution (sparse_ops.h): device ids used in place, host ids
  // staged, so sparse decode steps replay as one graph.
  bool SupportsSparse() const override { return true; }
  void StageIds(absl::Span<const int32_t> host, Tensor* ids) override;
  void TopK(const Tensor& scores, int64_t k, Tensor* indices) override;
  void UnitNorms(const Tensor& x, int64_t unit_width, Tensor* norms) override;
  void GatherLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                    const Tensor& ids, int64_t unit_width, bool activate,
                    Activation activation, Tensor* y) override;
  void GatherGatedLinear(const Tensor& x, const Tensor& w_up,
                         const Tensor& w_gate, const Tensor& b_up,
                         const Tensor& b_gate, const Tensor& ids,
                         Activation activation, Tensor* y) override;
  void GatherLinearT(const Tensor& x, const Tensor& w_t, const Tensor& bias,
                     const Tensor& ids, Tensor* y) override;
  // One kernel (sparse_mlp.h) for a decode row on sm_90; else the two
  // gathers.
  void GatherMlp(const Tensor& x, const Tensor& w_up, const Tensor& b_up,
                 const Tensor* w_gate, const Tensor* b_gate,
                 const Tensor& w_down_t, const Tensor& b_down,
                 const Tensor& ids, Activation act, Tensor* hidden,
                 Tensor* y) override;
  // The fused kernel's grid and splits GatherMlp runs for k kept units of
  // these tensors under the options (splits 0: the two gathers): a grid of
  // one block an SM first where options.fused_mlp_one_block_an_sm says so.
  FusedSparseMlpLaunch FusedMlpLaunch(const Tensor& x, const Tensor& w_up,
                                      const Tensor* w_gate,
                                      const Tensor& w_down_t, int64_t k,
                                      Activation act);
  // Whether a kernel launched next on the main stream may read `ids` before
  // its PDL wait: they are not the output of the last op there (TopK,
  // TopCount), so they were complete before that op's kernel began.
  bool IdsSettled(const Tensor& ids) const {
    return ids.raw_data() != main_indices_just_written_;
  }
  // FusedSparseMlpLaunch::early_copies for a GatherMlp over `ids` now.
  bool EarlyMlpCopies(const Tensor& ids) const {
    return options_.early_mlp_copies && IdsSettled(ids);
  }
  // The counters GatherMlp's fused kernel sums its splits on in its launch,
  // or nullptr where a ReduceSplits launch does (options).
  int32_t* FusedMlpCounters() {
    return options_.fused_mlp_sum_in_kernel
               ? fused_mlp_counters_.data<int32_t>()
               : nullptr;
  }
  // The automatic choice takes clusters of 16 for a ReLU MLP (hidden >= 7168)
  // only while its splits hold at most this many units (FusedMlpLaunch).
  static constexpr int kReluCluster16MaxSplitUnits = 288;
  void GatherColumnsLinear(const Tensor& x, const Tensor& w, const Tensor& bias,
                           const Tensor& ids, int64_t unit_width,
                           Tensor* y) override;
  void GatherColumns(const Tensor& x, const Tensor& ids, int64_t unit_width,
                     Tensor* y) override;
  void SparseAttention(const AttentionArgs& args,
                       const Tensor& head_ids) override;
  void LazyKv(const LazyKvArgs& args) override;
  double LastStepDeviceMs() const override { return last_step_ms_; }
  double LastStepHostPassMs() const override { return last_host_pass_ms_; }
  double LastStepLaunchMs() const override { return last_launch_ms_; }
  // cudaMemcpyAsync device to device, timed with events.
  absl::StatusOr<double> MeasureCopyBandwidth(int64_t bytes) override;

 protected:
  // A device copy, or (when the copy would not fit: OPT-66B on one H200)
  // the weight transposed in place, see docs/cuda.md.
  Tensor Transpose(const Tensor& w) override;

 private:
  // FusedMlpLaunch's choice among grids of one block an SM or of two.
  FusedSparseMlpLaunch FusedMlpGrid(const Tensor& x, const Tensor& w_up,
                                    const Tensor* w_gate,
                                    const Tensor& w_down_t, int64_t k,
                                    Activation act, bool one_block_an_sm);
  // The DeviceAttentionArgs both attention ops share, their fields mixed
  // into `sig`; and the split-K decode launch with its scratch and counters.
  DeviceAttentionArgs DeviceArgs(const AttentionArgs& args, uint64_t* sig);
  // Makes one copy of the staged-index arena the first node of a captured
  // step (CudaBackendOptions::stage_once).
  absl::Status StageAtGraphStart(cudaGraph_t graph);
  // The host pass and launch times of the step (LastStepHostPassMs).
  void RecordHostTimes(std::chrono::steady_clock::time_point launch,
                       std::chrono::steady_clock::time_point done);
  // LinearGroup without the fused GEMV: one cuBLAS GEMM per weight, all of
  // them from one rounded copy of x when they round it alike.
  // GatedMlp of a prefill: cuBLAS for up/gate (one rounded input), the
  // gated product written rounded, cuBLAS for down.
  void GatedMlpRounded(const Tensor& h, const Tensor& w_up,
                       const Tensor& w_gate, const Tensor& b_up,
                       const Tensor& b_gate, Activation activation,
                       const Tensor& w_down, const Tensor& b_down, Tensor* up,
                       Tensor* gate, Tensor* y);
  void LinearGroupRounded(const Tensor& x, absl::Span<const Tensor* const> w,
                          absl::Span<const Tensor* const> b,
                          absl::Span<Tensor* const> y);
  // x (f32) rounded to `dtype` in a step tensor: what cuBLAS reads.
  Tensor RoundedInput(const Tensor& x, DType dtype, const char* op);
  // Whether a dense decode attention over `num_keys` keys takes the
  // tensor-core split kernels (tensor_core_decode_attention_keys).
  bool TensorCoreDecodeAttention(int64_t num_keys) const;
  // With `new_row`, DecodeAttentionWithNewRow.
  void LaunchDecodeAttention(DeviceAttentionArgs& d, uint64_t sig,
                             const char* op,
                             const DecodeNewRow* new_row = nullptr);
  // Dense ops must never read a weight Transpose rewrote in place (another
  // session or job of this process would get silently wrong numbers).
  void CheckNotTransposedInPlace(const Tensor& w, const char* op) const;
  // A step's work is queued: its end event and downloads wait in launched_.
  absl::Status Launched();
  absl::Status WaitAllSteps();
  // Points the graph's host copies at this step's half of the buffers.
  absl::Status PointGraphAtHalf();
  // Room for a `bytes` download (eager steps only; drops the graph).
  void GrowPinnedOut(size_t bytes);
  int32_t* PinnedIndices(int half) const;
  char* PinnedOut(int half) const {
    return static_cast<char*>(pinned_out_) + half * pinned_out_bytes_;
  }
  // The GemvNorm for `norm` of x over weight w (bias b): true when the norm
  // can run inside the one-row GEMV over w; then *gemv_bias is the bias to pass
  // (LayerNorm: its folded w beta + b). False: run the unfused default.
  bool FusedNorm(const InputNorm& norm, const Tensor& x, const Tensor& w,
                 const Tensor& b, GemvNorm* gemv_norm, Tensor* gemv_bias);
  // True when x (one f32 row) and the weights, biases and outputs of a group
  // are adjacent, so one GEMV covers them: *fw, *fb and *fy span them. With
  // `segment_ends`, x may also be a few rows (up to the GEMV's batch, up to
  // three weights): each output keeps its own [rows, out_i] matrix, and
  // *segment_ends gets the GEMV's GemvOptions::segment_ends (empty for one
  // row).
  bool SpanGroup(const Tensor& x, absl::Span<const Tensor* const> w,
                 absl::Span<const Tensor* const> b, absl::Span<Tensor* const> y,
                 Tensor* fw, Tensor* fb, Tensor* fy,
                 std::vector<int64_t>* segment_ends = nullptr) const;
  // True when a group of x's rows (more than a GEMV takes, a few hundred at
  // most) runs as one batched GEMM (cuda::LinearBatched): weights of one
  // shape back to back, outputs too, no biases.
  bool BatchesGroup(const Tensor& x, absl::Span<const Tensor* const> w,
                    absl::Span<const Tensor* const> b,
                    absl::Span<Tensor* const> y) const;

  enum class Mode { kEager, kCapture, kReplay };
  struct Staged {
    const int32_t* host = nullptr;
    size_t count = 0;
    int64_t offset = 0;  // In ints, into the pinned and device arenas.
    bool aside = false;  // Copied on the side stream (side work).
  };
  struct PendingCopy {
    Tensor host;
    int64_t offset = 0;  // Bytes into the step's half of pinned_out_.
  };
  struct LaunchedStep {
    int half = 0;
    std::vector<PendingCopy> pending;
  };
  // Copies finished downloads from `half` of pinned_out_ into their host
  // tensors.
  void Deliver(const std::vector<PendingCopy>& pending, int half) const;

  CudaBackend(std::unique_ptr<DeviceContext> ctx,
              const CudaBackendOptions& options);
  absl::Status Init();

  // True when the op must be launched now (eager or capture); records or
  // checks the op's signature in graph modes.
  bool Op(uint64_t signature);
  // Device copy of a host index span for this step (see the header comment).
  const int32_t* StageIndices(absl::Span<const int32_t> values,
                              uint64_t* signature);
  Tensor StagedTensor(absl::Span<const int32_t> values, uint64_t* signature);
  const Tensor& RopeFrequencies(const RopeTable& rope);
  // Aborts with the status: a failed kernel launch is a programmer error or
  // a device fault, neither of which Session can recover from.
  void Check(const absl::Status& status, const char* op);
  // Token ops: true in eager mode; otherwise marks the step for an eager
  // rerun and stops graph capture (token steps are data dependent).
  bool EagerOnly();
  // Ops whose launch shape follows the sequence length, so that a graph
  // cannot replay them at a later step: true in eager mode; otherwise the
  // step reruns eagerly and later steps keep their graphs (BeginStep runs
  // the steps that need such ops eagerly from the start).
  bool EagerStep();
  // What a read returns in a step that will be rerun eagerly (EagerOnly
  // false): never used, but it must pass the caller's checks. Zeros for
  // f32; 0, 1, 2, ... for i32, valid ascending indices as TopCount's are.
  static Tensor PlaceholderRead(const Tensor& x);
  void* WorkspaceAddress();
  void* SideWorkspaceAddress();  // Null before the first side work.
  // Side work (cuda_backend_side.cc): every outstanding token waited for,
  // and `t` kept alive until its side work is joined.
  void JoinAllSideWork();
  void HoldForSideWork(const Tensor& t);

  std::unique_ptr<DeviceContext> ctx_;
  std::unique_ptr<DevicePool> pool_;
  CudaBackendOptions options_;
  // The context ops issue on: ctx_, or side_ctx_ during side work.
  DeviceContext* active_ = nullptr;

  // Side work: a second stream (own cuBLAS handle and GEMV workspace) made
  // on first use; this step's works (token = index + 1) with their join
  // events and the tensors they touch.
  struct SideWork {
    bool aside = false;   // Ran on the side stream (else in line).
    bool joined = false;  // The main stream waited for it.
    std::vector<Tensor> held;
  };
  std::unique_ptr<DeviceContext> side_ctx_;
  cudaEvent_t fork_event_ = nullptr;
  std::vector<cudaEvent_t> side_events_;
  std::vector<SideWork> side_work_;
  bool in_side_work_ = false;
  // FusedSparseMlpClusters by (hidden, weight dtype, gated, activation,
  // cluster size, one block an SM).
  std::map<std::tuple<int64_t, int, bool, int, int, bool>, FusedSparseMlpGrid>
      fused_mlp_grids_;
  // The indices the last op of the main stream wrote (TopK, TopCount); null
  // after any other op there (IdsSettled).
  const void* main_indices_just_written_ = nullptr;

  // Index staging: two halves of pinned ints, one device arena.
  int32_t* pinned_indices_ = nullptr;
  Tensor device_indices_;  // i32 [kIndexArenaInts]
  int64_t arena_used_ = 0;
  std::vector<Staged> staged_;

  // Downloads (ToHost inside a step): two halves of pinned_out_bytes_.
  void* pinned_out_ = nullptr;
  size_t pinned_out_bytes_ = 0;
  size_t pinned_out_used_ = 0;
  std::vector<PendingCopy> pending_;
  // StartRead's download: its own pinned buffer (grown between reads) and
  // the event FinishRead waits on.
  void* read_pinned_ = nullptr;
  size_t read_pinned_bytes_ = 0;
  cudaEvent_t read_done_ = nullptr;
  bool read_started_ = false;

  std::vector<std::pair<std::vector<double>, Tensor>> rope_tables_;
  // LayerNorm folds (gemv.h FoldLayerNorm), made on first eager use.
  struct FoldKey {
    const void* w;
    int64_t rows;
    const void* gamma;
    const void* beta;
    const void* bias;
    bool operator==(const FoldKey&) const = default;
  };
  std::vector<std::pair<FoldKey, LayerNormFold>> layer_norm_folds_;
  // Zeroed ints the decode attention kernel uses to merge its key chunks in
  // the same launch (attention.h); every launch leaves them zero. Room for
  // rows (<= 8) x heads.
  static constexpr int64_t kAttentionCounterInts = 8 * 1024;
  Tensor attention_counters_;
  // The same for the fused sparse MLP's split reduction in its launch
  // (sparse_mlp.h): one a column block of a cluster.
  static constexpr int64_t kFusedMlpCounterInts = 16;
  Tensor fused_mlp_counters_;
  // The decode stack kernel's grid barrier and per-head counters
  // (kDecodeStackBarrierWords zeroed words it leaves zero), and its verdict
  // on the last shape asked (decode_stack.h).
  Tensor stack_barrier_;
  std::string stack_shape_key_;
  std::string stack_unsupported_;
  int64_t stack_steps_ = 0;

  // Step and graph state.
  bool in_step_ = false;
  Mode mode_ = Mode::kEager;
  bool decode_warm_ = false;  // An eager single-token step has completed.
  bool force_eager_ = false;  // The next step reruns a failed replay.
  bool mismatch_ = false;
  std::vector<uint64_t> tape_ops_;
  std::vector<Tensor> tape_tensors_;
  int64_t step_rows_ = 0;
  size_t op_index_ = 0;
  size_t tensor_index_ = 0;
  void* graph_workspace_ = nullptr;
  void* graph_side_workspace_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  std::vector<HostCopyNode> host_copy_nodes_;
  int graph_half_ = 0;  // The half graph_exec_'s host copies point at.
  CudaGraphStats stats_;
  // Pipelining: this step's half, the steps launched and not yet waited for
  // (oldest first), and each half's step events.
  int half_ = 0;
  std::deque<LaunchedStep> launched_;
  cudaEvent_t step_start_[2] = {nullptr, nullptr};
  cudaEvent_t step_end_[2] = {nullptr, nullptr};
  double last_step_ms_ = -1.0;
  // Host clock of the step (BeginStep) and of its graph launch (EndStep).
  std::chrono::steady_clock::time_point step_host_start_;
  double last_host_pass_ms_ = -1.0;
  double last_launch_ms_ = -1.0;
  std::set<const void*> transposed_in_place_;  // Storage of such weights.
};

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_CUDA_BACKEND_H_
