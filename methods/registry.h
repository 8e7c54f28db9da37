// The registry of methods: one explicit table (registry.cc) of every method
// dynsparse knows. Adding a method = one folder + one line in that table.
#ifndef DYNSPARSE_METHODS_REGISTRY_H_
#define DYNSPARSE_METHODS_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/method.h"
#include "methods/method_args.h"

namespace dynsparse {

struct MethodInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> parameters;  // Valid MethodArgs keys.
  std::function<absl::StatusOr<std::unique_ptr<Method>>(const MethodArgs&)>
      create;
};

const std::vector<MethodInfo>& MethodRegistry();

// Creates the named method; unknown names and bad parameters are errors that
// list the valid choices.
absl::StatusOr<std::unique_ptr<Method>> CreateMethod(absl::string_view name,
                                                     const MethodArgs& args);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_REGISTRY_H_
