#include "services/core/decision_builder.h"

#include "absl/strings/str_cat.h"

namespace flowsched::core {
JobId JobOfTask(const flow::FlowNetwork& network, flow::NodeId task) {
  uint64_t job = 0;
  network.ForEachOutArc(task, [&](const flow::ArcView& arc) {
    const flow::NodeData& dst = network.node(arc.dst);
    if (dst.kind == flow::NodeKind::kJobUnscheduled) job = dst.entity_id;
  });
  return JobId(job);
}

std::vector<Decision> BuildDecisions(
    const flow::FlowNetwork& network,
    const std::vector<flow::TaskPlacement>& placements) {
  std::vector<Decision> decisions;
  for (const flow::TaskPlacement& p : placements) {
    if (p.machine_id == p.running_on) continue;
    Decision d;
    d.task = TaskId(p.task_id);
    d.job = JobOfTask(network, p.task_node);
    d.machine = MachineId(p.machine_id);
    d.previous = MachineId(p.running_on);
    if (p.running_on == 0) {
      d.action = Action::kPlace;
    } else if (p.machine_id == 0) {
      d.action = Action::kPreempt;
    } else {
      d.action = Action::kMigrate;
    }
    decisions.push_back(d);
  }
  return decisions;
}

std::string IdempotencyKey(RoundId round_id, TaskId task_id) {
  return absl::StrCat("r", round_id.value(), "/t", task_id.value());
}

}  // namespace flowsched::core
