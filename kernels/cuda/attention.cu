// Causal GQA attention (attention.h explains the strategies): what the
// prefill (attention_prefill.cu) and decode (attention_decode.cu) kernels
// share on the host, the argument checks, and the kernel that merges their
// partials.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_kernels.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/kv_access.cuh"

namespace dynsparse::cuda::attention_internal {
namespace {

// The separate merge (when no counters are given): grid (heads, n), kThreads.
__global__ void __launch_bounds__(kThreads)
    DecodeCombineKernel(const KernelArgs a) {
  PdlWait();
  CombineChunks(a, blockIdx.x, blockIdx.y);
}

}  // namespace

absl::Status CheckArgs(const DeviceAttentionArgs& args, KernelArgs* a) {
  if (args.q == nullptr || args.k_cache == nullptr || args.v_cache == nullptr ||
      args.out == nullptr || args.positions == nullptr) {
    return absl::InvalidArgumentError("attention: missing argument");
  }
  for (const Tensor* t : {args.q, args.k_cache, args.v_cache,
                          static_cast<const Tensor*>(args.out)}) {
    if (absl::Status s = CheckOnDevice(*t, "attention operand"); !s.ok()) {
      return s;
    }
    if (t->rank() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attention: operands must be matrices, got ", t->DebugString()));
    }
  }
  for (const Tensor* t : {args.q, static_cast<const Tensor*>(args.out)}) {
    if (t->dtype() != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attention: q and out must be f32, got ", t->DebugString()));
    }
  }
  if (absl::Status s = CheckKvPair(*args.k_cache, *args.v_cache, "attention");
      !s.ok()) {
    return s;
  }
  if (args.head_dim <= 0 || args.head_dim > kMaxAttentionHeadDim ||
      args.num_heads <= 0 || args.num_kv_heads <= 0 ||
      (args.head_ids == nullptr && args.num_heads % args.num_kv_heads != 0) ||
      (args.head_ids != nullptr && args.head_group <= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention: unsupported heads ", args.num_heads, "/",
                     args.num_kv_heads, " x head_dim ", args.head_dim));
  }
  const int64_t n = args.q->dim(0);
  const int64_t q_width = args.num_heads * args.head_dim;
  const int64_t kv_width = args.num_kv_heads * args.head_dim;
  if (args.head_ids != nullptr && n > 8) {
    return absl::InvalidArgumentError("attention: head ids are decode only");
  }
  if (args.q->dim(1) != q_width || args.out->dim(1) != q_width ||
      args.out->dim(0) != n || args.k_cache->dim(1) != kv_width ||
      args.v_cache->shape() != args.k_cache->shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention: shapes q ", args.q->DebugString(), " k ",
        args.k_cache->DebugString(), " v ", args.v_cache->DebugString(),
        " out ", args.out->DebugString(), " do not match ", args.num_heads, "/",
        args.num_kv_heads, " heads of ", args.head_dim));
  }
  a->q = args.q->data<float>();
  // f16 caches too: the kernels read them through KvPtr.
  a->k = static_cast<const float*>(args.k_cache->raw_data());
  a->v = static_cast<const float*>(args.v_cache->raw_data());
  a->positions = args.positions;
  a->key_rows = args.key_rows;
  a->out = args.out->data<float>();
  a->scratch = nullptr;
  a->counters = args.counters;
  a->n = static_cast<int>(n);
  a->heads = static_cast<int>(args.num_heads);
  a->group = static_cast<int>(args.head_ids != nullptr
                                  ? args.head_group
                                  : args.num_heads / args.num_kv_heads);
  a->head_ids = args.head_ids;
  a->head_dim = static_cast<int>(args.head_dim);
  a->q_stride = q_width;
  a->kv_stride = kv_width;
  a->max_keys = static_cast<int>(args.k_cache->dim(0));
  if (args.key_rows != nullptr) {
    if (args.num_keys < 0 || args.num_keys > args.k_cache->dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attention: ", args.num_keys, " listed keys for a cache of ",
          args.k_cache->dim(0), " rows"));
    }
    a->max_keys = static_cast<int>(args.num_keys);
  }
  // Decode: chunks over the cache capacity, so a captured graph stays valid
  // as the sequence grows; over the listed keys only with a key list.
  a->chunks = static_cast<int>(CeilDiv(args.key_rows != nullptr
                                           ? std::max<int64_t>(args.num_keys, 1)
                                           : args.k_cache->dim(0),
                                       DecodeChunkKeys(args)));
  a->split_keys = 0;
  a->scale = args.scale;
  // Four elements: 16 bytes of f32, 8 of f16.
  const uintptr_t vec_bytes = 4 * DTypeSize(args.k_cache->dtype());
  a->vec4 = args.head_dim % 4 == 0 && IsAligned(a->k, vec_bytes) &&
            IsAligned(a->v, vec_bytes);
  return absl::OkStatus();
}

absl::Status LaunchChunkMerge(DeviceContext& ctx, const KernelArgs& a,
                              bool pdl) {
  const dim3 grid(static_cast<unsigned>(a.heads), static_cast<unsigned>(a.n));
  LaunchKernel(pdl, DecodeCombineKernel, grid, dim3(kThreads), 0, ctx.stream(),
               a);
  return LastLaunchStatus("DecodeCombineKernel");
}

}  // namespace dynsparse::cuda::attention_internal
