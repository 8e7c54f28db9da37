// CudaBackend's core: creation, steps and their CUDA graphs, index staging,
// downloads, embedding and argmax. The ops by kind live beside it:
// cuda_backend_{linear,attention,sparse,tokens,side,stack}.cc.
#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_switches.h"
#include "kernels/cuda/decode_stack.h"
#include "kernels/cuda/device_weights.h"
#include "kernels/cuda/graph_ops.h"
#include "kernels/cuda/op_signature.h"

namespace dynsparse::cuda {
namespace {

// Index staging arena: 4 MiB of ints, enough for any step's ids, positions
// and unit selections of prefill chunks up to ~100k tokens.
constexpr int64_t kIndexArenaInts = int64_t{1} << 20;
constexpr int64_t kIndexAlignInts = 64;  // 256-byte aligned slots.

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
  // Ints the kernels that use them leave zero.
  auto zeroed_ints = [&](int64_t n, Tensor* t) -> absl::Status {
    absl::StatusOr<Tensor> ints = AllocateDevice(*ctx_, DType::kI32, {n});
    if (!ints.ok()) return ints.status();
    *t = *ints;
    DS_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(t->raw_data(), 0, t->bytes(), ctx_->stream()));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(zeroed_ints(kAttentionCounterInts, &attention_counters_));
  RETURN_IF_ERROR(zeroed_ints(kFusedMlpCounterInts, &fused_mlp_counters_));
  RETURN_IF_ERROR(zeroed_ints(kDecodeStackBarrierWords, &stack_barrier_));
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
      options_.accumulate_early_every == 1
          ? ""
          : absl::StrCat(", residual-add GEMV early loads every ",
                         options_.accumulate_early_every),
      ctx_->gemv_prefetch_store() ? "" : ", no GEMV store prefetch",
      ctx_->gemv_occupancy_bounds() ? "" : ", unbounded GEMV registers",
      ctx_->gemv_deep_mma() ? "" : ", no one-wave MMA GEMV build",
      ctx_->gemv_weights_evict_first() ? ", GEMV weights evict_first" : "",
      options_.decode_stack ? ", decode stack" : "",
      options_.fused_mlp_sum_in_kernel ? ", MLP splits summed in its launch"
                                       : "",
      options_.fused_mlp_one_block_an_sm ? "" : ", MLP two blocks an SM",
      options_.cluster_decode_attention ? "" : ", attention merge in memory",
      options_.early_kv_loads ? "" : ", late K/V loads",
      options_.f16_kv_cache ? "" : ", f32 KV cache",
      options_.fused_row_groups ? "" : ", a GEMV a weight for row groups", ")");
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

void CudaBackend::BeginStep(int64_t rows, int64_t keys) {
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
  // A decode row over a cache long enough for the tensor-core attention
  // runs eagerly (its split count follows the length); shorter steps, of
  // this sequence or a later one, keep the graph.
  const bool graphable =
      options_.cuda_graphs && rows == 1 && !TensorCoreDecodeAttention(keys);
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
  if (active_ == ctx_.get()) main_indices_just_written_ = nullptr;
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
  // Copies go to the stream of the ops that read them. A span staged on the
  // side stream is reused only there: the main stream is not ordered after
  // that copy until the side work is joined.
  const bool aside = active_ != ctx_.get();
  for (const Staged& s : staged_) {
    if (s.aside && !aside) continue;
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
    if (side_ctx_ != nullptr) Check(side_ctx_->Synchronize(), "StageIndices");
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
                              active_->stream()),
              "staging indices"),
          "StageIndices");
  }
  staged_.push_back({values.data(), n, offset, aside});
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

absl::StatusOr<Tensor> CudaBackend::Upload(const Tensor& host) {
  return ToDevice(*ctx_, host);
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

}  // namespace dynsparse::cuda
