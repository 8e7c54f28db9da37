#include "core/io/weight_fetch.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dynsparse {

absl::StatusOr<Tensor> WeightFetcher::Get(absl::string_view name,
                                          const Shape& shape,
                                          absl::string_view why) const {
  const SafetensorsEntry* entry = source_->Find(name);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        source_->label(), ": tensor '", name, "': missing (expected shape ",
        ShapeToString(shape), " from ", why, ")"));
  }
  if (entry->shape != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_->PathOf(name), ": tensor '", name, "': shape ",
                     ShapeToString(entry->shape), ", expected ",
                     ShapeToString(shape), " (", why, ")"));
  }
  return source_->Load(name, dtype_);
}

absl::StatusOr<Tensor> WeightFetcher::GetIf(bool present,
                                            absl::string_view name,
                                            const Shape& shape,
                                            absl::string_view why) const {
  if (!present) return Tensor();
  return Get(name, shape, why);
}

}  // namespace dynsparse
