#include "services/flow/terms/machine_order_term.h"

#include <algorithm>

namespace flowsched::flow {

bool MachineOrderTerm::Prepare(const cluster::ClusterState& state) {
  const auto& machines = state.machines();
  if (machines.size() == order_.size() &&
      std::equal(
          order_.begin(), order_.end(), machines.begin(),
          [](MachineId id, const auto& entry) { return id == entry.first; })) {
    return false;
  }
  order_.clear();
  step_.clear();
  const auto count = static_cast<int64_t>(machines.size());
  int64_t index = 0;
  for (const auto& entry : machines) {
    order_.push_back(entry.first);
    step_[entry.first] = index++ * kSteps / count;
  }
  return true;
}

double MachineOrderTerm::Value(const cluster::Machine& machine,
                               const RequestShape& shape, int64_t k) const {
  (void)shape;
  (void)k;
  const auto step = step_.find(machine.id);
  return step == step_.end()
             ? 0.0
             : static_cast<double>(step->second) / static_cast<double>(kSteps);
}

}  // namespace flowsched::flow
