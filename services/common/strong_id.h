#pragma once

// Strongly typed integer ids so a TaskId cannot be passed where a MachineId
// is expected (Redpanda's named_type).

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace flowsched {

template <typename T, typename Tag>
class StrongId {
 public:
  using value_type = T;
  constexpr StrongId() = default;
  constexpr explicit StrongId(T value) : value_(value) {}
  [[nodiscard]] constexpr T value() const { return value_; }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  T value_{};
};

template <typename T, typename Tag>
std::ostream& operator<<(std::ostream& os, StrongId<T, Tag> id) {
  return os << id.value();
}

using JobId = StrongId<uint64_t, struct JobIdTag>;
using TaskId = StrongId<uint64_t, struct TaskIdTag>;
using MachineId = StrongId<uint64_t, struct MachineIdTag>;
// A solver round, numbered by the graph manager that cut it.
using RoundId = StrongId<uint64_t, struct RoundIdTag>;
// A graph manager instance's epoch: claimed at every start, above every
// epoch the ledger carried; rounds and ledger records carry it.
using GraphEpoch = StrongId<uint64_t, struct GraphEpochTag>;
// A solver worker instance's epoch: taken at its start, carried by every
// record it publishes; the graph manager addresses rounds to one
// (SolverRound.solver_epoch) and applies that one's answers only.
using WorkerEpoch = StrongId<uint64_t, struct WorkerEpochTag>;

}  // namespace flowsched

template <typename T, typename Tag>
struct std::hash<flowsched::StrongId<T, Tag>> {
  size_t operator()(flowsched::StrongId<T, Tag> id) const noexcept {
    return std::hash<T>()(id.value());
  }
};
