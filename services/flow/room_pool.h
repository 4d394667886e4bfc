#pragma once

// The room pool: one aggregator R through which the waiting tasks of the
// request shapes that ask for CPU, memory or network only reach every
// machine whose free room holds, in each of its free slots, the largest
// such ask waiting or running (the bound B, resource by resource):
//
//   EC_s --(0, its waiting tasks)--> R
//   R --(convex: tasks * (running + k - 1) for the k-th new task, the slot
//        pool's pieces, open for the free slots; every piece closed where
//        B does not fit every free slot)--> M
//
// R's arcs follow from the state and the round's shapes alone (a policy
// restarted over a restored network builds the same). The running tasks'
// asks count in B so that it stays put while arrivals come and go: an arc
// flipping with every round that happens to have no arrival would resend
// every machine's arc. With no task R takes waiting or running, every arc
// is closed (no piece reaches the solver, and a start or finish changes
// none: a workload of slots alone never opens one). The slot pool X
// closes the same way beside R while no task it is for waits or runs
// (slot_pool.h's SlotPoolUsers).
//
// Feasible by construction: any free-slots tasks that each ask no more
// than B fit such a machine together, in whatever mix of shapes. The
// other machines' room is reserved among the shapes as before
// (request_shapes.h). On a machine R holds, the walk offers the room first
// to the starving shapes and those R does not take; where one of them
// reserves, R's arc closes for the round and the room left goes to R's
// shapes by reservation, so R and the reservations never count the same
// room twice.
//
// Why: a reservation is exclusive to its shape, so a burst of many shapes
// splits each machine's room among a few of them and leaves the rest
// without room until later rounds; and a class arc prices its shape's k-th
// task without the tasks other shapes send to the machine in the same
// round, so the solver stacks shapes. Through R every shape it takes
// reaches every pooled machine, and R's arc prices the new tasks on the
// machine together, as the slot pool (slot_pool.h) does.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/common/strong_id.h"
#include "services/flow/network_builder.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

class RoomPool {
 public:
  // The class key of R's node (a kEquivalenceClass aggregator, keyed by
  // its StableKey; no shape key has this form).
  static constexpr std::string_view kNodeKey = "room-pool";

  // `limits` narrow a machine's room as they do the reservations'.
  explicit RoomPool(RoomLimits limits = {}) : limits_(limits) {}

  // Whether R takes `shape`'s tasks: it asks for CPU, memory or network
  // and nothing else (no named scalar, device or label; not a
  // different-machines job's shape). Named scalars stay with the
  // reservations: a bound naming one would close R on every machine
  // without it.
  [[nodiscard]] static bool Takes(const RequestShape& shape);

  // Whether `spec` asks for CPU, memory or network and nothing else (Takes
  // without the different-machines rule).
  [[nodiscard]] static bool AsksPlainRoom(const cluster::TaskSpec& spec);

  // Keeps count of the running tasks that ask as R's shapes do (their asks
  // make part of the bound; a different-machines job's too, which only
  // makes the bound larger): the tasks `changes` names, or with `all`
  // every task of `state` (a fresh policy's first sync).
  void TrackRunning(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state, bool all);

  // Sets the round's bound: each resource's largest ask among the shapes R
  // takes and the running tasks it takes. Returns whether a shape R takes
  // is waiting.
  bool SetBound(const std::vector<RequestShape>& shapes);

  // Whether a shape R takes is waiting (SetBound's answer).
  [[nodiscard]] bool takes_any() const { return takes_any_; }

  // Notes the machines `changes` names for SetArcs' next pass, and drops
  // what it remembers of them (a machine removed and added again may get
  // its old node id back, without R's arc).
  void NoteChanged(const cluster::ChangeSet& changes);

  // Whether `machine`'s free room (under the limits) fits the bound in
  // each of its free slots; false for a machine without a free slot, and
  // when no task R takes is waiting or running.
  [[nodiscard]] bool Holds(const cluster::Machine& machine) const;

  // R's node, made if missing.
  NodeId EnsureNode(NetworkBuilder& builder) const;

  // Sets R -> M for every machine of `state` (R made if missing): open
  // where Holds and `closed` does not name the machine, closed (no
  // capacity) elsewhere. Work in proportion to the change: while the
  // bound and R's node are as at the last call, only the machines noted
  // since and those `closed` names now or named then are visited (no other
  // arc's inputs moved), and an arc whose inputs did not change is not
  // built again.
  absl::Status SetArcs(const cluster::ClusterState& state,
                       const absl::flat_hash_set<MachineId>& closed,
                       int64_t per_task_cost, NetworkBuilder& builder);

 private:
  // What an arc R -> M was last set from.
  struct SetFrom {
    NodeId pool = kNoNode;
    NodeId machine = kNoNode;
    bool open = false;
    uint32_t running = 0;
    uint32_t slots = 0;
    bool operator==(const SetFrom&) const = default;
  };
  // What a running task R takes asks, as counted.
  struct Ask {
    int64_t cpu_millis = 0;
    int64_t memory_bytes = 0;
    int64_t network_bytes_per_sec = 0;
  };
  void Count(const Ask& ask, int delta);
  // Sets the arc of `id` (gone from `state`: forgets it) as SetArcs does.
  absl::Status SetArc(const cluster::ClusterState& state, MachineId id,
                      const absl::flat_hash_set<MachineId>& closed, NodeId pool,
                      int64_t per_task_cost, NetworkBuilder& builder);
  RoomLimits limits_;
  cluster::Resources bound_;
  bool takes_any_ = false;
  bool bounded_ = false;  // some task R takes waits or runs
  // What every arc depended on at the last SetArcs pass (each arc set
  // since is remembered in set_).
  struct PassInputs {
    NodeId pool = kNoNode;
    bool bounded = false;
    cluster::Resources bound;
    int64_t per_task_cost = 0;
    bool operator==(const PassInputs&) const = default;
  };
  std::optional<PassInputs> last_pass_;   // none before the first
  absl::flat_hash_set<MachineId> noted_;  // by NoteChanged since that pass
  absl::flat_hash_set<MachineId> last_closed_;  // `closed` at that pass
  absl::flat_hash_map<TaskId, Ask> running_;
  // Running tasks by each resource's ask (a multiset as counts), for the
  // largest.
  absl::btree_map<int64_t, int64_t> running_cpu_;
  absl::btree_map<int64_t, int64_t> running_memory_;
  absl::btree_map<int64_t, int64_t> running_network_;
  absl::flat_hash_map<MachineId, SetFrom> set_;
};

}  // namespace flowsched::flow
