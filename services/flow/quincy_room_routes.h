#pragma once

// Quincy's routes for tasks that ask for room (AsksForRoom: resources,
// devices, required labels, different machines), feasible by construction.
// X, R_l and the preference arcs to C_m count slots only, so a waiting task
// that asks for room reaches machines through its request shape s
// (request_shapes.h) instead:
//
//   task --(alpha)--> X_s --> R_{l,s} --> C_{m,s} --> C_m
//   task --(rho_l)--> R_{l,s}         for each preferred rack l
//   task --(gamma_m)--> C_{m,s}       for each preferred computer m
//
// X_s, R_{l,s} and C_{m,s} are class aggregators. R_{l,s} exists for each rack
// and C_{m,s} for each computer that a waiting task of s prefers, so a task's
// own arcs change only when the task does. Each round every machine's free room
// is reserved among the shapes (MachineRoom), by need first: shapes in order of
// what their tasks save at their cheapest place against alpha, each taking room
// at the places its tasks prefer, cheapest first by their own gamma_m and rho_l
// (a rack's machines least loaded first), until it holds room for its waiting
// tasks (at a place, no more than the tasks that list it and have no room yet);
// then anywhere, machines least loaded first, for the shapes still short, the
// longest waiting first. Only then does each shape get a few more machines
// anywhere from the room left (RoomRouteParams), for the solver and the class
// terms to choose among. A reservation is exclusive, so a shape that held room
// on every place it prefers before others had any would keep them out of room
// they have nowhere else. The reservation r(m,s) is the capacity of the one arc
// of s's tree that enters C_m: from C_{m,s} if it exists, else from R_{l,s} if
// the shape prefers m's rack, else from X_s. So shape s never sends more than
// r(m,s) tasks to m, and the reservations fit m together. Arcs inside the tree
// cost nothing, as Quincy's X, R_l and C_m arcs do; the task's own arcs carry
// alpha, rho_l and gamma_m. With a RoomPricing (a profile's class terms), the
// arc entering C_m carries the price of the k-th task of s on m instead, convex
// in k.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/cluster/cluster_state.h"
#include "services/common/strong_id.h"
#include "services/flow/network_builder.h"
#include "services/flow/request_shapes.h"
#include "services/flow/terms/data_locality_term.h"

namespace flowsched::flow {

struct RoomRouteParams {
  // Machines each shape reserves on in all, counting the passes by need:
  // the pass that offers choice, after them, gives each shape more from the
  // room left, anywhere, up to max(min_shape_machines,
  // shape_machines_per_task * waiting tasks), looking at a bounded number
  // of machines least loaded first.
  int64_t min_shape_machines = 2;
  int64_t shape_machines_per_task = 2;
};

// How the arc of a shape's tree that enters a machine is priced: `prepare`
// before each pass with the state it reads, then `arc` for the machine,
// its node, the shape and the tasks reserved there (the arc's target,
// capacity n, and its cost pieces). Empty: cost 0.
struct RoomPricing {
  std::function<void(const cluster::ClusterState&)> prepare;
  std::function<DesiredArc(const cluster::Machine&, NodeId, const RequestShape&,
                           int64_t)>
      arc;
};

class RoomRoutes {
 public:
  explicit RoomRoutes(RoomRouteParams params = {}, RoomPricing pricing = {})
      : params_(params), pricing_(std::move(pricing)) {}

  // Keeps the set of waiting tasks that ask for room in step with `task`
  // (null: gone). A task that leaves it loses its route.
  void Track(TaskId id, const cluster::Task* task,
             const cluster::ClusterState& state);
  [[nodiscard]] bool WaitsForRoom(TaskId id) const {
    return shapes_.KeyOf(id) != nullptr;
  }
  [[nodiscard]] bool JobWaitsForRoom(JobId job) const {
    return waiting_jobs_.contains(job);
  }

  // The nodes a tracked waiting task's arcs go to: X_s, then R_{l,s} for
  // `prices.racks` and C_{m,s} for `prices.computers` in the same order.
  // Remembers the preferences and their costs for SyncArcs. REQUIRES:
  // WaitsForRoom(task).
  struct Targets {
    NodeId shape = kNoNode;
    std::vector<NodeId> racks;
    std::vector<NodeId> computers;
  };
  absl::StatusOr<Targets> Route(const cluster::Task& task,
                                const DataLocalityTerm::TaskPrices& prices,
                                NetworkBuilder& builder);

  // Re-derives every shape's tree from the machines' free room, and removes
  // the class aggregators no waiting task reaches any more. `racks`: the
  // machines of each rack. REQUIRES: every tracked task routed.
  absl::Status SyncArcs(
      const cluster::ClusterState& state,
      const std::map<std::string, std::vector<MachineId>>& racks,
      NetworkBuilder& builder);

 private:
  RoomRouteParams params_;
  RoomPricing pricing_;
  ShapeIndex shapes_;
  // What each routed task's arcs prefer, at their costs.
  absl::flat_hash_map<TaskId, DataLocalityTerm::TaskPrices> preferences_;
  absl::flat_hash_map<TaskId, JobId> job_of_;
  std::map<JobId, int64_t> waiting_jobs_;
  // Whether any class aggregator may exist (so that a network without
  // tasks asking for room skips SyncArcs' sweep).
  bool had_routes_ = true;
};

}  // namespace flowsched::flow
