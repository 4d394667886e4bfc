#include "services/cluster/event_decoder.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "flowsched/v1/events.pb.h"
#include "services/common/status_macros.h"

namespace flowsched::cluster {
namespace {

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

absl::Status CheckString(absl::string_view field, const std::string& value,
                         const ValidationLimits& limits) {
  if (value.size() > limits.max_string_bytes) {
    return Invalid(absl::StrCat(field, " is ", value.size(),
                                " bytes; the limit is ",
                                limits.max_string_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t max) {
  if (value < 0 || value > max) {
    return Invalid(
        absl::StrCat(field, " = ", value, " is outside [0, ", max, "]"));
  }
  return absl::OkStatus();
}

// Names a scalar may not take: they are the fixed dimensions' names in
// FitTask's reasons, which `explain` counts.
bool ReservedScalarName(const std::string& name) {
  return name == "cpu" || name == "memory" || name == "network" ||
         name == "slots";
}

absl::Status DecodeScalars(
    absl::string_view field,
    const google::protobuf::Map<std::string, int64_t>& scalars,
    const ValidationLimits& limits, ScalarResources& out) {
  if (static_cast<uint64_t>(scalars.size()) > limits.max_named_resources) {
    return Invalid(absl::StrCat(field, " has ", scalars.size(),
                                " named resources; the limit is ",
                                limits.max_named_resources));
  }
  for (const auto& [name, amount] : scalars) {
    if (name.empty()) {
      return Invalid(
          absl::StrCat(field, " has a named resource without a name"));
    }
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString(absl::StrCat(field, " name"), name, limits));
    if (ReservedScalarName(name)) {
      return Invalid(absl::StrCat(field, " names a scalar \"", name,
                                  "\", which is reserved"));
    }
    FLOWSCHED_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, "[", name, "]"),
                                         amount, limits.max_scalar_amount));
    // Zero is no entry: one canonical form for equal amounts.
    out.Set(name, amount);
  }
  return absl::OkStatus();
}

absl::StatusOr<Resources> DecodeResources(absl::string_view field,
                                          const v1::Resources& message,
                                          const ValidationLimits& limits) {
  FLOWSCHED_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".cpu_millis"),
                                       message.cpu_millis(),
                                       limits.max_cpu_millis));
  FLOWSCHED_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".memory_bytes"),
                                       message.memory_bytes(),
                                       limits.max_memory_bytes));
  FLOWSCHED_RETURN_IF_ERROR(CheckRange(
      absl::StrCat(field, ".network_bytes_per_sec"),
      message.network_bytes_per_sec(), limits.max_network_bytes_per_sec));
  Resources resources;
  resources.cpu_millis = message.cpu_millis();
  resources.memory_bytes = message.memory_bytes();
  resources.network_bytes_per_sec = message.network_bytes_per_sec();
  FLOWSCHED_RETURN_IF_ERROR(DecodeScalars(absl::StrCat(field, ".scalars"),
                                          message.scalars(), limits,
                                          resources.scalars));
  return resources;
}

