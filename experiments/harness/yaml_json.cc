#include "experiments/harness/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <regex>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "datasets/text_file.h"

namespace dynsparse {
namespace {

using nlohmann::json;

// YAML 1.2 core schema resolution of a plain (unquoted) scalar.
json ResolvePlainScalar(const std::string& s) {
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat(
      "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    return nullptr;
  }
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (std::regex_match(s, kInt)) {
    try {
      return static_cast<int64_t>(std::stoll(s));
    } catch (const std::exception&) {
      return s;  // Out of range: keep the text rather than lose digits.
    }
  }
  if (std::regex_match(s, kFloat)) {
    try {
      return std::stod(s);
    } catch (const std::exception&) {
      return s;
    }
  }
  if (s == ".inf" || s == "+.inf" || s == ".Inf" || s == "+.Inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (s == "-.inf" || s == "-.Inf") {
    return -std::numeric_limits<double>::infinity();
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return s;
}

absl::Status Where(const YAML::Node& node, const std::string& source,
                   const std::string& message) {
  const YAML::Mark mark = node.Mark();
  return absl::InvalidArgumentError(absl::StrCat(
      source, ":", mark.line + 1, ":", mark.column + 1, ": ", message));
}

// Configs are small; aliases could expand a few bytes into billions of
// nodes ("billion laughs"), so the conversion counts what it builds.
constexpr int64_t kMaxNodes = 100'000;

absl::StatusOr<json> Convert(const YAML::Node& node, const std::string& source,
                             const std::string& path, int depth,
                             int64_t& nodes) {
  // Deep nesting is never a real config; stop it before the stack does.
  if (depth > 64) return Where(node, source, "nesting deeper than 64 levels");
  if (++nodes > kMaxNodes) {
    return Where(
        node, source,
        absl::StrCat("more than ", kMaxNodes, " values (aliases expanding?)"));
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return json(nullptr);
    case YAML::NodeType::Scalar:
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
        return json(node.Scalar());
      }
      return ResolvePlainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      json out = json::array();
      size_t i = 0;
      for (const YAML::Node& item : node) {
        ASSIGN_OR_RETURN(json v, Convert(item, source, IndexYamlPath(path, i),
                                         depth + 1, nodes));
        out.push_back(std::move(v));
        ++i;
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return Where(kv.first, source,
                       absl::StrCat(path.empty() ? "(top level)" : path,
                                    ": mapping keys must be plain strings"));
        }
        const std::string key = kv.first.Scalar();
        const std::string child = JoinYamlPath(path, key);
        if (out.contains(key)) {
          return Where(kv.first, source,
                       absl::StrCat(child, ": duplicate key '", key, "'"));
        }
        ASSIGN_OR_RETURN(json v,
                         Convert(kv.second, source, child, depth + 1, nodes));
        out[key] = std::move(v);
      }
      return out;
    }
  }
  return json(nullptr);
}

// True when a plain scalar `s` would not read back as the string `s`.
bool NeedsQuotes(const std::string& s) {
  if (!ResolvePlainScalar(s).is_string()) return true;
  if (s.find_first_of(":#{}[],&*!|>'\"%@`\n\t") != std::string::npos) {
    return true;
  }
  return s.front() == ' ' || s.back() == ' ' || s.front() == '-' ||
         s.front() == '?';
}

void Emit(const json& value, YAML::Emitter& out) {
  switch (value.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, v] : value.items()) {
        out << YAML::Key;
        if (NeedsQuotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(v, out);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array: {
      // Lists of scalars read best inline: mlp_keep: [0.5, 0.25].
      bool flat = true;
      for (const json& v : value) flat = flat && v.is_primitive();
      if (flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const json& v : value) Emit(v, out);
      out << YAML::EndSeq;
      break;
    }
    case json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      if (s.empty() || NeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case json::value_t::null:
      out << YAML::Null;
      break;
    case json::value_t::number_float: {
      const double d = value.get<double>();
      if (std::isnan(d)) {
        out << ".nan";
      } else if (std::isinf(d)) {
        out << (d > 0 ? ".inf" : "-.inf");
      } else {
        std::string text = value.dump();
        // JSON prints 1.0 as "1.0"; keep a float a float when read back.
        if (text.find_first_of(".eE") == std::string::npos) text += ".0";
        out << text;
      }
      break;
    }
    default:  // Integers and booleans print the same in JSON and YAML.
      out << value.dump();
      break;
  }
}

}  // namespace

std::string JoinYamlPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : absl::StrCat(parent, ".", key);
}

std::string IndexYamlPath(const std::string& parent, size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

std::string JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "a mapping";
    case json::value_t::array:
      return "a list";
    case json::value_t::string:
      return absl::StrCat("the string '", value.get<std::string>(), "'");
    case json::value_t::boolean:
      return absl::StrCat("the boolean ", value.dump());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return absl::StrCat("the integer ", value.dump());
    case json::value_t::number_float:
      return absl::StrCat("the number ", value.dump());
    case json::value_t::null:
      return "null";
    default:
      return "an unsupported value";
  }
}

absl::StatusOr<nlohmann::json> ParseYaml(const std::string& text,
                                         const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1,
                     ": YAML syntax error: ", e.msg));
  }
  try {
    int64_t nodes = 0;
    return Convert(root, source, "", 0, nodes);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": YAML error: ", e.what()));
  }
}

absl::StatusOr<nlohmann::json> ReadYamlFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text,
                   ReadTextFile(path, int64_t{4} << 20));
  return ParseYaml(text, path);
}

std::string ToYaml(const nlohmann::json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(value, out);
  return std::string(out.c_str()) + "\n";
}

}  // namespace dynsparse
