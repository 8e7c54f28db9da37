#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_switches.h"
#include "kernels/cuda/decode_stack.h"
#include "kernels/cuda/device_weights.h"
#include "kernels/cuda/flash_prefill.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/graph_ops.h"
#include "kernels/cuda/host_copies.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/norms.h"
#include "kernels/cuda/op_signature.h"
#include "kernels/cuda/pipelined_attention.h"
#include "kernels/cuda/pipelined_split_plan.h"
#include "kernels/cuda/rope.h"
#include "kernels/cuda/sparse_mlp.h"
#include "kernels/cuda/sparse_ops.h"

namespace dynsparse::cuda {
namespace {

// Index staging arena: 4 MiB of ints, enough for any step's ids, positions
// and unit selections of prefill chunks up to ~100k tokens.
constexpr int64_t kIndexArenaInts = int64_t{1} << 20;
constexpr int64_t kIndexAlignInts = 64;  // 256-byte aligned slots.
// Decode attention merge counters: rows (<= 8) x heads.
constexpr int64_t kAttentionCounterInts = 8 * 1024;

enum OpCode : uint64_t {
  kOpEmbed = 1,
  kOpLinear,
  kOpLayerNorm,
  kOpRmsNorm,
  kOpAdd,
  kOpActivate,
  kOpGated,
  kOpRope,
  kOpWriteRows,
  kOpAttention,
  kOpMask,
  kOpToHost,
  kOpAddNorm,
  kOpRopeWriteKv,
  kOpGatedMlp,
  kOpGatedRounded,
  kOpLinearActivate,
  kOpStageIds,
  kOpTopK,
  kOpUnitNorms,
  kOpGatherLinear,
  kOpGatherLinearT,
  kOpLinearTransposed,
  kOpGatherColumnsLinear,
  kOpGatherColumns,
  kOpSparseAttention,
  kOpLazyKv,
  kOpRoundInput,
  kOpRopeWriteKvAttention,
  kOpNormLinear,
  kOpLinearAccumulate,
  kOpNormGatedMlp,
  kOpArgmax,
  kOpEmbedIds,
  kOpGatherMlp,
  kOpLinearBatched,
};

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

// The backend name's note on prefill attention: the old kernel, the staged
// split kernel, or a flash block shape other than the default.
std::string FlashPrefillName(const CudaBackendOptions& options) {
  if (!options.flash_prefill_attention) return ", old prefill attention";
  if (!options.pipelined_split_attention) return ", staged split attention";
  const FlashPrefillConfig c = options.flash_prefill_config;
  const FlashPrefillConfig standard;
  if (c.warps == standard.warps && c.min_blocks == standard.min_blocks) {
    return "";
  }
  return absl::StrCat(", flash ", c.warps, "x", c.min_blocks);
}

uint64_t MixDouble(uint64_t h, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return Mix(h, bits);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    const CudaBackendOptions& options) {
  CudaBackendOptions opts = options;
  if (absl::Status s = ApplyCudaSwitches(ProcessEnvironment(), &opts);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::unique_ptr<DeviceContext>> ctx =
      DeviceContext::Create(opts.device);
  if (!ctx.ok()) return ctx.status();
  std::unique_ptr<CudaBackend> backend(new CudaBackend(std::move(*ctx), opts));
  if (absl::Status s = backend->Init(); !s.ok()) return s;
  return backend;
}

CudaBackend::CudaBackend(std::unique_ptr<DeviceContext> ctx,
                         const CudaBackendOptions& options)
    : ctx_(std::move(ctx)),
      pool_(std::make_unique<DevicePool>(*ctx_)),
      options_(options),
      active_(ctx_.get()) {}

absl::Status CudaBackend::Init() {
  DS_CUDA_RETURN_IF_ERROR(cudaHostAlloc(
      reinterpret_cast<void**>(&pinned_indices_),
      2 * kIndexArenaInts * sizeof(int32_t), cudaHostAllocDefault));
  absl::StatusOr<Tensor> arena =
      AllocateDevice(*ctx_, DType::kI32, {kIndexArenaInts});
  if (!arena.ok()) return arena.status();
  device_indices_ = *arena;
  absl::StatusOr<Tensor> counters =
      AllocateDevice(*ctx_, DType::kI32, {kAttentionCounterInts});
  if (!counters.ok()) return counters.status();
  attention_counters_ = *counters;
  DS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(attention_counters_.raw_data(), 0,
                                          attention_counters_.bytes(),
                                          ctx_->stream()));
  absl::StatusOr<Tensor> barrier =
      AllocateDevice(*ctx_, DType::kI32, {kDecodeStackBarrierWords});
  if (!barrier.ok()) return barrier.status();
  stack_barrier_ = *barrier;
  DS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
      stack_barrier_.raw_data(), 0, stack_barrier_.bytes(), ctx_->stream()));
  if (absl::Status s = ctx_->Synchronize(); !s.ok()) return s;
  for (int half = 0; half < 2; ++half) {
    DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_start_[half]));
    DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_end_[half]));
  }
  DS_CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&read_done_, cudaEventDisableTiming));
  return absl::OkStatus();
}

CudaBackend::~CudaBackend() {
  (void)ctx_->Synchronize();
  if (side_ctx_ != nullptr) (void)side_ctx_->Synchronize();
  for (cudaEvent_t e : side_events_) cudaEventDestroy(e);
  if (fork_event_ != nullptr) cudaEventDestroy(fork_event_);
  DropGraph();
  tape_tensors_.clear();
  if (pinned_indices_ != nullptr) cudaFreeHost(pinned_indices_);
  if (pinned_out_ != nullptr) cudaFreeHost(pinned_out_);
  if (read_pinned_ != nullptr) cudaFreeHost(read_pinned_);
  if (read_done_ != nullptr) cudaEventDestroy(read_done_);
  for (int half = 0; half < 2; ++half) {
    if (step_start_[half] != nullptr) cudaEventDestroy(step_start_[half]);
    if (step_end_[half] != nullptr) cudaEventDestroy(step_end_[half]);
  }
}

std::string CudaBackend::name() const {
  return absl::StrCat(
      "cuda (", ctx_->info().DebugString(),
      options_.cuda_graphs ? ", CUDA graphs" : "",
      ctx_->programmatic_launch() ? ", PDL" : "",
      options_.fused_ops ? "" : ", unfused",
      FusesInputNorm() || !options_.fused_ops ? "" : ", unfused norms",
      options_.gated_pairs ? "" : ", no gated pairs",
      FlashPrefillName(options_),
      options_.fused_ops && !options_.fused_decode_attention
          ? ", unfused attention"
          : "",
      ctx_->gemv_early_loads() ? "" : ", late GEMV loads",
      ctx_->gemv_occupancy_bounds() ? "" : ", unbounded GEMV registers",
      options_.decode_stack ? ", decode stack" : "",
      options_.cluster_decode_attention ? "" : ", attention merge in memory",
      options_.early_kv_loads ? "" : ", late K/V loads",
      options_.f16_kv_cache ? "" : ", f32 KV cache", ")");
}