// Impossible asks are rejected here; an ask no machine can serve today is
// valid (it waits). Whole devices: count >= 1, no milli. A fraction: milli
// in 1..999 of one device (count 0 or 1).
absl::StatusOr<AcceleratorRequest> DecodeAcceleratorRequest(
    uint64_t task_id, const v1::AcceleratorRequest& message,
    const ValidationLimits& limits) {
  const auto bad = [&](absl::string_view why) {
    return Invalid(absl::StrCat("task ", task_id, " accelerator: ", why));
  };
  if (message.count() < 0 || message.milli() < 0 ||
      message.memory_bytes() < 0) {
    return bad(absl::StrCat("negative count (", message.count(), "), milli (",
                            message.milli(), ") or memory_bytes (",
                            message.memory_bytes(), ")"));
  }
  AcceleratorRequest ask;
  if (message.milli() > 0) {
    if (message.milli() >= kMilliPerDevice) {
      return bad(absl::StrCat("milli = ", message.milli(),
                              " is outside [1, 999] (a whole device is "
                              "count 1 without milli)"));
    }
    if (message.count() > 1) {
      return bad(absl::StrCat("a fraction (milli ", message.milli(), ") of ",
                              message.count(),
                              " devices; a fraction is of one device"));
    }
    ask.milli = message.milli();
  } else {
    if (message.count() == 0) {
      return bad("asks for no device (count 0, milli 0); leave it out");
    }
    if (message.count() > limits.max_devices_per_machine) {
      return bad(absl::StrCat("count = ", message.count(),
                              " devices; the limit is ",
                              limits.max_devices_per_machine));
    }
    ask.whole = static_cast<uint32_t>(message.count());
  }
  FLOWSCHED_RETURN_IF_ERROR(CheckRange("task.accelerator.memory_bytes",
                                       message.memory_bytes(),
                                       limits.max_memory_bytes));
  ask.memory_bytes = message.memory_bytes();
  if (message.has_models()) {
    const auto& models = message.models().models();
    if (models.empty()) {
      return bad("models is present but names none (any model: leave out)");
    }
    if (static_cast<uint64_t>(models.size()) > limits.max_accelerator_models) {
      return bad(absl::StrCat(models.size(), " models; the limit is ",
                              limits.max_accelerator_models));
    }
    ask.models.emplace();
    for (const std::string& model : models) {
      if (model.empty()) return bad("models lists an empty model");
      FLOWSCHED_RETURN_IF_ERROR(
          CheckString("task.accelerator.models", model, limits));
      ask.models->push_back(model);
    }
  }
  const auto& preferred = message.preferred_models();
  if (static_cast<uint64_t>(preferred.size()) > limits.max_accelerator_models) {
    return bad(absl::StrCat(preferred.size(),
                            " preferred models; the limit is ",
                            limits.max_accelerator_models));
  }
  for (const std::string& model : preferred) {
    if (model.empty()) return bad("preferred_models lists an empty model");
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString("task.accelerator.preferred_models", model, limits));
    if (!ask.AcceptsModel(model)) {
      return bad(absl::StrCat("preferred model '", model,
                              "' is not among the acceptable models"));
    }
    if (ask.PrefersModel(model)) {
      return bad(absl::StrCat("preferred model '", model, "' is listed twice"));
    }
    ask.preferred_models.push_back(model);
  }
  return ask;
}

absl::StatusOr<std::vector<AcceleratorGroup>> DecodeAccelerators(
    const v1::MachineAdded& message, const ValidationLimits& limits) {
  std::vector<AcceleratorGroup> groups;
  int64_t devices = 0;
  for (int i = 0; i < message.accelerators_size(); ++i) {
    const v1::AcceleratorGroup& group = message.accelerators(i);
    const std::string field =
        absl::StrCat("machine_added.accelerators[", i, "]");
    if (group.count() < 1 || group.count() > limits.max_devices_per_machine) {
      return Invalid(absl::StrCat(field, ".count = ", group.count(),
                                  " is outside [1, ",
                                  limits.max_devices_per_machine, "]"));
    }
    devices += group.count();
    if (devices > limits.max_devices_per_machine) {
      return Invalid(absl::StrCat(
          "machine ", message.machine_id(), " has at least ", devices,
          " devices; the limit is ", limits.max_devices_per_machine));
    }
    // 0 is the default: one whole device.
    const int64_t milli = group.milli_per_device() == 0
                              ? kMilliPerDevice
                              : group.milli_per_device();
    if (milli < 1 || milli > kMilliPerDevice) {
      return Invalid(
          absl::StrCat(field, ".milli_per_device = ", group.milli_per_device(),
                       " is outside [1, 1000]"));
    }
    FLOWSCHED_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".memory_bytes"),
                                         group.memory_bytes(),
                                         limits.max_memory_bytes));
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString(absl::StrCat(field, ".model"), group.model(), limits));
    groups.push_back(AcceleratorGroup{static_cast<uint32_t>(group.count()),
                                      group.model(), milli,
                                      group.memory_bytes()});
  }
  return groups;
}

