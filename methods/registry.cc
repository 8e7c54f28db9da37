#include "methods/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "methods/combined/combined.h"
#include "methods/dejavu/dejavu_method.h"
#include "methods/dejavu/dejavu_options.h"
#include "methods/dense/dense.h"
#include "methods/lazyllm/lazyllm.h"

namespace dynsparse {

const std::vector<MethodInfo>& MethodRegistry() {
  static const auto* const kMethods = new std::vector<MethodInfo>{
      {"dense",
       "every token, head and neuron (the baseline)",
       {},
       &DenseMethod::Create},
      {"dejavu",
       "contextual sparsity: predicted (or oracle/random) MLP neurons and "
       "heads per token (docs/dejavu.md)",
       DejavuParameterNames(), &DejavuMethod::Create},
      {"lazyllm",
       "LazyLLM token pruning with Aux Cache revival (schedule or stages+keep)",
       LazyLlmMethod::Parameters(), &LazyLlmMethod::Create},
      {"combined",
       "a token policy and a head/neuron policy composed (token=, "
       "head_neuron=, token.*, head_neuron.*)",
       CombinedMethod::Parameters(), &CombinedMethod::Create},
  };
  return *kMethods;
}

absl::StatusOr<std::unique_ptr<Method>> CreateMethod(absl::string_view name,
                                                     const MethodArgs& args) {
  std::vector<std::string> names;
  for (const MethodInfo& info : MethodRegistry()) {
    if (info.name == name) {
      auto method = info.create(args);
      if (!method.ok()) return method.status();
      if (absl::Status s = args.CheckAllUsed(name, info.parameters); !s.ok()) {
        return s;
      }
      return method;
    }
    names.push_back(info.name);
  }
  return absl::NotFoundError(absl::StrCat(
      "unknown method '", name, "' (valid: ", absl::StrJoin(names, ", "), ")"));
}

}  // namespace dynsparse
