#include "services/codec/decision_codec.h"

namespace flowsched::codec {
namespace {

v1::Action ToProto(core::Action action) {
  switch (action) {
    case core::Action::kPlace:
      return v1::ACTION_PLACE;
    case core::Action::kPreempt:
      return v1::ACTION_PREEMPT;
    case core::Action::kMigrate:
      return v1::ACTION_MIGRATE;
    case core::Action::kUnspecified:
      break;
  }
  return v1::ACTION_UNSPECIFIED;
}

core::Action FromProto(v1::Action action) {
  switch (action) {
    case v1::ACTION_PLACE:
      return core::Action::kPlace;
    case v1::ACTION_PREEMPT:
      return core::Action::kPreempt;
    case v1::ACTION_MIGRATE:
      return core::Action::kMigrate;
    default:
      return core::Action::kUnspecified;
  }
}

}  // namespace

void EncodeDecision(const core::Decision& decision,
                    v1::PlacementDecision& out) {
  out.set_task_id(decision.task.value());
  out.set_job_id(decision.job.value());
  out.set_machine_id(decision.machine.value());
  out.set_previous_machine_id(decision.previous.value());
  out.set_action(ToProto(decision.action));
  if (decision.gang_min_members > 0) {
    out.set_gang_job_id(decision.job.value());
    out.set_gang_min_members(decision.gang_min_members);
  }
}

core::Decision DecodeDecision(const v1::PlacementDecision& message) {
  return {
      TaskId(message.task_id()),       JobId(message.job_id()),
      MachineId(message.machine_id()), MachineId(message.previous_machine_id()),
      FromProto(message.action()),     message.gang_min_members()};
}

}  // namespace flowsched::codec
