// KvCache: per-layer keys and values of one sequence, stored at each token's
// position (row p holds position p), on the backend's device.
#ifndef DYNSPARSE_CORE_GRAPH_KV_CACHE_H_
#define DYNSPARSE_CORE_GRAPH_KV_CACHE_H_

#include <cstdint>
#include <vector>

#include "core/graph/backend.h"
#include "core/model_config.h"
#include "core/tensor.h"

namespace dynsparse {

class KvCache {
 public:
  // Allocates [capacity, kv_dim] keys and values of `dtype` (f32, or f16
  // where the backend's KvCacheDtype says so) for every layer.
  KvCache(const ModelConfig& config, int64_t capacity, DType dtype,
          Backend& backend);

  int64_t capacity() const { return capacity_; }
  // Positions [0, length) hold valid entries in every layer.
  int64_t length() const { return length_; }
  void set_length(int64_t length) { length_ = length; }

  Tensor& keys(int64_t layer) { return keys_[layer]; }
  Tensor& values(int64_t layer) { return values_[layer]; }
  const Tensor& keys(int64_t layer) const { return keys_[layer]; }
  const Tensor& values(int64_t layer) const { return values_[layer]; }
  int64_t bytes() const;

 private:
  int64_t capacity_;
  int64_t length_ = 0;
  std::vector<Tensor> keys_;
  std::vector<Tensor> values_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_KV_CACHE_H_
