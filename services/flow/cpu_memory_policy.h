#pragma once

// Multi-dimensional placement (CPU, memory, named scalars, accelerator
// devices) with feasibility, in the
// style of Firmament's CPU/memory cost model (Gog, PhD thesis 2016, ch. 7;
// OSDI 2016 section 3.3 mentions it as the production extension of 6c).
//
//   waiting task --(0)--> EC_c --(convex, cap = tasks of c that fit)--> M
//   waiting task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//   M --(slots)--> S
//
// Equivalence classes EC_c are request shapes (request_shapes.h): waiting
// tasks grouped by what they ask (resources, devices, required and
// preferred selectors), so the graph has one arc per class and machine,
// not per task and machine. A job with the "different machines" constraint
// gets one class of its own.
//
// Costs balance load: the k-th task of class c on machine m costs
// util_scale * max(cpu utilisation, memory utilisation) of m after placing
// k tasks of c (convex pieces, so one round spreads a burst), minus
// preferred_discount if m matches the class's preferred selector.
//
// Soundness: each machine's free room is reserved among the classes
// (ReserveMachine, with the one fit rule cluster::FitTask), and each class's
// arc gets exactly its reservation as capacity, so any flow the solver
// returns fits every resource and device. Because waiting costs more than
// any placement, a round places at least one task whenever some waiting
// task fits somewhere: repeated rounds reach a state where every waiting
// task fits no machine.
//
// Gangs: a shape holding a gang member that has waited
// `gang_first_after_s` is offered every machine's room before the others,
// until its waiting tasks have room (StarvingFirst), so newer work cannot
// keep taking the room a gang needs whole; the round solver's hold
// (core/gang_requirements.h, the same default age) keeps the rest off it.
// Refresh, before each round, redoes the reservations when that set of
// shapes changed, or when a Sync left them to it (SyncContext::
// refresh_follows: the graph manager syncs each batch of events, and the
// reservations walk every machine).
//
// Running tasks never move: preempting one frees nothing in the same round
// (capacities come from the current allocation), so it would never pay.
//
// A machine capacity of 0 in a dimension means "not reported": that
// dimension does not limit (cluster::FitTask) and counts as 0%.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "services/flow/constraints.h"
#include "services/flow/request_shapes.h"
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
  // Seconds a gang member waits before its shape gets first offer of
  // every machine's room (0: never).
  double gang_first_after_s = 60;
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
  [[nodiscard]] bool time_dependent() const override {
    return params_.gang_first_after_s > 0;
  }
  [[nodiscard]] bool refresh_owed() const override {
    return reservations_owed_ || !waiting_.tracking();
  }
  absl::Status Refresh(const cluster::ClusterState& state,
                       const SyncContext& context,
                       NetworkBuilder& builder) override;

  // The class key of a waiting task (exposed for tests and explanations).
  static std::string ClassText(const cluster::Task& task,
                               const cluster::ClusterState& state);

 private:
  // Reserves every machine's room among `shapes` (starving ones first) and
  // sets the class arcs.
  absl::Status Reserve(const cluster::ClusterState& state,
                       const std::vector<RequestShape>& shapes,
                       const std::map<std::string, NodeId>& nodes,
                       int64_t now_us, NetworkBuilder& builder);

  CpuMemoryParams params_;
  // The waiting tasks by request shape (a fresh policy indexes all once).
  ShapeIndex waiting_;
  // Keys of the shapes the last reservation offered first.
  std::vector<std::string> starving_;
  // A Sync with refresh_follows left the reservations to Refresh.
  bool reservations_owed_ = false;
};

}  // namespace flowsched::flow
