// A small command-line parser for the dynsparse subcommands: every command
// declares its flags, so an unknown or misspelt flag is an error that lists
// the valid ones (no global flag registry, unlike absl/flags).
#ifndef DYNSPARSE_EXPERIMENTS_CLI_FLAGS_H_
#define DYNSPARSE_EXPERIMENTS_CLI_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

enum class FlagKind { kSwitch, kValue, kRepeated };

// Whether a command takes arguments that are not flags (run's config file,
// report's folders). Where it takes none, a stray word is an error: a
// "VAR=value" meant for the environment must not be dropped silently.
enum class Positional { kNone, kAllowed };

struct FlagSpec {
  std::string name;  // Without the leading "--".
  FlagKind kind = FlagKind::kValue;
  std::string help;
  std::string default_value = "";  // Shown in help; kValue only.
};

class ParsedFlags {
 public:
  bool Has(absl::string_view name) const;
  // The value given, or the spec's default.
  std::string Get(absl::string_view name) const;
  const std::vector<std::string>& GetAll(absl::string_view name) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view name) const;
  absl::StatusOr<double> GetDouble(absl::string_view name) const;
  // Positional arguments (anything not starting with --).
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend absl::StatusOr<ParsedFlags> ParseFlags(
      const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
      Positional positional);
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> defaults_;
  std::vector<std::string> positional_;
};

// Accepts "--name value", "--name=value" and bare "--switch".
absl::StatusOr<ParsedFlags> ParseFlags(
    const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
    Positional positional = Positional::kNone);

// "  --name VALUE   help (default: x)" lines for a command's usage text.
std::string FlagsHelp(const std::vector<FlagSpec>& specs);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_CLI_FLAGS_H_
