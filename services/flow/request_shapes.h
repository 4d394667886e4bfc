#pragma once

// Feasibility in the network: waiting tasks grouped by what they ask for
// (request shapes), and each machine's free room reserved among the shapes
// so that arcs shape -> machine, each with the count reserved as capacity,
// are feasible together: any flow within them fits the machine in every
// resource and device (cluster::FitTask, the one fit rule).
//
// Flow cannot express a multi-dimensional knapsack, and two shapes that
// each fit a machine could jointly over-commit it; so a machine's free
// room is handed out shape by shape, greedily, in an order rotated per
// machine (so that different machines favour different shapes). A shape
// reserves min(its waiting tasks, how many of its ask still fit). Unused
// reservations are released by the next round.
//
// Different machines (JobSubmitted.different_machines): the job's waiting
// tasks form one shape of their own whose ask covers every task of it
// (largest amounts, whole devices over fractions, the models every task
// accepts, the union of required labels), reserved at most once per
// machine and never on a machine where the job already runs.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/cluster/cluster_state.h"
#include "services/common/strong_id.h"
#include "services/flow/network_builder.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {

// A rack holding part of a task's input, and the share of the input it
// holds (0-1).
struct RackShare {
  std::string rack;
  double share = 0;
  bool operator==(const RackShare&) const = default;
};

struct RequestShape {
  std::string key;  // ShapeKey of its tasks (and "|in=" its first input rack
                    // when its index splits by it)
  cluster::TaskSpec ask;  // request, accelerator ask, required labels
  std::map<std::string, std::string> preferred;  // empty if they differ
  JobId different_machines_job;  // non-zero: the job's own shape
  // A different-machines job's ask covers its waiting tasks; whole
  // devices cover a fraction only on devices that hold it, which the ask
  // cannot say. So the distinct fraction asks among its waiting tasks are
  // kept, and when the ask is for whole devices MachineRoom also checks
  // that the ask with each of them fits.
  std::vector<cluster::AcceleratorRequest> covered_fractions;
  // Where the input of its lowest task id is (InputRacks), when its index
  // splits shapes by the first of those racks (ShapeIndex(by_input_rack)),
  // which all its tasks share; empty otherwise.
  std::vector<RackShare> input_racks;
  int64_t waiting = 0;
  // Its waiting members of gangs that still need members (a job's
  // gang_need above its running count): the start of the longest current
  // waiting period among them (Task::wait_start_us, the hold's measure in
  // core/gang_requirements.h; INT64_MAX without one), and how many of them
  // those gangs still need.
  int64_t gang_waiting_since_us = std::numeric_limits<int64_t>::max();
  int64_t gang_missing = 0;
};

// The shapes holding a member of a gang that still needs members and has
// waited `after_s` seconds or more at `now_us` (none when after_s <= 0),
// longest waiting first:
// policies offer them a machine's room before the others (ReserveMachine's
// `first`), so a gang that keeps losing the room to newer, smaller work
// gets it once it has waited that long (the round solver's hold then keeps
// the rest off it: core/gang_requirements.h). Only gangs: for other work,
// first offer to whatever waited longest crowds many small tasks out
// behind a few big ones.
std::vector<size_t> StarvingShapes(const std::vector<RequestShape>& shapes,
                                   int64_t now_us, double after_s);

// The starving shapes as one reservation pass offers them: first, each
// until room for the gang members it holds that are still needed
// (gang_missing) is reserved across the machines, then like any other
// shape. So a starving gang takes the room it needs and no more: the rest
// goes round as before.
class StarvingFirst {
 public:
  StarvingFirst(const std::vector<RequestShape>& shapes, int64_t now_us,
                double after_s);
  // The starving shapes still short of room, longest waiting first: the
  // next ReserveMachine's `first`.
  [[nodiscard]] std::span<const size_t> open() const { return open_; }
  // Counts `n` tasks of `shape` reserved (any shape; others are ignored).
  void Reserved(size_t shape, int64_t n);
  // The keys of every starving shape (to tell when the set changes).
  [[nodiscard]] std::vector<std::string> Keys(
      const std::vector<RequestShape>& shapes) const;

