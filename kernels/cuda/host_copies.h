// Copies between pinned host memory and the GPU made by kernels instead of
// the copy engine, so a captured decode step is a graph of kernel nodes
// only. Per-op copy nodes between kernels cost OPT-66B DejaVu decode 1.3%
// (17.98 -> 17.78 ms with one copy node first, results/bench/h200_run27);
// copy kernels in place of that node and of the logits download timed the
// same untraced (run 28), but under the CUPTI recorder (tools/cupti_trace) a
// graph holding copy nodes started its first kernel ~1.4 us per node late,
// so kernel-only graphs keep recorded timelines true. Pinned memory from
// cudaHostAlloc is mapped into the device's address space: a kernel reads
// and writes it over PCIe directly.
#ifndef DYNSPARSE_KERNELS_CUDA_HOST_COPIES_H_
#define DYNSPARSE_KERNELS_CUDA_HOST_COPIES_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// Adds to `graph` a kernel node without dependencies that copies `bytes`
// (a multiple of 4) from pinned host memory to device memory when the graph
// runs; the host may rewrite the source between launches.
absl::Status AddHostToDeviceCopyNode(cudaGraph_t graph, const void* host,
                                     void* device, size_t bytes,
                                     cudaGraphNode_t* node);

// Copies `bytes` (a multiple of 4) of device memory into pinned host memory
// with a kernel on ctx's stream (capturable). The host reads it after the
// stream has synchronised.
absl::Status CopyDeviceToHostByKernel(DeviceContext& ctx, const void* device,
                                      void* host, size_t bytes);

// The copy kernels of a captured graph that read or write pinned host
// memory, found once after capture so that each launch can point them at
// the half of a double-buffered host area its step uses (CudaBackend runs
// one step while the host prepares the next, in the other half).
struct HostCopyNode {
  cudaGraphNode_t node = nullptr;
  const uint32_t* src = nullptr;
  uint32_t* dst = nullptr;
  int64_t words = 0;
};
absl::StatusOr<std::vector<HostCopyNode>> FindHostCopyNodes(cudaGraph_t graph);

// A host area the copies may move between: [from, from + bytes) -> the same
// offsets in `to`.
struct HostMove {
  const void* from = nullptr;
  const void* to = nullptr;
  size_t bytes = 0;
};
// Points, for the next launches of `exec` (launches already made keep their
// pointers), each node's src or dst that lies in a move's `from` area at the
// same offset in its `to` area. Nodes touching none stay as they are.
absl::Status RetargetHostCopies(cudaGraphExec_t exec,
                                absl::Span<HostCopyNode> nodes,
                                absl::Span<const HostMove> moves);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_HOST_COPIES_H_
