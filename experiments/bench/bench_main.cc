// dynsparse-bench: `dynsparse bench` as its own binary for the standalone
// GPU build (kernels/cuda/standalone). Every registry method (dense, dejavu,
// lazyllm, combined) is available, plus two bench-only methods that do the
// same device work without predictor files: dejavu-timing
// (lowrank_predictor_method.h) and combined-timing (lazyllm on the token
// side, dejavu-timing on the head/neuron side: `token.<arg>` /
// `head_neuron.<arg>`).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/bench/bench_cli.h"
#include "experiments/bench/lowrank_predictor_method.h"
#include "methods/combined/combined.h"
#include "methods/registry.h"

namespace {

absl::StatusOr<std::unique_ptr<dynsparse::Method>> CreateCombinedTiming(
    const dynsparse::MethodArgs& args) {
  for (const auto& [key, value] : args.items()) {
    if (key.rfind("token.", 0) != 0 && key.rfind("head_neuron.", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("combined-timing: parameter '", key,
                       "' must start with token. or head_neuron."));
    }
  }
  auto tokens = dynsparse::CreateMethod(
      "lazyllm", dynsparse::CombinedMethod::SideArgs(args, "token"));
  if (!tokens.ok()) return tokens.status();
  // A named copy: ranging over a temporary's items() would dangle.
  const dynsparse::MethodArgs head_neuron_args =
      dynsparse::CombinedMethod::SideArgs(args, "head_neuron");
  std::vector<std::string> items;
  for (const auto& [key, value] : head_neuron_args.items()) {
    items.push_back(absl::StrCat(key, "=", value));
  }
  auto head_neuron = dynsparse::LowRankPredictorMethod::Create(items);
  if (!head_neuron.ok()) return head_neuron.status();
  return std::make_unique<dynsparse::CombinedMethod>(*std::move(tokens),
                                                     *std::move(head_neuron));
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return dynsparse::BenchMain(
      args,
      [](const std::string& name, const std::vector<std::string>& a)
          -> absl::StatusOr<std::unique_ptr<dynsparse::Method>> {
        if (name == "dejavu-timing") {
          return dynsparse::LowRankPredictorMethod::Create(a);
        }
        auto parsed = dynsparse::MethodArgs::Parse(a);
        if (!parsed.ok()) return parsed.status();
        if (name == "combined-timing") return CreateCombinedTiming(*parsed);
        auto method = dynsparse::CreateMethod(name, *parsed);
        if (absl::IsNotFound(method.status())) {
          return absl::NotFoundError(
              absl::StrCat(method.status().message(),
                           "; bench-only: dejavu-timing, combined-timing"));
        }
        return method;
      });
}
