// CudaBackend's side work (Backend::BeginSideWork): DejaVu's lookahead
// predictors on a second stream, so both projections and the TopK (one
// block) run beside the sub-block they look ahead of instead of before it;
// LazyLLM's probe, its TopCount and their download run there beside the
// attention (Session::StartNextProbe). Index spans staged during side work
// are copied on the side stream and reused only there (StageIndices).
// The second stream has a context of its own (cuBLAS handle, GEMV
// workspace), forks from the main stream with an event and joins it at
// WaitSideWork or WaitAllSideWork, inside a CUDA-graph capture too (the
// graph gets the fork and the join as edges). Tensors allocated during side
// work, and the inputs of the Linear and TopK ops it issues, are held until
// the join: the pool hands freed blocks out again in main-stream order.
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_signature.h"

namespace dynsparse::cuda {

void CudaBackend::BeginSideWork() {
  DS_CHECK(!in_side_work_) << "CudaBackend: side work does not nest";
  in_side_work_ = true;
  side_work_.push_back(SideWork{});
  if (!options_.side_work) return;  // In line, on the main stream.
  if (side_ctx_ == nullptr) {
    // Creating a context cannot be captured; the first decode step is
    // eager, so a capture only gets here after a failed rerun.
    if (mode_ != Mode::kEager) {
      mismatch_ = true;
      return;
    }
    absl::StatusOr<std::unique_ptr<DeviceContext>> side =
        DeviceContext::Create(ctx_->device());
    Check(side.status(), "BeginSideWork");
    side_ctx_ = *std::move(side);
    Check(CudaErrorToStatus(
              cudaEventCreateWithFlags(&fork_event_, cudaEventDisableTiming),
              "side work fork event"),
          "BeginSideWork");
  }
  side_work_.back().aside = true;
  active_ = side_ctx_.get();
  if (!Op(kOpBeginSideWork)) return;
  Check(CudaErrorToStatus(cudaEventRecord(fork_event_, ctx_->stream()),
                          "side work fork"),
        "BeginSideWork");
  Check(CudaErrorToStatus(
            cudaStreamWaitEvent(side_ctx_->stream(), fork_event_, 0),
            "side work fork"),
        "BeginSideWork");
}

int CudaBackend::EndSideWork() {
  DS_CHECK(in_side_work_) << "CudaBackend: EndSideWork without BeginSideWork";
  in_side_work_ = false;
  active_ = ctx_.get();
  const int token = static_cast<int>(side_work_.size());
  SideWork& work = side_work_.back();
  if (!work.aside) {
    work.joined = true;
    work.held.clear();
    return token;
  }
  while (side_events_.size() < side_work_.size()) {
    if (mode_ != Mode::kEager) {  // Event creation stays out of captures.
      mismatch_ = true;
      return token;
    }
    cudaEvent_t event = nullptr;
    Check(CudaErrorToStatus(
              cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
              "side work join event"),
          "EndSideWork");
    side_events_.push_back(event);
  }
  if (Op(kOpEndSideWork)) {
    Check(CudaErrorToStatus(
              cudaEventRecord(side_events_[token - 1], side_ctx_->stream()),
              "side work join"),
          "EndSideWork");
  }
  return token;
}

void CudaBackend::WaitSideWork(int token) {
  if (token <= 0 || token > static_cast<int>(side_work_.size())) return;
  SideWork& work = side_work_[token - 1];
  if (work.joined) return;
  work.joined = true;
  if (Op(kOpWaitSideWork + (static_cast<uint64_t>(token) << 32)) &&
      token <= static_cast<int>(side_events_.size())) {
    Check(CudaErrorToStatus(
              cudaStreamWaitEvent(ctx_->stream(), side_events_[token - 1], 0),
              "side work join"),
          "WaitSideWork");
  }
  // Later main-stream work, pool reuse included, now follows it.
  work.held.clear();
}

void CudaBackend::WaitAllSideWork() {
  for (size_t i = 0; i < side_work_.size(); ++i) {
    WaitSideWork(static_cast<int>(i) + 1);
  }
}

void CudaBackend::JoinAllSideWork() {
  WaitAllSideWork();
  side_work_.clear();
}

void CudaBackend::HoldForSideWork(const Tensor& t) {
  if (in_side_work_ && !t.empty()) side_work_.back().held.push_back(t);
}

}  // namespace dynsparse::cuda
