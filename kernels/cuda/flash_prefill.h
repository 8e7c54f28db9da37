// Causal prefill attention on tensor cores, FlashAttention-2 style, for long
// prompts (head_dim 64 or 128; GQA; optional LazyLLM key lists).
//
// The attention kernel streams 64-key tiles of f16 K and V rows through
// double-buffered shared memory (cp.async) while the tensor cores work on
// the previous tile. An f16 cache (Backend::KvCacheDtype) without a key list
// is read in place. Otherwise a first pass writes the keys a prefill may see
// (cache rows [0, max_keys), or the listed rows, compacted) as f16 into a
// scratch buffer: an f32 cache cannot feed cp.async as f16, and listed rows
// are gathered so that tiles stay contiguous. Q stays f32 in global memory
// and is read once, into f16 register fragments; scores, softmax and the
// output are f32.
// Same numbers as PrefillAttention with tensor_cores (f16 q, k, v), up to
// the f16 rounding of the probabilities and summation order.
#ifndef DYNSPARSE_KERNELS_CUDA_FLASH_PREFILL_H_
#define DYNSPARSE_KERNELS_CUDA_FLASH_PREFILL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/flash_prefill_config.h"

namespace dynsparse::cuda {

// True when FlashPrefillAttention takes these arguments: head_dim 64 or 128,
// no key splits, no head ids, f32 q and out, f32 or f16 K/V caches (both of
// one type), 16-byte aligned operands.
bool FlashPrefillSupported(const DeviceAttentionArgs& args);

// Bytes of scratch FlashPrefillAttention needs for `max_keys` keys (the f16
// copies of K and V; unused, but still required, for an f16 cache without a
// key list).
int64_t FlashPrefillScratchBytes(const DeviceAttentionArgs& args,
                                 int64_t max_keys);

// PrefillAttention for FlashPrefillSupported arguments (args.tensor_cores
// and args.key_splits are ignored). `scratch` holds
// FlashPrefillScratchBytes(args, max_keys) bytes, 256-byte aligned.
absl::Status FlashPrefillAttention(DeviceContext& ctx,
                                   const DeviceAttentionArgs& args,
                                   int64_t max_keys, void* scratch,
                                   FlashPrefillConfig config = {});

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_FLASH_PREFILL_H_