void CudaBackend::Check(const absl::Status& status, const char* op) {
  DS_CHECK(status.ok()) << "CudaBackend::" << op << ": " << status;
}

void CudaBackend::DropGraph() {
  if (graph_exec_ != nullptr) cudaGraphExecDestroy(graph_exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  graph_exec_ = nullptr;
  graph_ = nullptr;
  host_copy_nodes_.clear();
  tape_ops_.clear();
  tape_tensors_.clear();
}

absl::StatusOr<ModelWeights> CudaBackend::UploadWeights(
    const ModelWeights& host) {
  return cuda::UploadWeights(*ctx_, host);
}

Tensor CudaBackend::Allocate(DType dtype, Shape shape) {
  if (mode_ == Mode::kReplay && !mismatch_) {
    if (tensor_index_ < tape_tensors_.size() &&
        tape_tensors_[tensor_index_].dtype() == dtype &&
        tape_tensors_[tensor_index_].shape() == shape) {
      return tape_tensors_[tensor_index_++];
    }
    mismatch_ = true;
  }
  absl::StatusOr<Tensor> t = pool_->Allocate(dtype, std::move(shape));
  Check(t.status(), "Allocate");
  if (mode_ == Mode::kCapture) tape_tensors_.push_back(*t);
  HoldForSideWork(*t);
  return *t;
}

void CudaBackend::BeginStep(int64_t rows) {
  // One step may still run (EndStepAsync): this step stages into the other
  // half of the pinned buffers, which the step before that one used, so
  // that one must be done. Without stage_once a captured graph's copies
  // cannot move between halves: every step waits.
  const size_t may_run = PipelinesSteps() ? 1 : 0;
  while (launched_.size() > may_run) Check(WaitStep(), "BeginStep");
  if (launched_.empty()) {
    Check(ctx_->Synchronize(), "BeginStep");
  } else {
    half_ = 1 - launched_.back().half;
  }
  step_host_start_ = std::chrono::steady_clock::now();
  in_step_ = true;
  mismatch_ = false;
  op_index_ = 0;
  tensor_index_ = 0;
  arena_used_ = 0;
  staged_.clear();
  pinned_out_used_ = 0;
  pending_.clear();
  side_work_.clear();
  in_side_work_ = false;
  active_ = ctx_.get();
  // Outside any capture; with a step still running it stamps that step's
  // end, so a pipelined step's device time is its period.
  Check(CudaErrorToStatus(cudaEventRecord(step_start_[half_], ctx_->stream()),
                          "step start event"),
        "BeginStep");
  const bool graphable = options_.cuda_graphs && rows == 1;
  if (force_eager_ || !graphable) {
    mode_ = Mode::kEager;
  } else if (graph_exec_ != nullptr && WorkspaceAddress() == graph_workspace_ &&
             SideWorkspaceAddress() == graph_side_workspace_) {
    mode_ = Mode::kReplay;
  } else if (decode_warm_) {
    mode_ = Mode::kCapture;
    DropGraph();
    // GEMV split-K partials live in the context's workspace: a later growth
    // would move it under the graph, so replays check it is still in place.
    graph_workspace_ = WorkspaceAddress();
    graph_side_workspace_ = SideWorkspaceAddress();
    const cudaError_t e =
        cudaStreamBeginCapture(ctx_->stream(), cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      options_.cuda_graphs = false;
      mode_ = Mode::kEager;
    }
  } else {
    mode_ = Mode::kEager;
  }
  force_eager_ = false;
  step_rows_ = rows;
}

void* CudaBackend::WorkspaceAddress() {
  absl::StatusOr<void*> w = ctx_->Workspace(1);
  Check(w.status(), "Workspace");
  return *w;
}

void* CudaBackend::SideWorkspaceAddress() {
  if (side_ctx_ == nullptr) return nullptr;
  absl::StatusOr<void*> w = side_ctx_->Workspace(1);
  Check(w.status(), "Workspace");
  return *w;
}

absl::Status CudaBackend::Launched() {
  DS_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_end_[half_], ctx_->stream()));
  launched_.push_back({half_, std::move(pending_)});
  pending_.clear();
  return absl::OkStatus();
}

absl::Status CudaBackend::WaitStep() {
  if (launched_.empty()) return absl::OkStatus();
  const LaunchedStep step = std::move(launched_.front());
  launched_.pop_front();
  DS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(step_end_[step.half]));
  float ms = 0.0f;
  DS_CUDA_RETURN_IF_ERROR(
      cudaEventElapsedTime(&ms, step_start_[step.half], step_end_[step.half]));
  last_step_ms_ = ms;
  Deliver(step.pending, step.half);
  return absl::OkStatus();
}

void CudaBackend::Deliver(const std::vector<PendingCopy>& pending,
                          int half) const {
  for (const PendingCopy& p : pending) {
    std::memcpy(p.host.raw_data(), PinnedOut(half) + p.offset, p.host.bytes());
  }
}

absl::Status CudaBackend::WaitAllSteps() {
  while (!launched_.empty()) {
    if (absl::Status s = WaitStep(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<StepOutcome> CudaBackend::EndStep() {
  absl::StatusOr<StepOutcome> outcome = EndStepAsync();
  if (!outcome.ok()) return outcome;
  if (absl::Status s = WaitAllSteps(); !s.ok()) return s;
  return outcome;
}

absl::StatusOr<StepOutcome> CudaBackend::EndStepAsync() {
  // A capture must end with every forked stream joined; eager steps
  // synchronise the main stream only.
  JoinAllSideWork();
  in_step_ = false;
  const Mode mode = mode_;
  mode_ = Mode::kEager;
  switch (mode) {
    case Mode::kEager: {
      // Eager steps launch as they go: all host time is the pass.
      const auto now = std::chrono::steady_clock::now();
      RecordHostTimes(now, now);
      ++stats_.eager_steps;
      if (step_rows_ == 1) decode_warm_ = true;
      if (absl::Status s = Launched(); !s.ok()) return s;
      return StepOutcome::kDone;
    }
    case Mode::kCapture: {
      cudaGraph_t graph = nullptr;
      const cudaError_t e = cudaStreamEndCapture(ctx_->stream(), &graph);
      if (e != cudaSuccess || mismatch_ || graph == nullptr) {
        (void)cudaGetLastError();
        if (graph != nullptr) cudaGraphDestroy(graph);
        // Something in the step cannot be captured: stop trying.
        if (e != cudaSuccess) options_.cuda_graphs = false;
        tape_ops_.clear();
        tape_tensors_.clear();
        force_eager_ = true;
        ++stats_.reruns;
        return StepOutcome::kRerun;
      }
      graph_ = graph;
      if (options_.stage_once) {
        if (absl::Status s = StageAtGraphStart(graph_); !s.ok()) return s;
      }
      absl::StatusOr<std::vector<HostCopyNode>> copies =
          FindHostCopyNodes(graph_);
      if (!copies.ok()) return copies.status();
      host_copy_nodes_ = *std::move(copies);
      graph_half_ = half_;
      DS_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&graph_exec_, graph_, 0));
      const auto launch = std::chrono::steady_clock::now();
      DS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph_exec_, ctx_->stream()));
      RecordHostTimes(launch, std::chrono::steady_clock::now());
      ++stats_.captures;
      if (absl::Status s = Launched(); !s.ok()) return s;
      return StepOutcome::kDone;
    }
    case Mode::kReplay:
      if (mismatch_ || op_index_ != tape_ops_.size() ||
          tensor_index_ != tape_tensors_.size()) {
        DropGraph();
        force_eager_ = true;
        ++stats_.reruns;
        return StepOutcome::kRerun;
      }
      {
        const auto launch = std::chrono::steady_clock::now();
        if (absl::Status s = PointGraphAtHalf(); !s.ok()) return s;
        DS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph_exec_, ctx_->stream()));
        RecordHostTimes(launch, std::chrono::steady_clock::now());
      }
      ++stats_.replays;
      if (absl::Status s = Launched(); !s.ok()) return s;
      return StepOutcome::kDone;
  }
  return StepOutcome::kDone;
}

