// Early-return helpers for absl::Status / absl::StatusOr at file and user-input
// boundaries. Debian's Abseil (20220623) ships neither these nor absl/log.
#ifndef DYNSPARSE_CORE_STATUS_MACROS_H_
#define DYNSPARSE_CORE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DS_STATUS_CONCAT_INNER(a, b) a##b
#define DS_STATUS_CONCAT(a, b) DS_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    const absl::Status ds_status_ = (expr);  \
    if (!ds_status_.ok()) return ds_status_; \
  } while (0)

// ASSIGN_OR_RETURN(auto x, MakeX()); assigns the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  DS_ASSIGN_OR_RETURN_IMPL(DS_STATUS_CONCAT(ds_statusor_, __LINE__), lhs, expr)
#define DS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()

#endif  // DYNSPARSE_CORE_STATUS_MACROS_H_
