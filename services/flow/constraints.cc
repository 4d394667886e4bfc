#include "services/flow/constraints.h"

namespace flowsched::flow {
namespace {

void AppendEscaped(std::string& out, const std::string& text) {
  for (char c : text) {
    if (c == '=' || c == ',' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
}

}  // namespace

bool LabelsMatch(const std::map<std::string, std::string>& labels,
                 const LabelSelector& selector) {
  for (const auto& [key, value] : selector) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

std::string SelectorText(const LabelSelector& selector) {
  std::string out;
  for (const auto& [key, value] : selector) {
    if (!out.empty()) out.push_back(',');
    AppendEscaped(out, key);
    out.push_back('=');
    AppendEscaped(out, value);
  }
  return out;
}

bool JobRunsOn(const cluster::Job& job, const cluster::Machine& machine) {
  // Iterate the smaller set: a machine runs few tasks, a job may have many.
  if (machine.running.size() <= job.tasks.size()) {
    for (TaskId id : machine.running) {
      if (job.tasks.contains(id)) return true;
    }
    return false;
  }
  for (TaskId id : job.tasks) {
    if (machine.running.contains(id)) return true;
  }
  return false;
}

bool ConstraintsAdmit(const cluster::Task& task,
                      const cluster::Machine& machine,
                      const cluster::ClusterState& state) {
  if (!LabelsMatch(machine.labels, task.spec.required_labels)) return false;
  const cluster::Job* job = state.FindJob(task.job);
  if (job != nullptr && job->different_machines) {
    for (TaskId id : machine.running) {
      if (id != task.spec.id && job->tasks.contains(id)) return false;
    }
  }
  return true;
}

int64_t PreferenceDiscount(const cluster::TaskSpec& spec,
                           const cluster::Machine& machine, int64_t discount) {
  if (spec.preferred_labels.empty()) return 0;
  return LabelsMatch(machine.labels, spec.preferred_labels) ? discount : 0;
}

}  // namespace flowsched::flow