 private:
  std::vector<size_t> starving_;
  std::vector<size_t> open_;
  absl::flat_hash_map<size_t, int64_t> left_;
};

// Whether `task` asks for any resource, device or required label, or
// belongs to a different-machines job, and so needs a machine with room for
// it rather than any free slot.
bool AsksForRoom(const cluster::Task& task, const cluster::ClusterState& state);

// The shape of a waiting task: equal keys, equal asks. Tasks without a
// network ask, named scalars or an accelerator ask keep the key the
// cpu-memory policy always gave them ("cm|cpu=..|mem=..|req=..|pref=..").
std::string ShapeKey(const cluster::Task& task,
                     const cluster::ClusterState& state);
// ShapeKey appended to `key`, given the task's job (null if it has none):
// an index builds each task's key in one buffer, without an allocation.
void AppendShapeKey(const cluster::Task& task, const cluster::Job* job,
                    std::string& key);

// The racks holding `task`'s input (cluster::LocateInput), most bytes
// first (ties in name order), at most kMaxInputRacks; empty if none of it
// is in a rack the state knows.
inline constexpr size_t kMaxInputRacks = 4;
std::vector<RackShare> InputRacks(const cluster::Task& task,
                                  const cluster::ClusterState& state);

// The shapes of the waiting tasks that `include` accepts (all when null),
// in key order (deterministic).
std::vector<RequestShape> WaitingShapes(
    const cluster::ClusterState& state,
    const std::function<bool(const cluster::Task&)>& include = nullptr);

// The shape waiting `task` belongs to, as a policy prices it: its ask (a
// different-machines job's covering every waiting task of the job) and,
// but for such a job's shape, its InputRacks; gang fields left out.
// O(tasks of its job). nullopt if the task runs.
std::optional<RequestShape> WaitingShapeOf(const cluster::Task& task,
                                           const cluster::ClusterState& state);

// The request shapes of a set of waiting tasks that the caller keeps up to
// date task by task (each task's key computed once), so a round costs the
// tasks that changed and the shapes, not every waiting task.
class ShapeIndex {
 public:
  // `by_input_rack`: tasks that ask alike but keep most of their input in
  // different racks (InputRacks) are different shapes, each knowing its
  // racks (RequestShape::input_racks), so a policy can price locality per
  // shape. Never for a different-machines job's shape (one per job, so the
  // job's tasks reserve at most once per machine).
  explicit ShapeIndex(bool by_input_rack = false)
      : by_input_rack_(by_input_rack) {}
  // Entries point into the shape map: moving keeps them valid, a copy
  // would not.
  ShapeIndex(const ShapeIndex&) = delete;
  ShapeIndex& operator=(const ShapeIndex&) = delete;
  ShapeIndex(ShapeIndex&&) = default;
  ShapeIndex& operator=(ShapeIndex&&) = default;
  // Puts `id` in the shape `task` has now if `keep`, else takes it out
  // (`task` may be null then: the task is gone).
  void Update(TaskId id, const cluster::Task* task, bool keep,
              const cluster::ClusterState& state);
  // The shapes in key order. REQUIRES: every task in the index is in
  // `state` as it was last updated.
  [[nodiscard]] std::vector<RequestShape> Shapes(
      const cluster::ClusterState& state) const;
  [[nodiscard]] size_t size() const { return key_of_.size(); }
  // The shapes' keys in key order (Shapes' keys, without building them),
  // valid until the next Update or Track.
  [[nodiscard]] std::vector<std::string_view> Keys() const;
  // False until the first Track (which indexes every waiting task).
  [[nodiscard]] bool tracking() const { return tracking_; }
  // Whether an indexed member of a gang that still needs members has
  // waited `after_s` seconds at `now_us` (StarvingShapes' test, without
  // building the shapes).
  [[nodiscard]] bool GangWaitedPast(const cluster::ClusterState& state,
                                    int64_t now_us, double after_s) const;
  // A policy's Refresh before a round: the shapes to reserve again, or
  // nullopt when nothing starves now nor did at the last reservation
  // (`starving`, its StarvingFirst::Keys) or the starving set is still
  // `starving`. O(waiting gang members) in the common nullopt case.
  [[nodiscard]] std::optional<std::vector<RequestShape>>
  ShapesIfStarvingChanged(const cluster::ClusterState& state, int64_t now_us,
                          double after_s,
                          const std::vector<std::string>& starving) const;
  // A room-reserving policy's Refresh: every shape when a Sync left the
  // reservations owed (`owed`), else ShapesIfStarvingChanged.
  [[nodiscard]] std::optional<std::vector<RequestShape>> ShapesToReserve(
      const cluster::ClusterState& state, int64_t now_us, double after_s,
      const std::vector<std::string>& starving, bool owed) const;
  // The key `id` is indexed under; null if it is not in the index.
  [[nodiscard]] const std::string* KeyOf(TaskId id) const;

