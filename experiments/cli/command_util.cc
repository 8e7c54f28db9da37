#include <iostream>

#include "experiments/cli/commands.h"

namespace dynsparse {

int ReportError(const std::string& command, const absl::Status& status) {
  std::cerr << "dynsparse " << command << ": error: " << status.message()
            << "\n";
  return 1;
}

bool WantsHelp(const CommandArgs& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

void PrintCommandHelp(const std::string& command, const std::string& summary,
                      const std::vector<FlagSpec>& specs) {
  std::cerr << "usage: dynsparse " << command << " [flags]\n"
            << summary << "\n\nflags:\n"
            << FlagsHelp(specs);
}

}  // namespace dynsparse
