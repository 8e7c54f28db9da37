#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/host_copies.h"

namespace dynsparse::cuda {
namespace {

constexpr int kCopyThreads = 256;
constexpr int64_t kMaxCopyBlocks = 264;  // Two per SM on an H200.

__global__ void CopyWordsKernel(const uint32_t* src, uint32_t* dst,
                                int64_t words) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < words; i += stride) {
    dst[i] = src[i];
  }
}

dim3 CopyGrid(int64_t words) {
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(
      (words + kCopyThreads - 1) / kCopyThreads, 1, kMaxCopyBlocks)));
}

absl::Status CheckWords(size_t bytes, const char* what) {
  if (bytes % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes, " bytes is not a multiple of 4"));
  }
  return absl::OkStatus();
}

// The device's address of pinned host memory (the same pointer under
// unified addressing, asked for anyway).
absl::Status MappedHost(const void* host, void** device_view) {
  DS_CUDA_RETURN_IF_ERROR(
      cudaHostGetDevicePointer(device_view, const_cast<void*>(host), 0));
  return absl::OkStatus();
}

// A graph node's launch of CopyWordsKernel; `args` holds the addresses of
// its three arguments and must outlive the params' use.
cudaKernelNodeParams CopyNodeParams(void* (&args)[3], int64_t words) {
  cudaKernelNodeParams params = {};
  params.func = reinterpret_cast<void*>(&CopyWordsKernel);
  params.gridDim = CopyGrid(words);
  params.blockDim = dim3(kCopyThreads);
  params.kernelParams = args;
  return params;
}

}  // namespace

absl::Status AddHostToDeviceCopyNode(cudaGraph_t graph, const void* host,
                                     void* device, size_t bytes,
                                     cudaGraphNode_t* node) {
  if (absl::Status s = CheckWords(bytes, "host-to-device copy node"); !s.ok()) {
    return s;
  }
  void* src = nullptr;
  if (absl::Status s = MappedHost(host, &src); !s.ok()) return s;
  const uint32_t* src_words = static_cast<const uint32_t*>(src);
  uint32_t* dst_words = static_cast<uint32_t*>(device);
  int64_t words = static_cast<int64_t>(bytes / 4);
  void* args[] = {&src_words, &dst_words, &words};
  const cudaKernelNodeParams params = CopyNodeParams(args, words);
  DS_CUDA_RETURN_IF_ERROR(
      cudaGraphAddKernelNode(node, graph, nullptr, 0, &params));
  return absl::OkStatus();
}

absl::Status CopyDeviceToHostByKernel(DeviceContext& ctx, const void* device,
                                      void* host, size_t bytes) {
  if (absl::Status s = CheckWords(bytes, "device-to-host copy kernel");
      !s.ok()) {
    return s;
  }
  if (bytes == 0) return absl::OkStatus();
  void* dst = nullptr;
  if (absl::Status s = MappedHost(host, &dst); !s.ok()) return s;
  const int64_t words = static_cast<int64_t>(bytes / 4);
  CopyWordsKernel<<<CopyGrid(words), kCopyThreads, 0, ctx.stream()>>>(
      static_cast<const uint32_t*>(device), static_cast<uint32_t*>(dst), words);
  return LastLaunchStatus("CopyWordsKernel");
}

absl::StatusOr<std::vector<HostCopyNode>> FindHostCopyNodes(cudaGraph_t graph) {
  size_t count = 0;
  DS_CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  DS_CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::vector<HostCopyNode> found;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    DS_CUDA_RETURN_IF_ERROR(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams params = {};
    DS_CUDA_RETURN_IF_ERROR(cudaGraphKernelNodeGetParams(node, &params));
    if (params.func != reinterpret_cast<void*>(&CopyWordsKernel)) continue;
    // kernelParams points at each argument's value.
    found.push_back({node,
                     *static_cast<const uint32_t**>(params.kernelParams[0]),
                     *static_cast<uint32_t**>(params.kernelParams[1]),
                     *static_cast<int64_t*>(params.kernelParams[2])});
  }
  return found;
}

absl::Status RetargetHostCopies(cudaGraphExec_t exec,
                                absl::Span<HostCopyNode> nodes,
                                absl::Span<const HostMove> moves) {
  // Where `p` goes under the moves (the device's view of pinned memory is
  // its host address under unified addressing, which CUDA 12+ requires).
  auto moved = [&](const void* p) -> const void* {
    const char* c = static_cast<const char*>(p);
    for (const HostMove& m : moves) {
      const char* from = static_cast<const char*>(m.from);
      if (c >= from && c < from + m.bytes) {
        return static_cast<const char*>(m.to) + (c - from);
      }
    }
    return p;
  };
  for (HostCopyNode& n : nodes) {
    const uint32_t* src = static_cast<const uint32_t*>(moved(n.src));
    uint32_t* dst = static_cast<uint32_t*>(const_cast<void*>(moved(n.dst)));
    if (src == n.src && dst == n.dst) continue;
    void* args[] = {&src, &dst, &n.words};
    const cudaKernelNodeParams params = CopyNodeParams(args, n.words);
    DS_CUDA_RETURN_IF_ERROR(
        cudaGraphExecKernelNodeSetParams(exec, n.node, &params));
    n.src = src;
    n.dst = dst;
  }
  return absl::OkStatus();
}

}  // namespace dynsparse::cuda