absl::Status CheckId(absl::string_view field, uint64_t id) {
  if (id == 0) return Invalid(absl::StrCat(field, " must not be 0"));
  return absl::OkStatus();
}

// Label maps are bounded like machine labels: at most max_labels entries,
// keys and values within max_string_bytes.
absl::Status DecodeLabels(
    absl::string_view field, uint64_t task_id,
    const google::protobuf::Map<std::string, std::string>& labels,
    const ValidationLimits& limits, std::map<std::string, std::string>& out) {
  if (static_cast<uint64_t>(labels.size()) > limits.max_labels) {
    return Invalid(absl::StrCat("task ", task_id, " has ", labels.size(), " ",
                                field, "; the limit is ", limits.max_labels));
  }
  for (const auto& [key, value] : labels) {
    if (key.empty()) {
      return Invalid(
          absl::StrCat("task ", task_id, " has an empty ", field, " key"));
    }
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString(absl::StrCat("task.", field, " key"), key, limits));
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString(absl::StrCat("task.", field, " value"), value, limits));
    out.emplace(key, value);
  }
  return absl::OkStatus();
}

absl::StatusOr<TaskSpec> DecodeTask(const v1::TaskSpec& message,
                                    const ValidationLimits& limits) {
  FLOWSCHED_RETURN_IF_ERROR(CheckId("task.task_id", message.task_id()));
  TaskSpec spec;
  spec.id = TaskId(message.task_id());
  FLOWSCHED_ASSIGN_OR_RETURN(
      spec.request, DecodeResources("task.request", message.request(), limits));
  spec.priority = message.priority();
  FLOWSCHED_RETURN_IF_ERROR(CheckRange(
      "task.input_bytes", message.input_bytes(), limits.max_input_bytes));
  spec.input_bytes = message.input_bytes();
  if (static_cast<uint64_t>(message.input_size()) >
      limits.max_locality_entries) {
    return Invalid(absl::StrCat(
        "task ", message.task_id(), " has ", message.input_size(),
        " input locality entries; the limit is ", limits.max_locality_entries));
  }
  for (const v1::DataLocality& entry : message.input()) {
    FLOWSCHED_RETURN_IF_ERROR(
        CheckRange("task.input.bytes", entry.bytes(), limits.max_input_bytes));
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString("task.input.rack", entry.rack(), limits));
    if (entry.machine_id() == 0 && entry.rack().empty()) {
      return Invalid("task.input entry names neither a machine nor a rack");
    }
    // An entry is part of the input: no more than all of it. A rack entry
    // states the rack's bytes (replicas counted once), so only one each.
    if (spec.input_bytes > 0 && entry.bytes() > spec.input_bytes) {
      return Invalid(absl::StrCat(
          "task ", message.task_id(), ": an input entry of ", entry.bytes(),
          " bytes exceeds its input_bytes ", spec.input_bytes));
    }
    if (entry.machine_id() == 0 &&
        std::any_of(spec.input.begin(), spec.input.end(),
                    [&](const DataLocality& seen) {
                      return seen.machine.value() == 0 &&
                             seen.rack == entry.rack();
                    })) {
      return Invalid(absl::StrCat("task ", message.task_id(), " states rack ",
                                  entry.rack(), "'s input bytes twice"));
    }
    spec.input.push_back(DataLocality{MachineId(entry.machine_id()),
                                      entry.rack(), entry.bytes()});
  }
  FLOWSCHED_RETURN_IF_ERROR(DecodeLabels("required_labels", message.task_id(),
                                         message.required_labels(), limits,
                                         spec.required_labels));
  FLOWSCHED_RETURN_IF_ERROR(DecodeLabels("preferred_labels", message.task_id(),
                                         message.preferred_labels(), limits,
                                         spec.preferred_labels));
  if (message.has_accelerator()) {
    FLOWSCHED_ASSIGN_OR_RETURN(
        spec.accelerator,
        DecodeAcceleratorRequest(message.task_id(), message.accelerator(),
                                 limits));
  }
  return spec;
}

