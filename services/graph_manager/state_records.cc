#include "services/graph_manager/state_records.h"

#include "absl/strings/str_cat.h"
#include "flowsched/v1/state.pb.h"
#include "services/common/status_macros.h"

namespace flowsched::graph_manager {
namespace {

void ToProto(const cluster::Resources& r, v1::Resources& out) {
  out.set_cpu_millis(r.cpu_millis);
  out.set_memory_bytes(r.memory_bytes);
  out.set_network_bytes_per_sec(r.network_bytes_per_sec);
  for (const auto& [name, amount] : r.scalars) {
    (*out.mutable_scalars())[name] = amount;
  }
}
cluster::Resources FromProto(const v1::Resources& r) {
  cluster::Resources out{
      r.cpu_millis(), r.memory_bytes(), r.network_bytes_per_sec(), {}};
  for (const auto& [name, amount] : r.scalars()) {
    out.scalars.Set(name, amount);  // a zero amount is no entry
  }
  return out;
}

// A fraction is stored as count 1 with its milli, as events may send it.
void ToProto(const cluster::AcceleratorRequest& ask,
             v1::AcceleratorRequest& out) {
  out.set_count(ask.milli > 0 ? 1 : ask.whole);
  out.set_milli(ask.milli);
  out.set_memory_bytes(ask.memory_bytes);
  if (ask.models.has_value()) {
    v1::AcceleratorModels* models = out.mutable_models();
    for (const std::string& model : *ask.models) models->add_models(model);
  }
  for (const std::string& model : ask.preferred_models) {
    out.add_preferred_models(model);
  }
}
cluster::AcceleratorRequest FromProto(const v1::AcceleratorRequest& ask) {
  cluster::AcceleratorRequest out;
  if (ask.milli() > 0) {
    out.milli = ask.milli();
  } else {
    out.whole = static_cast<uint32_t>(ask.count());
  }
  out.memory_bytes = ask.memory_bytes();
  if (ask.has_models()) {
    out.models.emplace(ask.models().models().begin(),
                       ask.models().models().end());
  }
  out.preferred_models.assign(ask.preferred_models().begin(),
                              ask.preferred_models().end());
  return out;
}

// Amounts no limit allows: negative ones. (Within the limits, fit checks
// compare request <= capacity - allocated and never overflow.)
absl::Status CheckStored(const cluster::Resources& r, absl::string_view what) {
  bool negative =
      r.cpu_millis < 0 || r.memory_bytes < 0 || r.network_bytes_per_sec < 0;
  for (const auto& [name, amount] : r.scalars) negative |= amount < 0;
  if (!negative) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("stored ", what, " has a negative amount"));
}

absl::Status CheckStored(const v1::AcceleratorRequest& ask,
                         absl::string_view what) {
  if (ask.count() < 0 || ask.count() > 1024 || ask.milli() < 0 ||
      ask.milli() >= cluster::kMilliPerDevice || ask.memory_bytes() < 0) {
    return absl::DataLossError(
        absl::StrCat("stored ", what, " has an impossible accelerator ask"));
  }
  return absl::OkStatus();
}

template <typename Message>
absl::Status Parse(std::string_view bytes, Message& message,
                   absl::string_view what) {
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(
        "stored ", what, " record does not parse (", bytes.size(), " bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string EncodeJob(const cluster::Job& job) {
  v1::JobRecord record;
  record.set_job_id(job.id.value());
  record.set_name(job.name);
  record.set_priority(job.priority);
  record.set_different_machines(job.different_machines);
  record.set_min_members(job.min_members);
  return record.SerializeAsString();
}

std::string EncodeTask(const cluster::Task& task) {
  v1::TaskRecord record;
  record.set_task_id(task.spec.id.value());
  record.set_job_id(task.job.value());
  v1::TaskSpec* spec = record.mutable_spec();
  spec->set_task_id(task.spec.id.value());
  ToProto(task.spec.request, *spec->mutable_request());
  spec->set_priority(task.spec.priority);
  spec->set_input_bytes(task.spec.input_bytes);
  for (const cluster::DataLocality& entry : task.spec.input) {
    v1::DataLocality* out = spec->add_input();
    out->set_machine_id(entry.machine.value());
    out->set_rack(entry.rack);
    out->set_bytes(entry.bytes);
  }
  spec->mutable_required_labels()->insert(task.spec.required_labels.begin(),
                                          task.spec.required_labels.end());
  spec->mutable_preferred_labels()->insert(task.spec.preferred_labels.begin(),
                                           task.spec.preferred_labels.end());
  if (!task.spec.accelerator.empty()) {
    ToProto(task.spec.accelerator, *spec->mutable_accelerator());
  }
  for (const cluster::DeviceShare& share : task.devices) {
    record.add_device_indices(share.index);
    record.add_device_milli(share.milli);
  }
  record.set_machine_id(task.machine.value());
  record.set_submit_time_us(task.submit_time_us);
  record.set_start_time_us(task.start_time_us);
  record.set_placements(task.placements);
  record.set_wait_us_total(task.wait_us_total);
  record.set_run_us_total(task.run_us_total);
  record.set_wait_start_us(task.wait_start_us);
  return record.SerializeAsString();
}

std::string EncodeMachine(const cluster::Machine& machine) {
  v1::MachineRecord record;
  record.set_machine_id(machine.id.value());
  record.set_rack(machine.rack);
  ToProto(machine.capacity, *record.mutable_capacity());
  record.set_task_slots(machine.task_slots);
  for (const auto& [key, value] : machine.labels) {
    (*record.mutable_labels())[key] = value;
  }
  ToProto(machine.used, *record.mutable_used());
  for (const cluster::Device& device : machine.devices) {
    v1::DeviceRecord* out = record.add_devices();
    out->set_model(device.model);
    out->set_capacity_milli(device.capacity_milli);
    out->set_memory_bytes(device.memory_bytes);
  }
  return record.SerializeAsString();
}

absl::StatusOr<cluster::Job> DecodeJob(std::string_view bytes) {
  v1::JobRecord record;
  if (auto s = Parse(bytes, record, "job"); !s.ok()) return s;
  if (record.job_id() == 0) return absl::DataLossError("stored job has id 0");
  cluster::Job job;
  job.id = JobId(record.job_id());
  job.name = record.name();
  job.priority = record.priority();
  job.different_machines = record.different_machines();
  job.min_members = record.min_members();
  return job;
}

absl::StatusOr<cluster::Task> DecodeTask(std::string_view bytes) {
  v1::TaskRecord record;
  if (auto s = Parse(bytes, record, "task"); !s.ok()) return s;
  if (record.task_id() == 0 || record.job_id() == 0) {
    return absl::DataLossError("stored task has a zero task or job id");
  }
  cluster::Task task;
  task.spec.id = TaskId(record.task_id());
  task.spec.request = FromProto(record.spec().request());
  const std::string what = absl::StrCat("task ", record.task_id());
  FLOWSCHED_RETURN_IF_ERROR(CheckStored(task.spec.request, what));
  task.spec.priority = record.spec().priority();
  task.spec.input_bytes = record.spec().input_bytes();
  for (const v1::DataLocality& entry : record.spec().input()) {
    task.spec.input.push_back(
        {MachineId(entry.machine_id()), entry.rack(), entry.bytes()});
  }
  task.spec.required_labels.insert(record.spec().required_labels().begin(),
                                   record.spec().required_labels().end());
  task.spec.preferred_labels.insert(record.spec().preferred_labels().begin(),
                                    record.spec().preferred_labels().end());
  if (record.spec().has_accelerator()) {
    FLOWSCHED_RETURN_IF_ERROR(CheckStored(record.spec().accelerator(), what));
    task.spec.accelerator = FromProto(record.spec().accelerator());
  }
  if (record.device_indices_size() != record.device_milli_size()) {
    return absl::DataLossError(absl::StrCat(
        "stored task ", record.task_id(), " has ", record.device_indices_size(),
        " device indices but ", record.device_milli_size(), " device shares"));
  }
  for (int i = 0; i < record.device_indices_size(); ++i) {
    task.devices.push_back({record.device_indices(i), record.device_milli(i)});
  }
  task.job = JobId(record.job_id());
  task.machine = MachineId(record.machine_id());
  task.submit_time_us = record.submit_time_us();
  task.start_time_us = record.start_time_us();
  task.placements = record.placements();
  task.wait_us_total = record.wait_us_total();
  task.run_us_total = record.run_us_total();
  task.wait_start_us = record.wait_start_us();
  return task;
}

absl::StatusOr<cluster::Machine> DecodeMachine(std::string_view bytes) {
  v1::MachineRecord record;
  if (auto s = Parse(bytes, record, "machine"); !s.ok()) return s;
  if (record.machine_id() == 0) {
    return absl::DataLossError("stored machine has id 0");
  }
  cluster::Machine machine;
  machine.id = MachineId(record.machine_id());
  machine.rack = record.rack();
  machine.capacity = FromProto(record.capacity());
  const std::string what = absl::StrCat("machine ", record.machine_id());
  FLOWSCHED_RETURN_IF_ERROR(CheckStored(machine.capacity, what));
  machine.task_slots = record.task_slots();
  machine.labels.insert(record.labels().begin(), record.labels().end());
  machine.used = FromProto(record.used());
  for (const v1::DeviceRecord& record_device : record.devices()) {
    if (record_device.capacity_milli() < 1 ||
        record_device.capacity_milli() > cluster::kMilliPerDevice ||
        record_device.memory_bytes() < 0) {
      return absl::DataLossError(
          absl::StrCat("stored ", what, " has an impossible device"));
    }
    cluster::Device& device = machine.devices.emplace_back();
    device.model = record_device.model();
    device.capacity_milli = record_device.capacity_milli();
    device.memory_bytes = record_device.memory_bytes();
  }
  return machine;
}

}  // namespace flowsched::graph_manager
