// The dynsparse subcommands. Each takes the arguments after its name and
// returns the process exit code; --json output goes to stdout, everything a
// person reads goes to stderr.
#ifndef DYNSPARSE_EXPERIMENTS_CLI_COMMANDS_H_
#define DYNSPARSE_EXPERIMENTS_CLI_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "experiments/cli/flags.h"
#include "experiments/harness/sweep.h"

namespace dynsparse {

using CommandArgs = std::vector<std::string>;

int RunInspect(const CommandArgs& args);
int RunTokenize(const CommandArgs& args);
int RunGenerate(const CommandArgs& args);
int RunPerplexity(const CommandArgs& args);
int RunBench(const CommandArgs& args);
int RunRun(const CommandArgs& args);
int RunReport(const CommandArgs& args);
int RunCalibrate(const CommandArgs& args);
int RunProfile(const CommandArgs& args);

// The step `dynsparse run` takes before each job: a dejavu job whose
// predictors=DIR has no predictors.json yet gets them calibrated and trained
// (calibrate_command.cc); other jobs pass through.
absl::Status PrepareDejavuJob(const Job& job, std::ostream& log);

// Prints "dynsparse COMMAND: error: MESSAGE" on stderr and returns 1.
int ReportError(const std::string& command, const absl::Status& status);

// True when args ask for --help; PrintCommandHelp then shows the flags.
bool WantsHelp(const CommandArgs& args);
void PrintCommandHelp(const std::string& command, const std::string& summary,
                      const std::vector<FlagSpec>& specs);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_CLI_COMMANDS_H_