void CudaBackend::RecordHostTimes(std::chrono::steady_clock::time_point launch,
                                  std::chrono::steady_clock::time_point done) {
  using Ms = std::chrono::duration<double, std::milli>;
  last_host_pass_ms_ = Ms(launch - step_host_start_).count();
  last_launch_ms_ = Ms(done - launch).count();
}

int32_t* CudaBackend::PinnedIndices(int half) const {
  return pinned_indices_ + half * kIndexArenaInts;
}

absl::Status CudaBackend::PointGraphAtHalf() {
  if (graph_half_ == half_) return absl::OkStatus();
  const HostMove moves[] = {
      {PinnedIndices(graph_half_), PinnedIndices(half_),
       kIndexArenaInts * sizeof(int32_t)},
      {PinnedOut(graph_half_), PinnedOut(half_), pinned_out_bytes_},
  };
  if (absl::Status s = RetargetHostCopies(
          graph_exec_, absl::MakeSpan(host_copy_nodes_), moves);
      !s.ok()) {
    return s;
  }
  graph_half_ = half_;
  return absl::OkStatus();
}

absl::Status CudaBackend::StageAtGraphStart(cudaGraph_t graph) {
  if (arena_used_ == 0) return absl::OkStatus();
  size_t num_roots = 0;
  DS_CUDA_RETURN_IF_ERROR(cudaGraphGetRootNodes(graph, nullptr, &num_roots));
  std::vector<cudaGraphNode_t> roots(num_roots);
  DS_CUDA_RETURN_IF_ERROR(
      cudaGraphGetRootNodes(graph, roots.data(), &num_roots));
  // The replay's host pass has written this step's values into the pinned
  // arena by the time the graph is launched; the copy reads them then. A
  // kernel, not a copy-engine node (host_copies.h).
  cudaGraphNode_t copy = nullptr;
  if (absl::Status s = AddHostToDeviceCopyNode(
          graph, PinnedIndices(half_), device_indices_.raw_data(),
          static_cast<size_t>(arena_used_) * sizeof(int32_t), &copy);
      !s.ok()) {
    return s;
  }
  for (cudaGraphNode_t root : roots) {
    DS_CUDA_RETURN_IF_ERROR(
        cudaGraphAddDependencies(graph, &copy, &root, nullptr, 1));
  }
  return absl::OkStatus();
}

bool CudaBackend::Op(uint64_t signature) {
  switch (mode_) {
    case Mode::kEager:
      return true;
    case Mode::kCapture:
      tape_ops_.push_back(signature);
      return !mismatch_;  // A doomed capture launches nothing more.
    case Mode::kReplay:
      if (op_index_ >= tape_ops_.size() || tape_ops_[op_index_] != signature) {
        mismatch_ = true;
      }
      ++op_index_;
      return false;
  }
  return false;
}

const int32_t* CudaBackend::StageIndices(absl::Span<const int32_t> values,
                                         uint64_t* signature) {
  int32_t* device_base = device_indices_.data<int32_t>();
  const size_t n = values.size();
  for (const Staged& s : staged_) {
    if (s.host == values.data() && s.count == n &&
        std::memcmp(PinnedIndices(half_) + s.offset, values.data(),
                    n * sizeof(int32_t)) == 0) {
      *signature = Mix(Mix(*signature, s.offset), n);
      return device_base + s.offset;
    }
  }
  const int64_t need = (static_cast<int64_t>(n) + kIndexAlignInts - 1) /
                       kIndexAlignInts * kIndexAlignInts;
  if (need > kIndexArenaInts || arena_used_ + need > kIndexArenaInts) {
    DS_CHECK(need <= kIndexArenaInts)
        << "CudaBackend: " << n << " indices exceed the staging arena";
    if (mode_ != Mode::kEager) {
      mismatch_ = true;
      return device_base;
    }
    Check(ctx_->Synchronize(), "StageIndices");
    arena_used_ = 0;
    staged_.clear();
  }
  const int64_t offset = arena_used_;
  arena_used_ += need;
  int32_t* pinned = PinnedIndices(half_);
  std::memcpy(pinned + offset, values.data(), n * sizeof(int32_t));
  // A captured step copies the whole arena once, at its start
  // (StageAtGraphStart): a host-to-device copy inside the graph stalls the
  // kernels after it and breaks their programmatic launch chain.
  const bool copy_at_start = mode_ == Mode::kCapture && options_.stage_once;
  if (mode_ != Mode::kReplay && !copy_at_start && n > 0) {
    Check(CudaErrorToStatus(
              cudaMemcpyAsync(device_base + offset, pinned + offset,
                              n * sizeof(int32_t), cudaMemcpyHostToDevice,
                              ctx_->stream()),
              "staging indices"),
          "StageIndices");
  }
  staged_.push_back({values.data(), n, offset});
  *signature = Mix(Mix(Mix(*signature, offset), n), 0x5eed);
  return device_base + offset;
}

Tensor CudaBackend::StagedTensor(absl::Span<const int32_t> values,
                                 uint64_t* signature) {
  const int32_t* p = StageIndices(values, signature);
  const int64_t offset = p - device_indices_.data<int32_t>();
  return device_indices_.Rows(offset,
                              offset + static_cast<int64_t>(values.size()));
}

