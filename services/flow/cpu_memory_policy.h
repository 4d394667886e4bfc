#pragma once

// Multi-dimensional (CPU and memory) placement with feasibility, in the
// style of Firmament's CPU/memory cost model (Gog, PhD thesis 2016, ch. 7;
// OSDI 2016 section 3.3 mentions it as the production extension of 6c).
//
//   waiting task --(0)--> EC_c --(convex, cap = tasks of c that fit)--> M
//   waiting task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//   M --(slots)--> S
//
// Equivalence classes EC_c group waiting tasks by (CPU request, memory
// request, required selector, preferred selector), so the graph has one
// arc per class and machine, not per task and machine. A job with the
// "different machines" constraint gets one class of its own (see below).
//
// Costs balance load: the k-th task of class c on machine m costs
// util_scale * max(cpu utilisation, memory utilisation) of m after placing
// k tasks of c (convex pieces, so one round spreads a burst), minus
// preferred_discount if m matches the class's preferred selector.
//
// Soundness (no machine ever receives more CPU or memory than it has
// free): flow cannot express a multi-dimensional knapsack, and two classes
// that each fit a machine could jointly overcommit it. So each machine's
// free resources are reserved among the classes that reach it, greedily in
// an order rotated by the machine's index (so that different machines
// favour different classes): a class reserves min(its waiting tasks, how
// many fit the still unreserved CPU, memory and slots) and its arc gets
// exactly that capacity. The reserved amounts sum to at most the free
// resources, so any flow the solver returns fits. Reservations a class does
// not use are released by the next round (after the placements apply), and
// because waiting costs more than any placement, a round places at least
// one task whenever some waiting task fits somewhere: repeated rounds reach
// a state where every waiting task fits no machine.
//
// Different machines: the job's waiting tasks share one aggregator whose
// arcs have capacity at most 1 and go only to machines that run none of
// the job's tasks. Its request is the component-wise largest request of
// the job's waiting tasks and its required selector their union, so that
// any task of the job fits wherever the aggregator has an arc (jobs in the
// Google trace are homogeneous, where this is exact).
//
// Running tasks never move: preempting one frees nothing in the same round
// (capacities come from the current allocation), so it would never pay.
//
// A machine capacity of 0 in a dimension means "not reported": that
// dimension does not limit (see cluster::Machine::Fits) and counts as 0%.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "services/flow/constraints.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {

struct CpuMemoryParams {
  // Cost of a fully used machine; utilisation scales linearly below it.
  int64_t util_scale = 1000;
  // Must exceed util_scale so that a machine that fits always beats
  // waiting (then repeated rounds leave no fitting task waiting).
  int64_t unscheduled_cost = 100'000;
  int64_t preemption_cost = 200'000;
  // Discount on machines that match a preferred selector, in cost units
  // (half a fully loaded machine by default).
  int64_t preferred_discount = 500;
};

class CpuMemoryPolicy final : public SchedulingPolicy {
 public:
  explicit CpuMemoryPolicy(CpuMemoryParams params = {}) : params_(params) {}
  [[nodiscard]] std::string_view name() const override { return "cpu-memory"; }
  using SchedulingPolicy::Sync;
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const SyncContext& context,
                    NetworkBuilder& builder) override;

  // The class key of a waiting task (exposed for tests and explanations).
  static std::string ClassText(const cluster::Task& task,
                               const cluster::ClusterState& state);

 private:
  struct TaskClass {
    cluster::Resources request;
    LabelSelector required;
    LabelSelector preferred;
    JobId different_machines_job;  // 0 unless a different-machines job
    int64_t waiting = 0;
  };
  CpuMemoryParams params_;
};

}  // namespace flowsched::flow
