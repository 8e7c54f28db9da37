// dynsparse bench: latency of a model on a device (experiments/bench).
#include "experiments/bench/bench_cli.h"
#include "experiments/cli/commands.h"
#include "methods/method_args.h"
#include "methods/registry.h"

namespace dynsparse {

int RunBench(const CommandArgs& args) {
  return BenchMain(
      args,
      [](const std::string& name, const std::vector<std::string>& method_args)
          -> absl::StatusOr<std::unique_ptr<Method>> {
        absl::StatusOr<MethodArgs> parsed = MethodArgs::Parse(method_args);
        if (!parsed.ok()) return parsed.status();
        return CreateMethod(name, *parsed);
      });
}

}  // namespace dynsparse