const Tensor& CudaBackend::RopeFrequencies(const RopeTable& rope) {
  for (const auto& [freq, tensor] : rope_tables_) {
    if (freq == rope.inv_freq) return tensor;
  }
  if (mode_ != Mode::kEager) {
    // The upload is a synchronous copy, which a capture cannot contain; the
    // step reruns eagerly and uploads it then.
    mismatch_ = true;
    return device_indices_;
  }
  absl::StatusOr<Tensor> t = UploadRopeInvFreq(*ctx_, rope);
  Check(t.status(), "ApplyRope");
  rope_tables_.emplace_back(rope.inv_freq, *t);
  return rope_tables_.back().second;
}

void CudaBackend::Embed(const Tensor& table, absl::Span<const int32_t> ids,
                        Tensor* out) {
  uint64_t sig = MixTensor(MixTensor(kOpEmbed, table), *out);
  const int32_t* d_ids = StageIndices(ids, &sig);
  if (!Op(sig)) return;
  Check(EmbedRows(*active_, table, d_ids, out), "Embed");
}

void CudaBackend::EmbedIds(const Tensor& table, const Tensor& ids,
                           Tensor* out) {
  if (ids.device() == Device::kCpu) {
    Backend::EmbedIds(table, ids, out);
    return;
  }
  DS_CHECK(ids.dtype() == DType::kI32 && ids.numel() == out->dim(0));
  const uint64_t sig =
      MixTensor(MixTensor(MixTensor(kOpEmbedIds, table), ids), *out);
  if (!Op(sig)) return;
  Check(EmbedRows(*active_, table, ids.data<int32_t>(), out), "EmbedIds");
}

void CudaBackend::Argmax(const Tensor& logits, Tensor* ids) {
  if (logits.device() == Device::kCpu) {
    Backend::Argmax(logits, ids);
    return;
  }
  DS_CHECK(ids->dtype() == DType::kI32 && ids->numel() == logits.dim(0));
  const uint64_t sig = MixTensor(MixTensor(kOpArgmax, logits), *ids);
  if (!Op(sig)) return;
  Check(ArgmaxRows(*active_, logits, ids->data<int32_t>()), "Argmax");
}

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
                            Tensor* fy) const {
  bool fuse = x.rank() == 2 && x.dim(0) == 1 && !w.empty() && Adjacent(w) &&
              Adjacent(y);
  bool any_bias = false, all_bias = true;
  for (const Tensor* t : b) {
    any_bias |= !t->empty();
    all_bias &= !t->empty();
  }
  if (fuse && any_bias) fuse = all_bias && Adjacent(b);
  int64_t out = 0;
  for (size_t i = 0; fuse && i < w.size(); ++i) {
    fuse = w[i]->rank() == 2 && w[i]->dim(1) == x.dim(1) && y[i]->rank() == 2 &&
           y[i]->dim(0) == 1 && y[i]->dim(1) == w[i]->dim(0) &&
           y[i]->dtype() == DType::kF32;
    out += w[i]->dim(0);
  }
  if (!fuse) return false;
  *fw = SpanOf(*w[0], w[0]->dtype(), {out, x.dim(1)});
  *fb = any_bias ? SpanOf(*b[0], b[0]->dtype(), {out}) : Tensor();
  *fy = SpanOf(*y[0], DType::kF32, {1, out});
  return true;
}

