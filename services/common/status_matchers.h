#pragma once

// gtest matchers for absl::Status, which the packaged Abseil lacks.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace flowsched::testing {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << status.ToString();
  return status.ok();
}

// Matches a status with the given code whose message contains `substring`.
MATCHER_P2(StatusIs, code, substring, "") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << status.ToString();
  return status.code() == code &&
         std::string(status.message()).find(substring) != std::string::npos;
}

}  // namespace flowsched::testing
