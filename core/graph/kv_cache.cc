#include "core/graph/kv_cache.h"

namespace dynsparse {

KvCache::KvCache(const ModelConfig& config, int64_t capacity, DType dtype,
                 Backend& backend)
    : capacity_(capacity) {
  keys_.reserve(config.num_layers);
  values_.reserve(config.num_layers);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    keys_.push_back(backend.Allocate(dtype, {capacity, config.kv_dim()}));
    values_.push_back(backend.Allocate(dtype, {capacity, config.kv_dim()}));
  }
}

int64_t KvCache::bytes() const {
  int64_t total = 0;
  for (const Tensor& t : keys_) total += t.bytes();
  for (const Tensor& t : values_) total += t.bytes();
  return total;
}

}  // namespace dynsparse