void CudaBackend::LinearGroup(const Tensor& x,
                              absl::Span<const Tensor* const> w,
                              absl::Span<const Tensor* const> b,
                              absl::Span<Tensor* const> y) {
  // One GEMV over the concatenated weights when a single row's outputs are
  // adjacent too (Session allocates them so) and the weights were uploaded
  // back to back (UploadWeights, DeviceRandomWeights).
  Tensor fw, fb, fy;
  if (w.size() < 2 || !SpanGroup(x, w, b, y, &fw, &fb, &fy)) {
    LinearGroupRounded(x, w, b, y);
    return;
  }
  Linear(x, fw, fb, &fy);
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

void CudaBackend::ApplyRope(const RopeTable& rope,
                            absl::Span<const int32_t> positions, int64_t heads,
                            Tensor* x) {
  const Tensor& freq = RopeFrequencies(rope);
  uint64_t sig = Mix(MixTensor(MixTensor(kOpRope, freq), *x),
                     static_cast<uint64_t>(heads));
  const Tensor pos = StagedTensor(positions, &sig);
  if (!Op(sig)) return;
  Check(cuda::ApplyRope(*active_, freq, pos, heads, x), "ApplyRope");
}

void CudaBackend::WriteRows(const Tensor& rows,
                            absl::Span<const int32_t> positions,
                            Tensor* cache) {
  uint64_t sig = MixTensor(MixTensor(kOpWriteRows, rows), *cache);
  const int32_t* pos = StageIndices(positions, &sig);
  if (!Op(sig)) return;
  Check(WriteCacheRows(*active_, rows, pos, cache), "WriteRows");
}

DeviceAttentionArgs CudaBackend::DeviceArgs(const AttentionArgs& args,
                                            uint64_t* sig) {
  *sig = MixTensor(MixTensor(MixTensor(MixTensor(*sig, *args.q), *args.k_cache),
                             *args.v_cache),
                   *args.out);
  *sig = Mix(Mix(Mix(*sig, args.num_heads), args.num_kv_heads), args.head_dim);
  *sig = MixDouble(*sig, args.scale);
  DeviceAttentionArgs d;
  d.q = args.q;
  d.k_cache = args.k_cache;
  d.v_cache = args.v_cache;
  d.positions = StageIndices(args.query_positions, sig);
  d.num_heads = args.num_heads;
  d.num_kv_heads = args.num_kv_heads;
  d.head_dim = args.head_dim;
  d.scale = args.scale;
  d.out = args.out;
  d.decode_chunk_keys = options_.decode_chunk_keys;
  return d;
}

DType CudaBackend::ProjectionInputDType(const Tensor& w, int64_t rows) const {
  // cuda::Linear's cuBLAS route takes x in w's dtype (RoundsInputForLinear).
  const bool gemm = rows > kGemvMaxBatch &&
                    (w.dtype() == DType::kF16 || w.dtype() == DType::kBF16);
  return options_.rounded_norm_output && gemm ? w.dtype() : DType::kF32;
}

void CudaBackend::LaunchDecodeAttention(DeviceAttentionArgs& d, uint64_t sig,
                                        const char* op,
                                        const DecodeNewRow* new_row) {
  Tensor scratch = Allocate(DType::kF32, {DecodeAttentionScratchFloats(d)});
  if (options_.fused_ops &&
      DecodeAttentionCounters(d) <= kAttentionCounterInts) {
    d.counters = attention_counters_.data<int32_t>();
  }
  d.cluster_merge = options_.cluster_decode_attention;
  d.early_kv_loads = options_.early_kv_loads;
  sig = Mix(MixTensor(sig, scratch), d.counters != nullptr);
  if (!Op(sig)) return;
  Check(new_row != nullptr
            ? DecodeAttentionWithNewRow(*active_, d, *new_row,
                                        scratch.data<float>())
            : DecodeAttention(*active_, d, scratch.data<float>()),
        op);
}

void CudaBackend::Attention(const AttentionArgs& args) {
  const int64_t n = args.q->dim(0);
  uint64_t sig = kOpAttention;
  DeviceAttentionArgs d = DeviceArgs(args, &sig);
  if (!args.key_positions.empty()) {  // Token pruning: the live keys only.
    if (!EagerOnly()) return;
    d.key_rows = StageIndices(args.key_positions, &sig);
    d.num_keys = args.num_keys;
  }
  if (n <= 8) {
    // Split-K decode; the grid depends only on the cache capacity, so the
    // captured graph stays valid as the sequence grows.
    LaunchDecodeAttention(d, sig, "Attention");
    return;
  }
  d.tensor_cores = n >= (args.key_positions.empty()
                             ? options_.tensor_core_attention_rows
                             : options_.tensor_core_keyed_attention_rows);
  const bool pipelined = options_.pipelined_split_attention && d.tensor_cores &&
                         PipelinedSplitSupported(args.head_dim);
  // The ring counts only the blocks whose split holds keys their rows see
  // (pipelined_split_plan.h).
  int64_t key_splits = 1;
  if (options_.split_prefill_attention && pipelined) {
    key_splits = PipelinedSplitCount(
        PipelinedTileKeys(args.query_positions, args.key_positions,
                          args.num_keys),
        args.num_heads, args.num_keys, ctx_->sm_count());
  } else if (options_.split_prefill_attention) {
    key_splits =
        PrefillKeySplits(n, args.num_heads, args.num_keys, ctx_->sm_count());
  }
  // The flash kernel has no key split: a few revived rows over many keys
  // (tensor cores from tensor_core_keyed_attention_rows) take the split
  // kernels instead. Full prefills keep it whatever their grid.
  constexpr int64_t kFlashAnyGridRows = 256;
  if (d.tensor_cores && options_.flash_prefill_attention &&
      (key_splits == 1 || n >= kFlashAnyGridRows) && FlashPrefillSupported(d)) {
    const int64_t bytes = FlashPrefillScratchBytes(d, args.num_keys);
    Tensor scratch = Allocate(DType::kF16, {std::max<int64_t>(1, bytes / 2)});
    const FlashPrefillConfig config = options_.flash_prefill_config;
    if (!Op(Mix(
            MixTensor(Mix(sig, args.num_keys), scratch),
            static_cast<uint64_t>(config.warps * 10 + config.min_blocks)))) {
      return;
    }
    Check(FlashPrefillAttention(*active_, d, args.num_keys, scratch.raw_data(),
                                config),
          "Attention");
    return;
  }
  Tensor split_scratch;
  d.key_splits = key_splits;
  d.pipelined_splits = pipelined;
  if (d.key_splits > 1) {
    split_scratch = Allocate(DType::kF32, {PrefillSplitScratchFloats(d)});
    d.split_scratch = split_scratch.data<float>();
  }
  if (!Op(Mix(Mix(Mix(Mix(sig, args.num_keys), d.tensor_cores),
                  static_cast<uint64_t>(d.key_splits)),
              d.pipelined_splits))) {
    return;
  }
  Check(PrefillAttention(*active_, d, args.num_keys), "Attention");
}

void CudaBackend::RopeWriteKv(const RopeTable& rope,
                              absl::Span<const int32_t> positions,
                              int64_t num_heads, int64_t num_kv_heads,
                              Tensor* q, Tensor* k, const Tensor& v,
                              Tensor* k_cache, Tensor* v_cache) {
  if (!options_.fused_ops) {
    Backend::RopeWriteKv(rope, positions, num_heads, num_kv_heads, q, k, v,
                         k_cache, v_cache);
    return;
  }
  const Tensor none;
  const Tensor& freq = rope.enabled() ? RopeFrequencies(rope) : none;
  uint64_t sig = MixTensor(MixTensor(kOpRopeWriteKv, *q), *k);
  sig = MixTensor(MixTensor(MixTensor(MixTensor(sig, v), *k_cache), *v_cache),
                  freq);
  sig = Mix(Mix(sig, static_cast<uint64_t>(num_heads)),
            static_cast<uint64_t>(num_kv_heads));
  const Tensor pos = StagedTensor(positions, &sig);
  if (!Op(sig)) return;
  const int64_t head_dim = num_kv_heads > 0 ? k->dim(1) / num_kv_heads : 0;
  Check(cuda::RopeWriteKv(*active_, freq, pos, num_heads, num_kv_heads,
                          head_dim, q, k, v, k_cache, v_cache),
        "RopeWriteKv");
}

void CudaBackend::RopeWriteKvAttention(const RopeTable& rope, Tensor* q,
                                       Tensor* k, const Tensor& v,
                                       Tensor* k_cache, Tensor* v_cache,
                                       const AttentionArgs& args) {
  // One kernel for one new row attending to the whole cache (Session's
  // plain decode); everything else takes the two ops.
  const bool one_row = q->rank() == 2 && q->dim(0) == 1 &&
                       args.query_positions.size() == 1 &&
                       args.key_positions.empty() &&
                       args.num_keys == args.query_positions[0] + 1;
  const int64_t max_keys = options_.fused_decode_attention_max_keys;
  const bool short_cache = max_keys <= 0 || k_cache->dim(0) <= max_keys;
  if (!options_.fused_ops || !options_.fused_decode_attention || !one_row ||
      !short_cache || args.q != q || args.k_cache != k_cache ||
      args.v_cache != v_cache) {
    Backend::RopeWriteKvAttention(rope, q, k, v, k_cache, v_cache, args);
    return;
  }
  const Tensor none;
  const Tensor& freq = rope.enabled() ? RopeFrequencies(rope) : none;
  uint64_t sig = kOpRopeWriteKvAttention;
  DeviceAttentionArgs d = DeviceArgs(args, &sig);
  sig = MixTensor(MixTensor(MixTensor(sig, *k), v), freq);
  DecodeNewRow row;
  row.inv_freq = &freq;
  row.k = k;
  row.v = &v;
  row.k_cache = k_cache;
  row.v_cache = v_cache;
  LaunchDecodeAttention(d, sig, "RopeWriteKvAttention", &row);
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

absl::StatusOr<Tensor> CudaBackend::Upload(const Tensor& host) {
  return ToDevice(*ctx_, host);
}

void CudaBackend::MaskUnits(const UnitSelection& keep, int64_t unit_width,
                            Tensor* x) {
  if (keep.all) return;
  DS_CHECK(!keep.oracle) << "oracle selections are resolved by the graph";
  uint64_t sig = Mix(Mix(MixTensor(kOpMask, *x), unit_width), keep.per_row);
  // Device ids (a predictor's TopK) are used in place; host ids are staged.
  const int32_t* ids = keep.ids.empty() ? StageIndices(keep.indices, &sig)
                                        : keep.ids.data<int32_t>();
  if (!keep.ids.empty()) sig = MixTensor(sig, keep.ids);
  const int64_t units = unit_width > 0 ? x->dim(1) / unit_width : 0;
  Tensor flags = Allocate(DType::kI32,
                          {std::max<int64_t>(1, (x->dim(0) * units + 3) / 4)});
  sig = MixTensor(sig, flags);
  if (!Op(sig)) return;
  Check(MaskUnitsDevice(*active_, ids, keep.per_row, unit_width,
                        flags.data<uint8_t>(), x),
        "MaskUnits");
}

Tensor CudaBackend::ToHost(const Tensor& x) {
  if (x.device() == Device::kCpu) return x;
  // f32 and i32 keep their dtype; f16/bf16 come back as f32 (copied now).
  const bool kept_dtype = x.dtype() == DType::kF32 || x.dtype() == DType::kI32;
  if (!in_step_ || !kept_dtype) {
    if (mode_ != Mode::kEager) {
      mismatch_ = true;
      return Tensor::Zeros(DType::kF32, x.shape());
    }
    absl::StatusOr<Tensor> host = cuda::ToHost(*ctx_, x);
    Check(host.status(), "ToHost");
    return kept_dtype ? *host : host->ConvertTo(DType::kF32);
  }
  const size_t bytes = x.bytes();
  const size_t offset = (pinned_out_used_ + 255) / 256 * 256;
  if (offset + bytes > pinned_out_bytes_) {
    if (mode_ != Mode::kEager) {
      // Growing would move the buffer the graph writes to.
      mismatch_ = true;
      return Tensor::Zeros(x.dtype(), x.shape());
    }
    GrowPinnedOut(bytes);
    return ToHost(x);
  }
  pinned_out_used_ = offset + bytes;
  Tensor host = Tensor::Zeros(x.dtype(), x.shape());
  pending_.push_back({host, static_cast<int64_t>(offset)});
  uint64_t sig = Mix(MixTensor(kOpToHost, x), offset);
  if (Op(sig)) {
    char* dst = PinnedOut(half_) + offset;
    if (mode_ == Mode::kCapture && options_.stage_once && bytes % 4 == 0) {
      // The graph keeps kernel nodes only (host_copies.h).
      Check(CopyDeviceToHostByKernel(*ctx_, x.raw_data(), dst, bytes),
            "ToHost");
    } else {
      Check(CudaErrorToStatus(
                cudaMemcpyAsync(dst, x.raw_data(), bytes,
                                cudaMemcpyDeviceToHost, ctx_->stream()),
                "logits download"),
            "ToHost");
    }
  }
  return host;
}

void CudaBackend::GrowPinnedOut(size_t bytes) {
  // Steps still running and this step's earlier downloads write the old
  // buffer: let them finish and deliver their values first.
  Check(WaitAllSteps(), "ToHost");
  Check(ctx_->Synchronize(), "ToHost");
  Deliver(pending_, half_);
  pending_.clear();
  pinned_out_used_ = 0;
  // A captured graph downloads into the old buffer.
  DropGraph();
  if (pinned_out_ != nullptr) cudaFreeHost(pinned_out_);
  pinned_out_ = nullptr;
  pinned_out_bytes_ = std::max<size_t>(bytes * 2, size_t{1} << 20);
  Check(CudaErrorToStatus(cudaHostAlloc(&pinned_out_, 2 * pinned_out_bytes_,
                                        cudaHostAllocDefault),
                          "pinned logits buffer"),
        "ToHost");
}

absl::StatusOr<double> CudaBackend::MeasureCopyBandwidth(int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError("copy size must be > 0");
  absl::StatusOr<Tensor> src = AllocateDevice(*ctx_, DType::kI32, {bytes / 4});
  if (!src.ok()) return src.status();
  absl::StatusOr<Tensor> dst = AllocateDevice(*ctx_, DType::kI32, {bytes / 4});
  if (!dst.ok()) return dst.status();
  cudaEvent_t start, stop;
  DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  DS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  double best = 0.0;
  absl::Status status;
  for (int i = 0; i < 5 && status.ok(); ++i) {
    cudaEventRecord(start, ctx_->stream());
    const cudaError_t e =
        cudaMemcpyAsync(dst->raw_data(), src->raw_data(), src->bytes(),
                        cudaMemcpyDeviceToDevice, ctx_->stream());
    cudaEventRecord(stop, ctx_->stream());
    status = CudaErrorToStatus(e, "bandwidth copy");
    if (e != cudaSuccess) break;
    status = CudaErrorToStatus(cudaEventSynchronize(stop), "bandwidth copy");
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, start, stop);
    // The first copy warms up; every copy counts bytes read + written.
    if (i > 0 && ms > 0.0f) {
      best = std::max(
          best, 2.0 * static_cast<double>(src->bytes()) / (ms * 1e-3) / 1e9);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  return best;
}

// ---- Sparse execution ------------------------------------------------------

void CudaBackend::StageIds(absl::Span<const int32_t> host, Tensor* ids) {
  DS_CHECK(ids->dtype() == DType::kI32 &&
           ids->numel() == static_cast<int64_t>(host.size()));
  if (!in_step_) {
    // From pageable memory the copy has taken the values when it returns;
    // it runs after every step already launched.
    Check(CudaErrorToStatus(
              cudaMemcpyAsync(ids->raw_data(), host.data(), host.size() * 4,
                              cudaMemcpyHostToDevice, ctx_->stream()),
              "ids upload"),
          "StageIds");
    return;
  }
  uint64_t sig = MixTensor(kOpStageIds, *ids);
  const int32_t* staged = StageIndices(host, &sig);
  if (!Op(sig)) return;
  Check(CudaErrorToStatus(
            cudaMemcpyAsync(ids->raw_data(), staged, host.size() * 4,
                            cudaMemcpyDeviceToDevice, ctx_->stream()),
            "staging ids"),
        "StageIds");
}

void CudaBackend::TopK(const Tensor& scores, int64_t k, Tensor* indices) {
  if (scores.device() == Device::kCpu) {
    Backend::TopK(scores, k, indices);
    return;
  }
  HoldForSideWork(scores);
  HoldForSideWork(*indices);
  if (!Op(Mix(MixTensor(MixTensor(kOpTopK, scores), *indices), k))) return;
  Check(TopKRows(*active_, scores, k, indices, options_.topk_cluster), "TopK");
}

void CudaBackend::UnitNorms(const Tensor& x, int64_t unit_width,
                            Tensor* norms) {
  if (x.device() == Device::kCpu) {
    Backend::UnitNorms(x, unit_width, norms);
    return;
  }
  if (!Op(Mix(MixTensor(MixTensor(kOpUnitNorms, x), *norms), unit_width))) {
    return;
  }
  Check(UnitNormsRows(*active_, x, unit_width, norms), "UnitNorms");
}

void CudaBackend::GatherLinear(const Tensor& x, const Tensor& w,
                               const Tensor& bias, const Tensor& ids,
                               int64_t unit_width, bool activate,
                               Activation activation, Tensor* y) {
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpGatherLinear, x), w), bias);
  sig = MixTensor(MixTensor(sig, ids), *y);
  sig = Mix(Mix(Mix(sig, unit_width), activate),
            static_cast<uint64_t>(activation));
  if (!Op(sig)) return;
  Check(GatherGemv(*active_, x, w, bias, nullptr, nullptr, ids.data<int32_t>(),
                   ids.dim(1), unit_width, activate, activation, y),
        "GatherLinear");
}

