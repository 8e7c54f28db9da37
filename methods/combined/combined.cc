#include "methods/combined/combined.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"

namespace dynsparse {
MethodArgs CombinedMethod::SideArgs(const MethodArgs& args,
                                    const std::string& side) {
  MethodArgs sub;
  const std::string prefix = side + ".";
  for (const auto& [key, value] : args.items()) {
    if (absl::StartsWith(key, prefix)) {
      sub.Set(key.substr(prefix.size()), args.GetString(key, value));
    }
  }
  return sub;
}

CombinedMethod::CombinedMethod(std::unique_ptr<Method> tokens,
                               std::unique_ptr<Method> head_neuron)
    : tokens_(std::move(tokens)), head_neuron_(std::move(head_neuron)) {}

absl::Status CombinedMethod::Attach(const ModelConfig& config,
                                    Backend& backend) {
  if (absl::Status s = tokens_->Attach(config, backend); !s.ok()) return s;
  return head_neuron_->Attach(config, backend);
}

void CombinedMethod::BeginSequence() {
  tokens_->BeginSequence();
  head_neuron_->BeginSequence();
}

}  // namespace dynsparse