absl::StatusOr<EventBody> DecodeJobSubmitted(const v1::JobSubmitted& m,
                                             const ValidationLimits& limits) {
  FLOWSCHED_RETURN_IF_ERROR(CheckId("job_submitted.job_id", m.job_id()));
  FLOWSCHED_RETURN_IF_ERROR(
      CheckString("job_submitted.name", m.name(), limits));
  // Check the announced size before touching the task list, so a job
  // that claims a billion tasks is refused without work.
  const uint64_t announced = m.task_count() != 0
                                 ? m.task_count()
                                 : static_cast<uint64_t>(m.tasks_size());
  if (announced > limits.max_tasks_per_job ||
      static_cast<uint64_t>(m.tasks_size()) > limits.max_tasks_per_job) {
    return Invalid(absl::StrCat("job ", m.job_id(), " announces ", announced,
                                " tasks; the limit is ",
                                limits.max_tasks_per_job));
  }
  if (m.task_count() != 0 &&
      m.task_count() != static_cast<uint64_t>(m.tasks_size())) {
    return Invalid(absl::StrCat("job ", m.job_id(), " announces ",
                                m.task_count(), " tasks but carries ",
                                m.tasks_size()));
  }
  if (m.min_members() > static_cast<uint64_t>(m.tasks_size())) {
    return Invalid(absl::StrCat("job ", m.job_id(), " asks for a gang of ",
                                m.min_members(), " but carries ",
                                m.tasks_size(), " tasks"));
  }
  JobSubmitted job{JobId(m.job_id()),      m.name(),       m.priority(), {},
                   m.different_machines(), m.min_members()};
  job.tasks.reserve(static_cast<size_t>(m.tasks_size()));
  std::set<uint64_t> seen;
  for (const v1::TaskSpec& task : m.tasks()) {
    FLOWSCHED_ASSIGN_OR_RETURN(TaskSpec spec, DecodeTask(task, limits));
    if (!seen.insert(spec.id.value()).second) {
      return Invalid(absl::StrCat("job ", m.job_id(), " lists task ",
                                  spec.id.value(), " twice"));
    }
    job.tasks.push_back(std::move(spec));
  }
  return job;
}

absl::StatusOr<EventBody> DecodeTaskUpdated(const v1::TaskUpdated& m,
                                            const ValidationLimits& limits) {
  FLOWSCHED_RETURN_IF_ERROR(CheckId("task_updated.job_id", m.job_id()));
  FLOWSCHED_RETURN_IF_ERROR(CheckId("task_updated.task_id", m.task_id()));
  FLOWSCHED_ASSIGN_OR_RETURN(
      Resources request,
      DecodeResources("task_updated.request", m.request(), limits));
  return TaskUpdated{JobId(m.job_id()), TaskId(m.task_id()), request,
                     m.priority()};
}

