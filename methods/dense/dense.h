// The dense method: selects every token, head and neuron. The graph's
// defaults already mean "all", so dense overrides nothing.
#ifndef DYNSPARSE_METHODS_DENSE_DENSE_H_
#define DYNSPARSE_METHODS_DENSE_DENSE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/method.h"
#include "methods/method_args.h"

namespace dynsparse {

class DenseMethod : public Method {
 public:
  static absl::StatusOr<std::unique_ptr<Method>> Create(const MethodArgs& args);

  std::string name() const override { return "dense"; }
  absl::Status Attach(const ModelConfig& config, Backend& backend) override {
    return absl::OkStatus();
  }
  bool KeepsEverything() const override { return true; }
};

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DENSE_DENSE_H_
