// CombinedMethod::Create: both sides from the method registry (kept apart
// from combined.cc, whose class takes any two methods: the bench's
// combined-timing composes one side the registry does not have).
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "methods/combined/combined.h"
#include "methods/registry.h"

namespace dynsparse {
namespace {

// One side: its method name and its parameters with the prefix removed.
absl::StatusOr<std::unique_ptr<Method>> CreateSide(const MethodArgs& args,
                                                   const std::string& side) {
  const std::string name = args.GetString(side, "dense");
  if (name == "combined") {
    return absl::InvalidArgumentError(
        absl::StrCat("combined: ", side, "=combined would nest compositions"));
  }
  auto method = CreateMethod(name, CombinedMethod::SideArgs(args, side));
  if (!method.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("combined ", side, ": ", method.status().message()));
  }
  return method;
}

}  // namespace

const std::vector<std::string>& CombinedMethod::Parameters() {
  static const auto* const kParameters = new std::vector<std::string>{
      "token", "head_neuron", "token.*", "head_neuron.*"};
  return *kParameters;
}

absl::StatusOr<std::unique_ptr<Method>> CombinedMethod::Create(
    const MethodArgs& args) {
  auto tokens = CreateSide(args, "token");
  if (!tokens.ok()) return tokens.status();
  auto head_neuron = CreateSide(args, "head_neuron");
  if (!head_neuron.ok()) return head_neuron.status();
  if ((*head_neuron)->SelectsTokens()) {
    return absl::InvalidArgumentError(
        absl::StrCat("combined: head_neuron=", (*head_neuron)->name(),
                     " prunes tokens; put it on the token side"));
  }
  return std::make_unique<CombinedMethod>(*std::move(tokens),
                                          *std::move(head_neuron));
}

}  // namespace dynsparse
