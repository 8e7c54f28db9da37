// Loads a checkpoint's tensors by name, checking each one's shape against the
// shape the config implies, so a mismatched checkpoint fails at load with the
// tensor and the config fields named instead of misbehaving later.
#ifndef DYNSPARSE_CORE_IO_WEIGHT_FETCH_H_
#define DYNSPARSE_CORE_IO_WEIGHT_FETCH_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/tensor_source.h"
#include "core/tensor.h"

namespace dynsparse {

class WeightFetcher {
 public:
  // Loaded tensors are converted to `dtype`; `source` must outlive this.
  WeightFetcher(const TensorSource& source, DType dtype)
      : source_(&source), dtype_(dtype) {}

  // `why` names the config fields behind `shape`, e.g.
  // "num_key_value_heads=2, head_dim=8", and appears in shape errors.
  absl::StatusOr<Tensor> Get(absl::string_view name, const Shape& shape,
                             absl::string_view why) const;
  // An empty Tensor when the architecture has no such weight.
  absl::StatusOr<Tensor> GetIf(bool present, absl::string_view name,
                               const Shape& shape, absl::string_view why) const;

 private:
  const TensorSource* source_;
  DType dtype_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_WEIGHT_FETCH_H_
