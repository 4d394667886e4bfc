#pragma once

// Placement constraints policies share (Firmament section 3.2's
// policy-defined aggregators; Sharma et al.'s task placement constraints in
// the Google trace):
//   - required label selector: the task may only run on machines whose
//     labels carry every key with the value given; policies keep this
//     sparse by routing tasks with one selector through one aggregator
//     that has arcs only to matching machines;
//   - preferred label selector: matching machines are cheaper by a
//     discount;
//   - "different machines" (job level): no two tasks of the job on one
//     machine, as capacity-1 arcs from a per-job aggregator to each machine
//     that runs none of the job's tasks.

#include <cstdint>
#include <map>
#include <string>

#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"

namespace flowsched::flow {

using LabelSelector = std::map<std::string, std::string>;

// Whether `labels` carry every key of `selector` with its value. An empty
// selector matches every machine.
bool LabelsMatch(const std::map<std::string, std::string>& labels,
                 const LabelSelector& selector);

// A canonical text form ("k1=v1,k2=v2", keys sorted, '=' ',' and '\'
// escaped) for aggregator keys.
std::string SelectorText(const LabelSelector& selector);

// Whether `task` may run on `machine` by its required labels and, for a
// job with different_machines, because no other task of the job runs there.
bool ConstraintsAdmit(const cluster::Task& task,
                      const cluster::Machine& machine,
                      const cluster::ClusterState& state);

// `discount` if the machine matches the task's non-empty preferred
// selector, else 0.
int64_t PreferenceDiscount(const cluster::TaskSpec& spec,
                           const cluster::Machine& machine, int64_t discount);

// Whether a task of `job` runs on `machine`.
bool JobRunsOn(const cluster::Job& job, const cluster::Machine& machine);

}  // namespace flowsched::flow
