#include "methods/dense/dense.h"

namespace dynsparse {

absl::StatusOr<std::unique_ptr<Method>> DenseMethod::Create(
    const MethodArgs& args) {
  return std::make_unique<DenseMethod>();
}

}  // namespace dynsparse