absl::StatusOr<EventBody> DecodeMachineAdded(const v1::MachineAdded& m,
                                             const ValidationLimits& limits) {
  FLOWSCHED_RETURN_IF_ERROR(
      CheckId("machine_added.machine_id", m.machine_id()));
  FLOWSCHED_RETURN_IF_ERROR(
      CheckString("machine_added.rack", m.rack(), limits));
  if (m.task_slots() == 0 || m.task_slots() > limits.max_task_slots) {
    return Invalid(absl::StrCat("machine_added.task_slots = ", m.task_slots(),
                                " is outside [1, ", limits.max_task_slots,
                                "]"));
  }
  if (static_cast<uint64_t>(m.labels_size()) > limits.max_labels) {
    return Invalid(absl::StrCat("machine ", m.machine_id(), " has ",
                                m.labels_size(), " labels; the limit is ",
                                limits.max_labels));
  }
  FLOWSCHED_ASSIGN_OR_RETURN(
      Resources capacity,
      DecodeResources("machine_added.capacity", m.capacity(), limits));
  FLOWSCHED_ASSIGN_OR_RETURN(std::vector<AcceleratorGroup> accelerators,
                             DecodeAccelerators(m, limits));
  MachineAdded added{
      MachineId(m.machine_id()), m.rack(), capacity, m.task_slots(), {},
      std::move(accelerators)};
  for (const auto& [key, value] : m.labels()) {
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString("machine_added.labels key", key, limits));
    FLOWSCHED_RETURN_IF_ERROR(
        CheckString("machine_added.labels value", value, limits));
    added.labels.emplace(key, value);
  }
  return added;
}

absl::StatusOr<EventBody> DecodeMachineUsage(const v1::MachineUsage& m,
                                             const ValidationLimits& limits) {
  FLOWSCHED_RETURN_IF_ERROR(
      CheckId("machine_usage.machine_id", m.machine_id()));
  FLOWSCHED_ASSIGN_OR_RETURN(
      Resources used, DecodeResources("machine_usage.used", m.used(), limits));
  return MachineUsage{MachineId(m.machine_id()), used};
}

absl::StatusOr<EventBody> DecodeTaskUsage(const v1::TaskUsage& m,
                                          const ValidationLimits& limits) {
  FLOWSCHED_RETURN_IF_ERROR(CheckId("task_usage.job_id", m.job_id()));
  FLOWSCHED_RETURN_IF_ERROR(CheckId("task_usage.task_id", m.task_id()));
  FLOWSCHED_ASSIGN_OR_RETURN(
      Resources used, DecodeResources("task_usage.used", m.used(), limits));
  return TaskUsage{JobId(m.job_id()), TaskId(m.task_id()), used};
}

absl::StatusOr<EventBody> DecodeSetPolicy(
    const v1::SetPolicy& m, const ValidationLimits& limits,
    const EventDecoder::PolicyValidator& policy_validator) {
  const std::string& name = m.policy();
  if (name.empty()) return Invalid("set_policy.policy is empty");
  FLOWSCHED_RETURN_IF_ERROR(CheckString("set_policy.policy", name, limits));
  if (policy_validator) {
    absl::Status known = policy_validator(name);
    if (!known.ok()) {
      return Invalid(absl::StrCat("set_policy.policy: ", known.message()));
    }
  }
  return SetPolicy{name};
}

