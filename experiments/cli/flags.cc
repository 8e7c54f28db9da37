#include "experiments/cli/flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dynsparse {

bool ParsedFlags::Has(absl::string_view name) const {
  return values_.find(name) != values_.end();
}

std::string ParsedFlags::Get(absl::string_view name) const {
  auto it = values_.find(name);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  auto d = defaults_.find(name);
  return d == defaults_.end() ? "" : d->second;
}

const std::vector<std::string>& ParsedFlags::GetAll(
    absl::string_view name) const {
  static const auto* const kEmpty = new std::vector<std::string>();
  auto it = values_.find(name);
  return it == values_.end() ? *kEmpty : it->second;
}

absl::StatusOr<int64_t> ParsedFlags::GetInt(absl::string_view name) const {
  const std::string text = Get(name);
  int64_t value;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": '", text, "' is not an integer"));
  }
  return value;
}

absl::StatusOr<double> ParsedFlags::GetDouble(absl::string_view name) const {
  const std::string text = Get(name);
  double value;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": '", text, "' is not a number"));
  }
  return value;
}

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::vector<FlagSpec>& specs,
                                       Positional positional) {
  ParsedFlags parsed;
  for (const FlagSpec& spec : specs) {
    if (spec.kind == FlagKind::kValue) {
      parsed.defaults_[spec.name] = spec.default_value;
    }
  }
  auto find = [&](absl::string_view name) -> const FlagSpec* {
    for (const FlagSpec& spec : specs) {
      if (spec.name == name) return &spec;
    }
    return nullptr;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (positional == Positional::kNone) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unexpected argument '", arg,
            "': this command takes only --flags (environment variables go "
            "before the program name)"));
      }
      parsed.positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_inline_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline_value = true;
    }
    const FlagSpec* spec = find(name);
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const FlagSpec& s : specs) names.push_back("--" + s.name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name,
                       " (valid: ", absl::StrJoin(names, ", "), ")"));
    }
    if (spec->kind == FlagKind::kSwitch) {
      if (has_inline_value) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " takes no value"));
      }
      parsed.values_[name].push_back("true");
      continue;
    }
    if (!has_inline_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value"));
      }
      value = args[++i];
    }
    auto& slot = parsed.values_[name];
    if (spec->kind == FlagKind::kValue && !slot.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " given more than once"));
    }
    slot.push_back(value);
  }
  return parsed;
}

std::string FlagsHelp(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const FlagSpec& spec : specs) {
    std::string left = "--" + spec.name;
    if (spec.kind != FlagKind::kSwitch) left += " VALUE";
    std::string help = spec.help;
    if (spec.kind == FlagKind::kValue && !spec.default_value.empty()) {
      absl::StrAppend(&help, " (default: ", spec.default_value, ")");
    }
    if (spec.kind == FlagKind::kRepeated)
      absl::StrAppend(&help, " (repeatable)");
    absl::StrAppendFormat(&out, "  %-26s %s\n", left, help);
  }
  return out;
}

}  // namespace dynsparse
