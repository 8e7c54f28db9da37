#include "core/io/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/io/json_util.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxInt64 =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

absl::Status Invalid(absl::string_view prefix, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, ": ", message));
}

std::string Range(uint64_t begin, uint64_t end) {
  return absl::StrCat("[", begin, ",", end, ")");
}

// A JSON integer in [0, 2^63); `field` names it in errors.
absl::StatusOr<uint64_t> NonNegativeInt(const json& value,
                                        absl::string_view prefix,
                                        absl::string_view field) {
  if (value.is_number_unsigned()) {
    const uint64_t n = value.get<uint64_t>();
    if (n > kMaxInt64) {
      return Invalid(prefix, absl::StrCat(field, " is ", n, ", too large"));
    }
    return n;
  }
  if (value.is_number_integer()) {  // Signed: only negatives land here.
    const int64_t n = value.get<int64_t>();
    if (n < 0) {
      return Invalid(prefix,
                     absl::StrCat(field, " is ", n, ", must be non-negative"));
    }
    return static_cast<uint64_t>(n);
  }
  return Invalid(prefix, absl::StrCat(field, " must be an integer, got ",
                                      value.type_name()));
}

absl::StatusOr<StDType> ParseDTypeField(const json& entry,
                                        absl::string_view prefix) {
  auto it = entry.find("dtype");
  if (it == entry.end()) return Invalid(prefix, "field 'dtype' missing");
  if (!it->is_string()) {
    return Invalid(prefix, absl::StrCat("field 'dtype' must be a string, got ",
                                        it->type_name()));
  }
  const std::string& name = it->get_ref<const std::string&>();
  const std::optional<StDType> dtype = ParseStDType(name);
  if (!dtype.has_value()) {
    return Invalid(prefix, absl::StrCat("unknown dtype '", name, "'"));
  }
  return *dtype;
}

absl::StatusOr<Shape> ParseShapeField(const json& entry,
                                      absl::string_view prefix) {
  auto it = entry.find("shape");
  if (it == entry.end()) return Invalid(prefix, "field 'shape' missing");
  if (!it->is_array()) {
    return Invalid(prefix, absl::StrCat("field 'shape' must be an array, got ",
                                        it->type_name()));
  }
  Shape shape;
  for (size_t i = 0; i < it->size(); ++i) {
    ASSIGN_OR_RETURN(
        const uint64_t dim,
        NonNegativeInt((*it)[i], prefix, absl::StrCat("shape[", i, "]")));
    shape.push_back(static_cast<int64_t>(dim));
  }
  return shape;
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> ParseOffsetsField(
    const json& entry, absl::string_view prefix) {
  auto it = entry.find("data_offsets");
  if (it == entry.end()) return Invalid(prefix, "field 'data_offsets' missing");
  if (!it->is_array() || it->size() != 2) {
    return Invalid(prefix,
                   "field 'data_offsets' must be an array of two integers");
  }
  ASSIGN_OR_RETURN(const uint64_t begin,
                   NonNegativeInt((*it)[0], prefix, "data_offsets[0]"));
  ASSIGN_OR_RETURN(const uint64_t end,
                   NonNegativeInt((*it)[1], prefix, "data_offsets[1]"));
  if (begin > end) {
    return Invalid(prefix, absl::StrCat("data_offsets ", Range(begin, end),
                                        " end before they begin"));
  }
  return std::make_pair(begin, end);
}

// Bytes that `shape` of `dtype` occupies, refusing anything that overflows.
absl::StatusOr<uint64_t> ByteSize(const Shape& shape, StDType dtype,
                                  absl::string_view prefix) {
  uint64_t bytes = StDTypeSize(dtype);
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes) ||
        bytes > kMaxInt64) {
      return Invalid(prefix, absl::StrCat("shape ", ShapeToString(shape),
                                          " of ", StDTypeName(dtype),
                                          " overflows a 64-bit byte count"));
    }
  }
  return bytes;
}

absl::StatusOr<SafetensorsEntry> ParseEntry(const json& entry,
                                            uint64_t data_bytes,
                                            absl::string_view prefix) {
  if (!entry.is_object()) {
    return Invalid(prefix, absl::StrCat("entry must be an object, got ",
                                        entry.type_name()));
  }
  SafetensorsEntry out;
  ASSIGN_OR_RETURN(out.dtype, ParseDTypeField(entry, prefix));
  ASSIGN_OR_RETURN(out.shape, ParseShapeField(entry, prefix));
  ASSIGN_OR_RETURN(const auto offsets, ParseOffsetsField(entry, prefix));
  out.begin = offsets.first;
  out.end = offsets.second;
  if (out.end > data_bytes) {
    return absl::OutOfRangeError(
        absl::StrCat(prefix, ": data_offsets ", Range(out.begin, out.end),
                     " exceed data size ", data_bytes, " (truncated file?)"));
  }
  ASSIGN_OR_RETURN(const uint64_t bytes,
                   ByteSize(out.shape, out.dtype, prefix));
  if (bytes != out.end - out.begin) {
    return Invalid(
        prefix,
        absl::StrCat("data_offsets ", Range(out.begin, out.end), " hold ",
                     out.end - out.begin, " bytes but ", StDTypeName(out.dtype),
                     ShapeToString(out.shape), " needs ", bytes));
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseMetadata(
    const json& value, absl::string_view label) {
  const std::string prefix = absl::StrCat(label, ": __metadata__");
  if (!value.is_object()) {
    return Invalid(prefix,
                   absl::StrCat("must be an object, got ", value.type_name()));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      return Invalid(prefix,
                     absl::StrCat("value of '", key, "' must be a string, got ",
                                  item.type_name()));
    }
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

// Tensors may leave gaps but must not share bytes.
absl::Status CheckNoOverlap(const SafetensorsHeader& header,
                            absl::string_view label) {
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> sorted;
  for (const auto& [name, entry] : header.tensors) {
    if (entry.end > entry.begin) sorted.emplace_back(&name, &entry);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second->begin < b.second->begin;
  });
  for (size_t i = 1; i < sorted.size(); ++i) {
    const SafetensorsEntry& prev = *sorted[i - 1].second;
    const SafetensorsEntry& cur = *sorted[i].second;
    if (cur.begin < prev.end) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, ": tensor '", *sorted[i].first, "': data_offsets ",
          Range(cur.begin, cur.end), " overlap tensor '", *sorted[i - 1].first,
          "' at ", Range(prev.begin, prev.end)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(
    absl::string_view json_text, uint64_t data_bytes, absl::string_view label) {
  ASSIGN_OR_RETURN(const json root,
                   ParseJson(json_text, absl::StrCat(label, ": header")));
  if (!root.is_object()) {
    return Invalid(label, absl::StrCat("header must be a JSON object, got ",
                                       root.type_name()));
  }
  SafetensorsHeader header;
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      ASSIGN_OR_RETURN(header.metadata, ParseMetadata(value, label));
      continue;
    }
    const std::string prefix = absl::StrCat(label, ": tensor '", name, "'");
    ASSIGN_OR_RETURN(SafetensorsEntry entry,
                     ParseEntry(value, data_bytes, prefix));
    header.tensor_bytes += entry.end - entry.begin;
    header.tensors.emplace(name, std::move(entry));
  }
  RETURN_IF_ERROR(CheckNoOverlap(header, label));
  return header;
}

}  // namespace dynsparse