  // Keeps the index in step with the tasks `changes` names: a task is in it
  // while it waits and `include` (null: any task) accepts it. The first
  // call indexes every task of `state` and returns `changes` widened to
  // every waiting task it indexed, whose arcs the caller must derive again
  // (a network restored from storage may hold arcs an older build made);
  // later calls return nullopt (sync `changes` as they are).
  std::optional<cluster::ChangeSet> Track(
      const cluster::ChangeSet& changes, const cluster::ClusterState& state,
      const std::function<bool(const cluster::Task&)>& include = nullptr);

 private:
  // B-trees: a shape may hold hundreds of thousands of waiting tasks, and
  // a burst inserts them one by one.
  struct Members {
    absl::btree_set<TaskId> tasks;
    absl::btree_set<std::pair<int64_t, TaskId>> gang_by_since;  // oldest first
    std::vector<RackShare> input_racks;  // by_input_rack_ only
  };
  using MemberMap = std::map<std::string, Members, std::less<>>;
  struct Entry {
    // The task's shape, its key shape->first: a task stores no key of its
    // own (a burst indexes hundreds of thousands under a few hundred).
    MemberMap::iterator shape;
    int64_t since = 0;  // Task::wait_start_us
    bool gang = false;  // of a gang job (whether it still needs members is
                        // read from the state when asked)
  };
  bool by_input_rack_ = false;
  bool tracking_ = false;
  absl::flat_hash_map<TaskId, Entry> key_of_;
  MemberMap members_;
  std::string scratch_key_;  // Update's key, built without an allocation
};

// Filters a profile adds to the fit rule when it reserves room: they only
// ever narrow it, so reservations stay within what the graph manager
// accepts.
struct RoomLimits {
  // > 0: the tasks a machine may run, those running included.
  int64_t max_tasks = 0;
  // A machine's free network is its capacity less the larger of its
  // reported use and its tasks' requests (network-aware's rule: reports
  // show traffic that requests understate).
  bool network_by_use = false;
};
// The network a machine's room counts as taken under `limits`: its tasks'
// requests, or with network_by_use the larger of those and its reported use.
[[nodiscard]] int64_t NetworkTaken(const cluster::Machine& machine,
                                   RoomLimits limits);
// Why `limits` refuse `task` on `machine` ("task limit", "network (reported
// use)"), or empty if they do not. REQUIRES: the fit rule accepts the task
// there (cluster::FitTask): the answer names the limit, not the resource.
[[nodiscard]] std::string LimitsRefuse(const cluster::Machine& machine,
                                       const cluster::TaskSpec& task,
                                       RoomLimits limits);

