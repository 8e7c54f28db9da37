// dynsparse: the command-line entry point.
#include <iostream>
#include <string>
#include <vector>

#include "experiments/cli/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const dynsparse::CommandArgs&);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"inspect", dynsparse::RunInspect,
     "family, dimensions, parameters, dtype and bytes of a model"},
    {"generate", dynsparse::RunGenerate,
     "continue a prompt (greedy or sampled)"},
    {"perplexity", dynsparse::RunPerplexity,
     "sliding-window token perplexity of a text file or corpus"},
    {"tokenize", dynsparse::RunTokenize, "token ids of a text file"},
    {"bench", dynsparse::RunBench,
     "time to first token and decode ms/token vs the bandwidth floor"},
    {"run", dynsparse::RunRun,
     "run a YAML experiment config (sweeps, resumable, sharded)"},
    {"report", dynsparse::RunReport,
     "merge run folders into tables (md/csv/tex) and SVG plots"},
    {"calibrate", dynsparse::RunCalibrate,
     "DejaVu: record predictor inputs/labels, --train the predictors"},
    {"profile", dynsparse::RunProfile,
     "DejaVu: per-layer sparsity and predictor recall (K for 95/99%)"},
};

void PrintUsage() {
  std::cerr << "usage: dynsparse COMMAND [flags]   (dynsparse COMMAND --help)\n"
               "commands:\n";
  for (const Command& c : kCommands) {
    std::cerr << "  " << c.name
              << std::string(12 - std::string(c.name).size(), ' ') << c.summary
              << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" ||
      std::string(argv[1]) == "help") {
    PrintUsage();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  const dynsparse::CommandArgs args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run(args);
  }
  std::cerr << "dynsparse: unknown command '" << name << "'\n";
  PrintUsage();
  return 2;
}