void CudaBackend::GatherGatedLinear(const Tensor& x, const Tensor& w_up,
                                    const Tensor& w_gate, const Tensor& b_up,
                                    const Tensor& b_gate, const Tensor& ids,
                                    Activation activation, Tensor* y) {
  uint64_t sig =
      MixTensor(MixTensor(MixTensor(kOpGatherLinear, x), w_up), w_gate);
  sig = MixTensor(MixTensor(MixTensor(MixTensor(sig, b_up), b_gate), ids), *y);
  if (!Op(Mix(sig, static_cast<uint64_t>(activation) + 100))) return;
  Check(GatherGemv(*active_, x, w_up, b_up, &w_gate, &b_gate,
                   ids.data<int32_t>(), ids.dim(1), 1, true, activation, y),
        "GatherGatedLinear");
}

void CudaBackend::GatherLinearT(const Tensor& x, const Tensor& w_t,
                                const Tensor& bias, const Tensor& ids,
                                Tensor* y) {
  if (ids.empty() && RoundsInputForLinear(x, w_t)) {
    // Every unit of a prefill: one GEMM (a layer whose W2 was transposed in
    // place, SparseBlocks::DownOfAll).
    HoldForSideWork(x);
    HoldForSideWork(*y);
    const uint64_t sig = MixTensor(
        MixTensor(MixTensor(MixTensor(kOpLinearTransposed, x), w_t), bias), *y);
    if (!Op(sig)) return;
    Check(cuda::LinearTransposed(*active_, *pool_, x, w_t, bias, y),
          "GatherLinearT");
    return;
  }
  const int64_t k = ids.empty() ? w_t.dim(0) : ids.dim(1);
  Tensor scratch = Allocate(
      DType::kF32, {GatherGemvTScratchFloats(*active_, x.dim(0), k, w_t.dim(1),
                                             ids.empty())});
  uint64_t sig =
      MixTensor(MixTensor(MixTensor(kOpGatherLinearT, x), w_t), bias);
  sig = MixTensor(MixTensor(MixTensor(sig, ids), *y), scratch);
  if (!Op(sig)) return;
  Check(GatherGemvT(*active_, x, w_t, bias,
                    ids.empty() ? nullptr : ids.data<int32_t>(), k,
                    scratch.data<float>(), y),
        "GatherLinearT");
}