// Reserves `machine`'s free room among `shapes`, starting at shape
// `rotation % shapes.size()`; calls `reserved(index, n)` for each shape
// with n > 0 tasks reserved. Honours free slots, every resource and device
// (the rule of cluster::FitTask), required labels and the
// different-machines rule. Shapes that `wanted` (if given) refuses get
// nothing here. The shapes in `first` (indices) are offered before the
// rotation, in their order (StarvingShapes).
//
// Any order works: the reserved tasks fit the machine together in
// whatever order the graph manager applies them. Plain resources add up
// the same in any order; for devices, at most one shape that asks for
// devices reserves on a machine per round, so the device tasks placed
// there are alike and FitTask picks the same devices in any order.
//
// A machine that has reserved nothing looks at every shape (so a task that
// fits somewhere is always offered a machine); once it has, it stops after
// kMaxMisses shapes in a row that get nothing (its room is nearly used
// up): O(shapes) cheap resource counts at worst, and O(kMaxMisses + shapes
// it serves) device fits.
//
// `limits` narrow the room further (a profile's filters beyond the fit rule).
inline constexpr size_t kMaxMisses = 32;
void ReserveMachine(const cluster::Machine& machine,
                    const cluster::ClusterState& state,
                    const std::vector<RequestShape>& shapes, size_t rotation,
                    const std::function<void(size_t, int64_t)>& reserved,
                    const std::function<bool(size_t)>& wanted = nullptr,
                    std::span<const size_t> first = {}, RoomLimits limits = {});
// The least CPU and the least memory any of `shapes` asks for.
struct SmallestAsk {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
};
[[nodiscard]] SmallestAsk SmallestAskOf(
    const std::vector<RequestShape>& shapes);
// False when `machine`'s free CPU or memory (where it reports them) is
// below `smallest`'s: no shape fits, so a walk may skip the machine
// without offering its room (an offer looks at every shape before it gives
// up on a machine that reserves nothing).
[[nodiscard]] bool MayFitAny(const cluster::Machine& machine,
                             const SmallestAsk& smallest);

// The capped walk (load-spreading's, a profile's shape_machines_per_task):
// each shape reserves on at most max(min_machines, per_task * waiting)
// machines, visited least loaded first (fullest first if `fullest_first`),
// each offering its room to the starving shapes first (ReserveMachine);
// machines no shape fits are skipped (MayFitAny) and the walk ends once
// every shape has its share. Calls reserved(machine, shape, n) and counts
// the reservation in `starving`.
//
// With `pooled`, a machine it holds (the room pool's, room_pool.h) offers
// its room first only to the starving shapes and those it does not take
// (`takes`, by index), then, if one of them reserved (the pool's arc there
// closes), to the others; it is passed over once no starving shape is
// short and none of the shapes it does not take needs more machines. A
// held machine whose pool arc stays open counts toward the share of every
// shape the pool takes (each reaches it through the pool), so the walk
// ends after about that many held machines instead of visiting all.
struct MachineCap {
  int64_t per_task = 0;
  int64_t min_machines = 0;
};
struct PooledMachines {
  std::function<bool(const cluster::Machine&)> holds;
  std::vector<bool> takes;  // by shape index
};
void ReserveLeastLoaded(const cluster::ClusterState& state,
                        const std::vector<RequestShape>& shapes, MachineCap cap,
                        bool fullest_first, RoomLimits limits,
                        StarvingFirst& starving,
                        const std::function<void(const cluster::Machine&,
                                                 size_t, int64_t)>& reserved,
                        const PooledMachines* pooled = nullptr);

// A machine's free room as reservations use it up, for callers that offer
// it in several passes (the rule and its bounds as ReserveMachine's).
class MachineRoom {
 public:
  explicit MachineRoom(const cluster::Machine& machine, RoomLimits limits = {});
  // Offers the room left to the shapes in the order `next` gives (the next
  // shape's index, nullopt when there is none); calls `reserved(index, n)`
  // for each shape with n > 0 tasks reserved. A shape offered twice may
  // reserve twice. If `most` is given, n <= most(index) too, and a shape
  // with most(index) <= 0 is passed over (not counted as a miss).
  void Offer(const cluster::ClusterState& state,
             const std::vector<RequestShape>& shapes,
             const std::function<std::optional<size_t>()>& next,
             const std::function<void(size_t, int64_t)>& reserved,
             const std::function<int64_t(size_t)>& most = nullptr);
  [[nodiscard]] bool full() const { return slots_ <= 0; }
  // False when the room left has less free CPU or memory than `ask`
  // (MayFitAny's test): an offer to shapes asking that much or more would
  // reserve nothing.
  [[nodiscard]] bool MayFit(const SmallestAsk& ask) const;

