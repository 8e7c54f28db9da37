// dynsparse_bench: `dynsparse bench` as its own binary for the standalone
// GPU build (kernels/cuda/standalone), which has no method registry: the
// dense method (every unit of every row), the bench-only dejavu-timing
// method (lowrank_predictor_method.h) and lazyllm (its sources need only
// core/graph) are available there.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/bench/bench_cli.h"
#include "experiments/bench/lowrank_predictor_method.h"
#include "methods/lazyllm/lazyllm.h"

namespace {

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
        if (name == "lazyllm") {
          auto args = dynsparse::MethodArgs::Parse(a);
          if (!args.ok()) return args.status();
          auto method = dynsparse::LazyLlmMethod::Create(*args);
          if (!method.ok()) return method.status();
          if (absl::Status s = args->CheckAllUsed(
                  name, dynsparse::LazyLlmMethod::Parameters());
              !s.ok()) {
            return s;
          }
          return method;
        }
        if (name == "dejavu-timing") {
          return dynsparse::LowRankPredictorMethod::Create(a);
        }
        if (name != "dense" || !a.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--method ", name,
                           ": this standalone binary has only 'dense', "
                           "'dejavu-timing' and 'lazyllm' (use dynsparse "
                           "bench for the registry)"));
        }
        return std::make_unique<Dense>();
      });
}