FusedSparseMlpLaunch CudaBackend::FusedMlpLaunch(const Tensor& x,
                                                 const Tensor& w_up,
                                                 const Tensor* w_gate,
                                                 const Tensor& w_down_t,
                                                 int64_t k, Activation act) {
  // Auto: MLPs of hidden <= 9216, and wider ones with at least 8192 kept
  // units (cuda_backend_options.h).
  const bool wanted =
      options_.fused_sparse_mlp == 2 ||
      (options_.fused_sparse_mlp == 1 && (x.numel() <= 9216 || k >= 8192));
  if (!wanted || x.device() != Device::kCuda) return {};
  auto grid_of = [&](int cluster) -> FusedSparseMlpGrid {
    const auto key =
        std::make_tuple(x.numel(), static_cast<int>(w_up.dtype()),
                        w_gate != nullptr, static_cast<int>(act), cluster);
    auto it = fused_mlp_grids_.find(key);
    if (it == fused_mlp_grids_.end()) {
      it = fused_mlp_grids_
               .emplace(key, FusedSparseMlpClusters(
                                 *active_, x.numel(), w_up.dtype(),
                                 w_gate != nullptr, act, cluster))
               .first;
    }
    return it->second;
  };
  const int forced = static_cast<int>(options_.fused_sparse_mlp_cluster);
  if (forced != 0) {
    return FirstFittingGrid({grid_of(forced)}, x, w_up, w_gate, w_down_t, k);
  }
  // Of the sizes whose one wave holds the units, the larger ones mostly
  // measured faster (fewer splits to reduce; H200, results/bench/
  // h200_run107 .. h200_run116), but which wins moves with the machine (where
  // the clusters land in the GPCs): gated Llama-2-7B keep 0.1 12.4 us at 16
  // against 13.5 at 8; OPT-66B keep 0.1 at 16 (14 splits) ahead of 12 on
  // four machines, behind 8 alone on two (40.1 against 39.1 us) yet ahead in
  // their decode (14.78 against 14.85 ms, run 116); keep 0.25 89.5 at 4
  // against the gathers' 91.8. Splits of more than ~290 units at 16 lost to
  // 8 (OPT-30B keep 0.25, 341 units: 58.0 against 56.6 us, runs 115-116), as
  // did ReLU MLPs narrower than 7168 (OPT-13B keep 0.25, run 109); 12 needs
  // a hidden size that is a multiple of 1536.
  if (w_gate != nullptr) {
    return FirstFittingGrid({grid_of(16), grid_of(8), grid_of(4)}, x, w_up,
                            w_gate, w_down_t, k);
  }
  if (x.numel() >= 7168) {
    const FusedSparseMlpLaunch wide =
        FirstFittingGrid({grid_of(16)}, x, w_up, w_gate, w_down_t, k);
    if (wide.splits > 0 &&
        (k + wide.splits - 1) / wide.splits <= kReluCluster16MaxSplitUnits) {
      return wide;
    }
  }
  return FirstFittingGrid({grid_of(12), grid_of(8), grid_of(4)}, x, w_up,
                          w_gate, w_down_t, k);
}

