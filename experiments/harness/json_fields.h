// Non-throwing field access for results lines read back from disk: a file
// edited by hand (or a NaN written as null) must not turn into a JSON
// type_error exception. A missing or mistyped field reads as the fallback.
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_JSON_FIELDS_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_JSON_FIELDS_H_

#include <cstdint>
#include <limits>
#include <string>

#include "nlohmann/json.hpp"

namespace dynsparse {

inline std::string StrField(const nlohmann::json& j, const char* key,
                            const std::string& fallback = "") {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

inline int64_t IntField(const nlohmann::json& j, const char* key,
                        int64_t fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>()
                                                  : fallback;
}

// JSON has no NaN: a NaN value is written as null and reads back as NaN.
inline double NumField(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::numeric_limits<double>::quiet_NaN();
  auto it = j.find(key);
  return it != j.end() && it->is_number()
             ? it->get<double>()
             : std::numeric_limits<double>::quiet_NaN();
}

inline nlohmann::json ObjField(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nlohmann::json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : nlohmann::json::object();
}

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_JSON_FIELDS_H_
