#include "core/io/json_util.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

using json = nlohmann::json;

// A validating pass that records the first syntax error and stops at
// excessive depth; the DOM parse only runs on text that passed it.
class CheckingSax : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool key(string_t&) override { return true; }
  bool start_object(std::size_t) override { return Enter(); }
  bool end_object() override { return Leave(); }
  bool start_array(std::size_t) override { return Enter(); }
  bool end_array() override { return Leave(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) override {
    error_ = absl::StrCat(error.what(), " (byte ", position, ")");
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  bool Enter() {
    if (++depth_ <= kMaxJsonDepth) return true;
    error_ = absl::StrCat("nesting deeper than ", kMaxJsonDepth, " levels");
    return false;
  }
  bool Leave() {
    --depth_;
    return true;
  }

  int depth_ = 0;
  std::string error_;
};

}  // namespace

absl::StatusOr<json> ParseJson(absl::string_view text,
                               absl::string_view label) {
  CheckingSax checker;
  const bool ok = json::sax_parse(text.begin(), text.end(), &checker);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": invalid JSON: ",
        checker.error().empty() ? "parse failed" : checker.error()));
  }
  json value = json::parse(text.begin(), text.end(), nullptr,
                           /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": invalid JSON"));
  }
  return value;
}

}  // namespace dynsparse