void CudaBackend::GatherMlp(const Tensor& x, const Tensor& w_up,
                            const Tensor& b_up, const Tensor* w_gate,
                            const Tensor* b_gate, const Tensor& w_down_t,
                            const Tensor& b_down, const Tensor& ids,
                            Activation act, Tensor* hidden, Tensor* y) {
  const FusedSparseMlpLaunch launch =
      FusedMlpLaunch(x, w_up, w_gate, w_down_t, ids.dim(1), act);
  const int splits = launch.splits;
  const FusedSparseMlpGrid& grid = launch.grid;
  if (splits == 0) {
    Backend::GatherMlp(x, w_up, b_up, w_gate, b_gate, w_down_t, b_down, ids,
                       act, hidden, y);
    return;
  }
  Tensor scratch = Allocate(DType::kF32, {splits * x.numel()});
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpGatherMlp, x), w_up), b_up);
  if (w_gate != nullptr) sig = MixTensor(MixTensor(sig, *w_gate), *b_gate);
  sig = MixTensor(MixTensor(MixTensor(sig, w_down_t), b_down), ids);
  sig = Mix(MixTensor(MixTensor(sig, *y), scratch), static_cast<uint64_t>(act));
  if (!Op(Mix(Mix(sig, static_cast<uint64_t>(splits)),
              static_cast<uint64_t>(grid.cluster)))) {
    return;
  }
  Check(FusedSparseMlp(*active_, x, w_up, b_up, w_gate, b_gate, w_down_t,
                       b_down, ids.data<int32_t>(), ids.dim(1), act, launch,
                       scratch.data<float>(), y),
        "GatherMlp");
}

void CudaBackend::GatherColumnsLinear(const Tensor& x, const Tensor& w,
                                      const Tensor& bias, const Tensor& ids,
                                      int64_t unit_width, Tensor* y) {
  uint64_t sig =
      MixTensor(MixTensor(MixTensor(kOpGatherColumnsLinear, x), w), bias);
  sig = Mix(MixTensor(MixTensor(sig, ids), *y), unit_width);
  if (!Op(sig)) return;
  Check(GatherColumnsGemv(*active_, x, w, bias, ids.data<int32_t>(), ids.dim(1),
                          unit_width, y,
                          static_cast<int>(options_.sparse_rows_per_warp)),
        "GatherColumnsLinear");
}

void CudaBackend::GatherColumns(const Tensor& x, const Tensor& ids,
                                int64_t unit_width, Tensor* y) {
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpGatherColumns, x), ids), *y);
  if (!Op(Mix(sig, unit_width))) return;
  Check(GatherColumnsCopy(*active_, x, ids.data<int32_t>(), ids.dim(1),
                          unit_width, y),
        "GatherColumns");
}

void CudaBackend::SparseAttention(const AttentionArgs& args,
                                  const Tensor& head_ids) {
  uint64_t sig = MixTensor(kOpSparseAttention, head_ids);
  DeviceAttentionArgs d = DeviceArgs(args, &sig);
  d.num_heads = head_ids.dim(1);  // Compact heads.
  d.head_ids = head_ids.data<int32_t>();
  d.head_group = args.num_heads / args.num_kv_heads;
  LaunchDecodeAttention(d, sig, "SparseAttention");
}

void CudaBackend::LazyKv(const LazyKvArgs& args) {
  const Tensor none;
  const Tensor& freq = args.rope != nullptr && args.rope->enabled()
                           ? RopeFrequencies(*args.rope)
                           : none;
  uint64_t sig = MixTensor(MixTensor(kOpLazyKv, *args.ring_x), *args.k_cache);
  sig = MixTensor(MixTensor(MixTensor(sig, *args.v_cache), *args.wk), freq);
  sig = Mix(sig, args.h != nullptr
                     ? reinterpret_cast<uintptr_t>(args.h->raw_data())
                     : 0);
  if (args.head_ids != nullptr) sig = MixTensor(sig, *args.head_ids);
  DeviceLazyKvArgs d;
  d.step = StageIndices(args.step, &sig);
  if (!Op(sig)) return;
  d.h = args.h != nullptr ? args.h->data<float>() : nullptr;
  d.head_ids = args.head_ids != nullptr && args.h != nullptr
                   ? args.head_ids->data<int32_t>()
                   : nullptr;
  d.k = d.head_ids != nullptr ? args.head_ids->numel() : 0;
  d.ring_x = args.ring_x->data<float>();
  d.ring_pos = args.ring_pos->data<int32_t>();
  d.pending = args.ring_pending->data<int32_t>();
  d.slots = args.ring_x->dim(0);
  d.wk = args.wk;
  d.wv = args.wv;
  d.bk = args.bk;
  d.bv = args.bv;
  d.inv_freq = freq.empty() ? nullptr : freq.data<float>();
  d.num_heads = args.num_heads;
  d.num_kv_heads = args.num_kv_heads;
  d.head_dim = args.head_dim;
  d.hidden = args.ring_x->dim(1);
  d.k_cache = args.k_cache;
  d.v_cache = args.v_cache;
  d.rows_per_warp = static_cast<int>(options_.sparse_rows_per_warp);
  d.tensor_cores = options_.lazy_kv_tensor_cores;
  d.mma_blocks_per_sm = static_cast<int>(options_.lazy_kv_mma_blocks_per_sm);
  Check(LazyKvDevice(*active_, d), "LazyKv");
}

Tensor CudaBackend::Transpose(const Tensor& w) {
  if (w.device() == Device::kCpu) return Backend::Transpose(w);
  Check(ctx_->Synchronize(), "Transpose");
  size_t free_bytes = 0, total_bytes = 0;
  Check(CudaErrorToStatus(cudaMemGetInfo(&free_bytes, &total_bytes),
                          "cudaMemGetInfo"),
        "Transpose");
  // Left for activations, graphs and the benchmark's 2 GiB bandwidth copy.
  const size_t margin = std::max<size_t>(size_t{6} << 30, total_bytes / 20);
  const bool in_place = w.bytes() + margin > free_bytes;
  absl::StatusOr<Tensor> t = AllocateDevice(*ctx_, w.dtype(), w.shape());
  Check(t.status(), "Transpose");
  if (!in_place) {
    Tensor out = t->Reshape({w.dim(1), w.dim(0)});
    Check(TransposeMatrix(*ctx_, w, &out), "Transpose");
    Check(ctx_->Synchronize(), "Transpose");
    return out;
  }
  // No room for a second copy of every W2: transpose through one scratch
  // copy into the weight's own storage (the graph then reads this weight
  // only transposed, SparseBlocks::down_in_place).
  Check(CopyDeviceToDevice(*ctx_, w, &*t), "Transpose");
  Tensor out = w.Reshape({w.dim(1), w.dim(0)});
  Check(TransposeMatrix(*ctx_, *t, &out), "Transpose");
  Check(ctx_->Synchronize(), "Transpose");
  transposed_in_place_.insert(w.raw_data());
  return out;
}

}  // namespace dynsparse::cuda
