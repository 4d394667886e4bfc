#pragma once

// Early-return helpers for absl::Status, which the packaged Abseil 20220623
// does not ship yet.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FLOWSCHED_CONCAT_INNER(a, b) a##b
#define FLOWSCHED_CONCAT(a, b) FLOWSCHED_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is not OK.
#define FLOWSCHED_RETURN_IF_ERROR(expr)        \
  do {                                         \
    ::absl::Status flowsched_status_ = (expr); \
    if (!flowsched_status_.ok()) {             \
      return flowsched_status_;                \
    }                                          \
  } while (false)

// FLOWSCHED_ASSIGN_OR_RETURN(auto x, MakeX()); assigns the value of a
// StatusOr or returns its status.
#define FLOWSCHED_ASSIGN_OR_RETURN(lhs, expr) \
  FLOWSCHED_ASSIGN_OR_RETURN_IMPL(            \
      FLOWSCHED_CONCAT(flowsched_statusor_, __LINE__), lhs, expr)
#define FLOWSCHED_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) {                                      \
    return std::move(statusor).status();                     \
  }                                                          \
  lhs = std::move(statusor).value()