 private:
  const cluster::Machine* machine_;
  int64_t slots_;
  bool network_by_use_;
  std::optional<cluster::Machine> room_;  // made at the first fit
  bool devices_taken_ = false;
};

// The machines with a free slot, fewest running tasks first (ties in id
// order): the order policies hand out room in, so that machines fill evenly.
// All of them; a caller that stops early walks
// ClusterState::open_machines_by_load() instead.
std::vector<const cluster::Machine*> MachinesLeastLoadedFirst(
    const cluster::ClusterState& state);

// One class aggregator (kEquivalenceClass, keyed by StableKey of the shape
// key) per shape; returns shape key -> node.
std::map<std::string, NodeId> EnsureShapeNodes(
    const std::vector<RequestShape>& shapes, NetworkBuilder& builder);
// The same for the shapes keyed `keys`.
std::map<std::string, NodeId> EnsureShapeNodes(
    const std::vector<std::string_view>& keys, NetworkBuilder& builder);

// The class node of a waiting `task`; Internal if its shape has none (a
// policy bug: the shapes were not taken from the waiting tasks).
absl::StatusOr<NodeId> ShapeNodeOf(const cluster::Task& task,
                                   const cluster::ClusterState& state,
                                   const std::map<std::string, NodeId>& nodes);

// The classes of the waiting tasks' shapes, key order.
struct ShapeClasses {
  std::vector<RequestShape> shapes;
  std::map<std::string, NodeId> nodes;  // shape key -> class node
};

// The task side of a policy that routes every waiting task through its
// shape's class (the one `index` keys it under): keeps `index` in step
// (ShapeIndex::Track), makes a class node per shape, and sets the arcs of each
// task `changes` names (all waiting tasks on the index's first call): a running
// task to its machine (0) and its job's unscheduled aggregator
// (`preemption_cost`), a waiting one to its class (0) and that aggregator
// (`unscheduled_cost`). Internal as ShapeNodeOf.
absl::StatusOr<ShapeClasses> SyncShapeClasses(
    ShapeIndex& index, const cluster::ChangeSet& changes,
    const cluster::ClusterState& state, int64_t unscheduled_cost,
    int64_t preemption_cost, NetworkBuilder& builder);
// How SyncShapeClasses routes tasks (a profile's priorities, pool and
// preemption).
struct TaskRoutes {
  // A waiting task's cost at its job's unscheduled aggregator.
  std::function<int64_t(const cluster::Task&)> waiting_cost;
  // A running task's arcs; null: its job's unscheduled aggregator
  // (`preemption_cost`), then its machine (0).
  std::function<std::vector<DesiredArc>(const cluster::Task&, const TaskEnds&)>
      running;
  int64_t preemption_cost = 0;
  // Non-null: a waiting task it refuses is not indexed and goes to `pool`
  // (0) instead of a class (slot_pool.h); the first call's widening then
  // covers the indexed tasks only.
  std::function<bool(const cluster::Task&)> in_classes;
  NodeId pool = kNoNode;
  // A waiting task's arcs, and a running one's by default, are listed job
  // first, else job last: the solver breaks ties by arc order (which task
  // of a shape is placed), and the built-in profiles' pinned rounds follow
  // the order of the class each replaced.
  bool job_first = true;
};
// The same with the routes above. Without `with_shapes` the result's
// shapes are left empty (the nodes are all there): a sync whose room is
// reserved later (SyncContext::refresh_follows) does not build them for
// every batch of a burst.
absl::StatusOr<ShapeClasses> SyncShapeClasses(
    ShapeIndex& index, const cluster::ChangeSet& changes,
    const cluster::ClusterState& state, const TaskRoutes& routes,
    NetworkBuilder& builder, bool with_shapes = true);

// Gives each class exactly `arcs[key]` as out-arcs (none if absent) and
// removes the class aggregators of shapes no longer waiting, but for those
// keyed in `keep` (other aggregators of the kind: the room pool's).
absl::Status SetShapeArcs(const std::map<std::string, NodeId>& nodes,
                          std::map<std::string, std::vector<DesiredArc>>& arcs,
                          NetworkBuilder& builder,
                          std::span<const uint64_t> keep = {});

}  // namespace flowsched::flow
