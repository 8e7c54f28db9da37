// The `dynsparse bench` command line: flags, model + backend setup, and the
// JSON or table it prints. Lives beside the benchmark (not in cli/) so the
// standalone GPU build (kernels/cuda/standalone) can link it into its own
// `dynsparse_bench` binary without the rest of the CLI.
#ifndef DYNSPARSE_EXPERIMENTS_BENCH_BENCH_CLI_H_
#define DYNSPARSE_EXPERIMENTS_BENCH_BENCH_CLI_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/method.h"

namespace dynsparse {

// Builds the --method with its --method-arg key=value list.
using MethodFactory = std::function<absl::StatusOr<std::unique_ptr<Method>>(
    const std::string& name, const std::vector<std::string>& args)>;

// Runs `bench` with the arguments after the command name; returns the exit
// code (errors go to stderr as "dynsparse bench: error: ...").
int BenchMain(const std::vector<std::string>& args,
              const MethodFactory& methods);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_BENCH_BENCH_CLI_H_