// One decoder per event kind with more to check than its ids.
absl::StatusOr<EventBody> DecodeBody(
    const v1::ClusterEvent& message, const ValidationLimits& limits,
    const EventDecoder::PolicyValidator& policy_validator) {
  switch (message.event_case()) {
    case v1::ClusterEvent::kJobSubmitted:
      return DecodeJobSubmitted(message.job_submitted(), limits);
    case v1::ClusterEvent::kTaskSubmitted: {
      const v1::TaskSubmitted& m = message.task_submitted();
      FLOWSCHED_RETURN_IF_ERROR(CheckId("task_submitted.job_id", m.job_id()));
      if (!m.has_task()) return Invalid("task_submitted has no task");
      FLOWSCHED_ASSIGN_OR_RETURN(TaskSpec spec, DecodeTask(m.task(), limits));
      return TaskSubmitted{JobId(m.job_id()), std::move(spec)};
    }
    case v1::ClusterEvent::kTaskFinished: {
      const v1::TaskFinished& m = message.task_finished();
      FLOWSCHED_RETURN_IF_ERROR(CheckId("task_finished.job_id", m.job_id()));
      FLOWSCHED_RETURN_IF_ERROR(CheckId("task_finished.task_id", m.task_id()));
      return TaskFinished{JobId(m.job_id()), TaskId(m.task_id())};
    }
    case v1::ClusterEvent::kTaskFailed: {
      const v1::TaskFailed& m = message.task_failed();
      FLOWSCHED_RETURN_IF_ERROR(CheckId("task_failed.job_id", m.job_id()));
      FLOWSCHED_RETURN_IF_ERROR(CheckId("task_failed.task_id", m.task_id()));
      FLOWSCHED_RETURN_IF_ERROR(
          CheckString("task_failed.reason", m.reason(), limits));
      return TaskFailed{JobId(m.job_id()), TaskId(m.task_id()), m.reason()};
    }
    case v1::ClusterEvent::kTaskKilled: {
      const v1::TaskKilled& m = message.task_killed();
      FLOWSCHED_RETURN_IF_ERROR(CheckId("task_killed.job_id", m.job_id()));
      FLOWSCHED_RETURN_IF_ERROR(CheckId("task_killed.task_id", m.task_id()));
      return TaskKilled{JobId(m.job_id()), TaskId(m.task_id())};
    }
    case v1::ClusterEvent::kTaskUpdated:
      return DecodeTaskUpdated(message.task_updated(), limits);
    case v1::ClusterEvent::kMachineAdded:
      return DecodeMachineAdded(message.machine_added(), limits);
    case v1::ClusterEvent::kMachineRemoved: {
      const v1::MachineRemoved& m = message.machine_removed();
      FLOWSCHED_RETURN_IF_ERROR(
          CheckId("machine_removed.machine_id", m.machine_id()));
      return MachineRemoved{MachineId(m.machine_id())};
    }
    case v1::ClusterEvent::kMachineFailed: {
      const v1::MachineFailed& m = message.machine_failed();
      FLOWSCHED_RETURN_IF_ERROR(
          CheckId("machine_failed.machine_id", m.machine_id()));
      FLOWSCHED_RETURN_IF_ERROR(
          CheckString("machine_failed.reason", m.reason(), limits));
      return MachineFailed{MachineId(m.machine_id()), m.reason()};
    }
    case v1::ClusterEvent::kMachineUsage:
      return DecodeMachineUsage(message.machine_usage(), limits);
    case v1::ClusterEvent::kTaskUsage:
      return DecodeTaskUsage(message.task_usage(), limits);
    case v1::ClusterEvent::kTick:
      return Tick{};
    case v1::ClusterEvent::kSetPolicy:
      return DecodeSetPolicy(message.set_policy(), limits, policy_validator);
    case v1::ClusterEvent::EVENT_NOT_SET:
      break;
  }
  return Invalid("ClusterEvent carries no event");
}

}  // namespace

absl::StatusOr<ClusterEvent> EventDecoder::Decode(
    std::string_view bytes) const {
  v1::ClusterEvent message;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Invalid(
        absl::StrCat("undecodable ClusterEvent (", bytes.size(), " bytes)"));
  }
  return FromProto(message);
}

absl::StatusOr<ClusterEvent> EventDecoder::FromProto(
    const v1::ClusterEvent& message) const {
  FLOWSCHED_RETURN_IF_ERROR(
      CheckString("event_id", message.event_id(), limits_));
  FLOWSCHED_RETURN_IF_ERROR(CheckString("source", message.source(), limits_));
  if (message.event_time_us() < 0) {
    return Invalid(absl::StrCat("event_time_us = ", message.event_time_us(),
                                " is negative"));
  }
  FLOWSCHED_ASSIGN_OR_RETURN(EventBody body,
                             DecodeBody(message, limits_, policy_validator_));
  return ClusterEvent{message.event_id(), message.event_time_us(),
                      message.source(), std::move(body)};
}

}  // namespace flowsched::cluster
