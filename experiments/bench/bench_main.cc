// dynsparse_bench: `dynsparse bench` as its own binary for the standalone
// GPU build (kernels/cuda/standalone), which has no method registry: the
// dense method (every unit of every row), the bench-only dejavu-timing
// method (lowrank_predictor_method.h), lazyllm (its sources need only
// core/graph) and combined-timing (lazyllm on the token side, dejavu-timing on
// the head/neuron side: `token.<arg>` / `head_neuron.<arg>`) are available.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/bench/bench_cli.h"
#include "experiments/bench/lowrank_predictor_method.h"
#include "methods/combined/combined.h"
#include "methods/lazyllm/lazyllm.h"

namespace {

absl::StatusOr<std::unique_ptr<dynsparse::Method>> CreateLazyLlm(
    const dynsparse::MethodArgs& args) {
  auto method = dynsparse::LazyLlmMethod::Create(args);
  if (!method.ok()) return method.status();
  if (absl::Status s =
          args.CheckAllUsed("lazyllm", dynsparse::LazyLlmMethod::Parameters());
      !s.ok()) {
    return s;
  }
  return method;
}

absl::StatusOr<std::unique_ptr<dynsparse::Method>> CreateCombinedTiming(
    const dynsparse::MethodArgs& args) {
  for (const auto& [key, value] : args.items()) {
    if (key.rfind("token.", 0) != 0 && key.rfind("head_neuron.", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("combined-timing: parameter '", key,
                       "' must start with token. or head_neuron."));
    }
  }
  auto tokens =
      CreateLazyLlm(dynsparse::CombinedMethod::SideArgs(args, "token"));
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

class Dense : public dynsparse::Method {
 public:
  std::string name() const override { return "dense"; }
  absl::Status Attach(const dynsparse::ModelConfig&,
                      dynsparse::Backend&) override {
    return absl::OkStatus();
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return dynsparse::BenchMain(
      args,
      [](const std::string& name, const std::vector<std::string>& a)
          -> absl::StatusOr<std::unique_ptr<dynsparse::Method>> {
        if (name == "lazyllm" || name == "combined-timing") {
          auto args = dynsparse::MethodArgs::Parse(a);
          if (!args.ok()) return args.status();
          return name == "lazyllm" ? CreateLazyLlm(*args)
                                   : CreateCombinedTiming(*args);
        }
        if (name == "dejavu-timing") {
          return dynsparse::LowRankPredictorMethod::Create(a);
        }
        if (name != "dense" || !a.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--method ", name,
                           ": this standalone binary has only 'dense', "
                           "'dejavu-timing', 'lazyllm' and 'combined-timing' "
                           "(use dynsparse "
                           "bench for the registry)"));
        }
        return std::make_unique<Dense>();
      });
}
