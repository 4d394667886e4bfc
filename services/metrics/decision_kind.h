#pragma once

// The kinds of placement decision, as the `kind` label values of the
// decision counters.

#include <array>
#include <cstddef>
#include <cstdint>

#include "services/core/decision.h"

namespace flowsched::metrics {

enum class DecisionKind : uint8_t { kPlace, kPreempt, kMigrate };
inline constexpr size_t kDecisionKinds = 3;
inline constexpr std::array<const char*, kDecisionKinds> kDecisionKindNames = {
    "place", "preempt", "migrate"};

// The kind a core decision counts as (an unspecified action, which no
// checked decision has, counts as a placement).
inline DecisionKind KindOf(core::Action action) {
  switch (action) {
    case core::Action::kPreempt:
      return DecisionKind::kPreempt;
    case core::Action::kMigrate:
      return DecisionKind::kMigrate;
    default:
      return DecisionKind::kPlace;
  }
}

}  // namespace flowsched::metrics
