// What the CUDA attention tests share: the CPU reference they compare
// against (kernels/cpu's attention), the device arguments, both with the
// graph's scale 1 / sqrt(head_dim), and f16 KV caches' values.
#ifndef DYNSPARSE_TESTS_CUDA_ATTENTION_TEST_UTIL_H_
#define DYNSPARSE_TESTS_CUDA_ATTENTION_TEST_UTIL_H_

#include <cmath>
#include <cstdint>

#include "absl/types/span.h"
#include "core/graph/backend.h"
#include "core/tensor.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/attention.h"

namespace dynsparse::cuda::testutil {

// q [rows, heads * head_dim] over the cache rows 0..num_keys-1, or over
// `key_positions` (ascending) when it is not empty; f32 [rows, heads *
// head_dim].
inline Tensor CpuAttention(const Tensor& q, const Tensor& k_cache,
                           const Tensor& v_cache, int64_t num_keys,
                           absl::Span<const int32_t> query_positions,
                           absl::Span<const int32_t> key_positions,
                           int64_t heads, int64_t kv_heads, int64_t head_dim) {
  Tensor out = Tensor::Zeros(DType::kF32, {q.dim(0), heads * head_dim});
  AttentionArgs args;
  args.q = &q;
  args.k_cache = &k_cache;
  args.v_cache = &v_cache;
  args.num_keys = num_keys;
  args.query_positions = query_positions;
  args.key_positions = key_positions;
  args.num_heads = heads;
  args.num_kv_heads = kv_heads;
  args.head_dim = head_dim;
  args.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  args.out = &out;
  cpu::Attention(args);
  return out;
}

// A host KV cache as a cache of `dtype` holds it, back in f32: f16 rounds
// each value to nearest (as the kernels' stores and Tensor::ConvertTo do),
// f32 copies. Compute CPU references from the result and upload
// `result.ConvertTo(dtype)`, so both see exactly the same values.
inline Tensor AsStored(const Tensor& host, DType dtype) {
  return Tensor::FromF32(host.ConvertTo(dtype).ToF32Vector(), host.shape());
}

// Device attention over device q, k_cache, v_cache and positions (i32 [rows]),
// which must outlive the result; `out` and the path options are left to the
// caller.
inline DeviceAttentionArgs DeviceArgs(const Tensor& q, const Tensor& k_cache,
                                      const Tensor& v_cache,
                                      const Tensor& positions, int64_t heads,
                                      int64_t kv_heads, int64_t head_dim) {
  DeviceAttentionArgs args;
  args.q = &q;
  args.k_cache = &k_cache;
  args.v_cache = &v_cache;
  args.positions = positions.data<int32_t>();
  args.num_heads = heads;
  args.num_kv_heads = kv_heads;
  args.head_dim = head_dim;
  args.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return args;
}

}  // namespace dynsparse::cuda::testutil

#endif  // DYNSPARSE_TESTS_CUDA_ATTENTION_TEST_UTIL_H_
