// CudaBackend's token-axis ops (LazyLLM): row copies, the last-query probe,
// the choice of the kept tokens next to it and the mid-step read the host
// selects tokens from. Token selection makes steps data dependent (the host
// reads the chosen indices and picks the next rows), so these ops run
// eagerly only: met inside a CUDA-graph capture or replay, they mark the
// step for an eager rerun and turn graph capture off for this backend.
#include <algorithm>
#include <cstring>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/sparse_ops.h"
#include "kernels/cuda/token_ops.h"
#include "kernels/cuda/top_count.h"

namespace dynsparse::cuda {

bool CudaBackend::EagerStep() {
  if (mode_ == Mode::kEager) return true;
  mismatch_ = true;
  return false;
}

bool CudaBackend::EagerOnly() {
  if (EagerStep()) return true;
  options_.cuda_graphs = false;
  return false;
}

void CudaBackend::CopyRows(const Tensor& src,
                           absl::Span<const int32_t> src_rows,
                           absl::Span<const int32_t> dst_rows, Tensor* dst) {
  if (!EagerOnly()) return;
  uint64_t sig = 0;
  const int32_t* from = StageIndices(src_rows, &sig);
  const int32_t* to = StageIndices(dst_rows, &sig);
  Check(CopyRowsDevice(*active_, src, from, to,
                       static_cast<int64_t>(src_rows.size()), dst),
        "CopyRows");
}

void CudaBackend::LastQueryAttention(const LastQueryArgs& args) {
  if (!EagerOnly()) return;
  HoldForSideWork(*args.q);  // Session probes beside the attention.
  uint64_t sig = 0;
  DeviceLastQueryArgs d;
  d.q = args.q;
  d.k_cache = args.k_cache;
  d.key_rows = StageIndices(args.key_positions, &sig);
  d.num_keys = static_cast<int64_t>(args.key_positions.size());
  d.num_heads = args.num_heads;
  d.num_kv_heads = args.num_kv_heads;
  d.head_dim = args.head_dim;
  d.scale = args.scale;
  d.out = args.out;
  Tensor scratch = Allocate(DType::kF32, {LastQueryScratchFloats(d)});
  Check(LastQueryAttentionDevice(*active_, d, scratch.data<float>()),
        "LastQueryAttention");
}

void CudaBackend::TopCount(const Tensor& scores, int64_t count,
                           Tensor* indices) {
  if (!EagerOnly()) return;
  HoldForSideWork(scores);
  if (active_ == ctx_.get()) main_indices_just_written_ = indices->raw_data();
  if (options_.top_count_bins) {
    Tensor rows = indices->Reshape({1, count});
    Check(TopKRows(*active_, scores.Reshape({1, scores.numel()}), count, &rows,
                   options_.topk_cluster),
          "TopCount");
    return;
  }
  Check(TopCountDevice(*active_, scores, count, indices), "TopCount");
}

Tensor CudaBackend::PlaceholderRead(const Tensor& x) {
  if (x.dtype() != DType::kI32) return Tensor::Zeros(DType::kF32, x.shape());
  Tensor indices = Tensor::Zeros(DType::kI32, x.shape());
  int32_t* p = indices.data<int32_t>();
  for (int64_t i = 0; i < indices.numel(); ++i) p[i] = static_cast<int32_t>(i);
  return indices;
}

Tensor CudaBackend::ReadNow(const Tensor& x) {
  const DType read = x.dtype() == DType::kI32 ? DType::kI32 : DType::kF32;
  if (!EagerOnly()) return PlaceholderRead(x);
  // x may come from side work (Session's probe) not yet joined.
  if (side_ctx_ != nullptr) Check(side_ctx_->Synchronize(), "ReadNow");
  absl::StatusOr<Tensor> host = cuda::ToHost(*ctx_, x);  // Synchronous.
  Check(host.status(), "ReadNow");
  return host->dtype() == read ? *host : host->ConvertTo(read);
}

Backend::StartedRead CudaBackend::StartRead(const Tensor& x) {
  DS_CHECK(!read_started_) << "CudaBackend: one StartRead at a time";
  if (x.device() == Device::kCpu ||
      (x.dtype() != DType::kF32 && x.dtype() != DType::kI32)) {
    return {ReadNow(x), Tensor()};
  }
  if (!options_.early_reads) return {Tensor(), x};
  if (!EagerOnly()) return {PlaceholderRead(x), Tensor()};
  if (x.bytes() > read_pinned_bytes_) {  // No download is using it.
    if (read_pinned_ != nullptr) cudaFreeHost(read_pinned_);
    read_pinned_ = nullptr;
    read_pinned_bytes_ = std::max<size_t>(2 * x.bytes(), size_t{1} << 16);
    Check(CudaErrorToStatus(cudaHostAlloc(&read_pinned_, read_pinned_bytes_,
                                          cudaHostAllocDefault),
                            "pinned read buffer"),
          "StartRead");
  }
  // On the stream that wrote x: the side stream when Session probes there.
  HoldForSideWork(x);
  Check(CudaErrorToStatus(
            cudaMemcpyAsync(read_pinned_, x.raw_data(), x.bytes(),
                            cudaMemcpyDeviceToHost, active_->stream()),
            "started read"),
        "StartRead");
  Check(CudaErrorToStatus(cudaEventRecord(read_done_, active_->stream()),
                          "started read event"),
        "StartRead");
  read_started_ = true;
  return {Tensor::Zeros(x.dtype(), x.shape()), Tensor()};
}

Tensor CudaBackend::FinishRead(StartedRead read) {
  if (!read_started_) {  // Read in StartRead, deferred, or skipped.
    return read.values.empty() ? ReadNow(read.source) : read.values;
  }
  read_started_ = false;
  Check(CudaErrorToStatus(cudaEventSynchronize(read_done_), "started read"),
        "FinishRead");
  std::memcpy(read.values.raw_data(), read_pinned_, read.values.bytes());
  return read.values;
}

}  // namespace dynsparse::cuda
