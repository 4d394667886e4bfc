#pragma once

// The kinds of placement decision, as the `kind` label values of the
// decision counters.

#include <array>
#include <cstddef>
#include <cstdint>

namespace flowsched::metrics {

enum class DecisionKind : uint8_t { kPlace, kPreempt, kMigrate };
inline constexpr size_t kDecisionKinds = 3;
inline constexpr std::array<const char*, kDecisionKinds> kDecisionKindNames = {
    "place", "preempt", "migrate"};

}  // namespace flowsched::metrics
