#include "services/flow/request_shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/cluster/input_locality.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_macros.h"
#include "services/flow/constraints.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {
namespace {

// Names from outside go into keys length-prefixed, so no name can imitate
// the key's own separators and two different asks never share a key.
void AppendName(std::string& key, const std::string& name) {
  absl::StrAppend(&key, name.size(), "#", name);
}

// Appends `names` sorted (a set), length-prefixed, between `open` and ']'.
void AppendNameSet(std::string& text, const char* open,
                   std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  text.append(open);
  for (const std::string& name : names) {
    AppendName(text, name);
    text.push_back(',');
  }
  text.push_back(']');
}

std::string AcceleratorText(const cluster::AcceleratorRequest& ask) {
  std::string text = absl::StrCat("|acc=", ask.whole, "x", ask.milli, "m",
                                  ask.memory_bytes, "b");
  if (ask.models.has_value()) AppendNameSet(text, "[", *ask.models);
  // Preferences change the price, not the fit.
  if (!ask.preferred_models.empty()) {
    AppendNameSet(text, "|prefer[", ask.preferred_models);
  }
  return text;
}

// Widens `into` so that wherever it fits, `other` fits too.
void Cover(cluster::TaskSpec& into, const cluster::TaskSpec& other) {
  cluster::Resources& r = into.request;
  const cluster::Resources& o = other.request;
  r.cpu_millis = std::max(r.cpu_millis, o.cpu_millis);
  r.memory_bytes = std::max(r.memory_bytes, o.memory_bytes);
  r.network_bytes_per_sec =
      std::max(r.network_bytes_per_sec, o.network_bytes_per_sec);
  for (const auto& [name, amount] : o.scalars) {
    r.scalars.Set(name, std::max(r.scalars.Get(name), amount));
  }
  cluster::AcceleratorRequest& a = into.accelerator;
  const cluster::AcceleratorRequest& b = other.accelerator;
  if (!b.empty()) {
    if (a.empty()) {
      a = b;
    } else {
      // Whole devices cover fractions; more devices cover fewer.
      const uint32_t whole = std::max(a.whole, b.whole);
      a.milli = whole > 0 ? 0 : std::max(a.milli, b.milli);
      a.whole = whole;
      a.memory_bytes = std::max(a.memory_bytes, b.memory_bytes);
      // Preferences only price: kept where the tasks agree.
      if (a.preferred_models != b.preferred_models) a.preferred_models.clear();
      if (b.models.has_value()) {
        if (!a.models.has_value()) {
          a.models = b.models;
        } else {
          std::vector<std::string> both;
          for (const std::string& m : *a.models) {
            if (b.AcceptsModel(m)) both.push_back(m);
          }
          // No common model: an empty list accepts no device, so the
          // shape waits (never an input: the decoder refuses empty lists).
          a.models = std::move(both);
        }
      }
    }
  }
  into.required_labels.insert(other.required_labels.begin(),
                              other.required_labels.end());
}

}  // namespace

std::string ShapeKey(const cluster::Task& task,
                     const cluster::ClusterState& state) {
  std::string key;
  AppendShapeKey(task, state.FindJob(task.job), key);
  return key;
}

void AppendShapeKey(const cluster::Task& task, const cluster::Job* job,
                    std::string& key) {
  if (job != nullptr && job->different_machines) {
    absl::StrAppend(&key, "cm|dm|", task.job.value());
    return;
  }
  const cluster::TaskSpec& spec = task.spec;
  absl::StrAppend(&key, "cm|cpu=", spec.request.cpu_millis,
                  "|mem=", spec.request.memory_bytes, "|req=");
  if (!spec.required_labels.empty()) {
    absl::StrAppend(&key, SelectorText(spec.required_labels));
  }
  absl::StrAppend(&key, "|pref=");
  if (!spec.preferred_labels.empty()) {
    absl::StrAppend(&key, SelectorText(spec.preferred_labels));
  }
  if (spec.request.network_bytes_per_sec > 0) {
    absl::StrAppend(&key, "|net=", spec.request.network_bytes_per_sec);
  }
  if (!spec.request.scalars.empty()) {
    absl::StrAppend(&key, "|sc=");
    for (const auto& [name, amount] : spec.request.scalars) {
      AppendName(key, name);
      absl::StrAppend(&key, ":", amount, ";");
    }
  }
  if (!spec.accelerator.empty()) {
    absl::StrAppend(&key, AcceleratorText(spec.accelerator));
  }
}

namespace {

bool InGang(const cluster::Task& task, const cluster::ClusterState& state) {
  const cluster::Job* job = state.FindJob(task.job);
  return job != nullptr && job->gang();
}

// The job of a gang member if that gang still needs members, else null.
const cluster::Job* NeedyGang(TaskId id, const cluster::ClusterState& state) {
  const cluster::Task* task = state.FindTask(id);
  if (task == nullptr) return nullptr;
  const cluster::Job* job = state.FindJob(task->job);
  if (job == nullptr || !job->gang() || job->running >= job->gang_need()) {
    return nullptr;
  }
  return job;
}

// Sets `shape`'s gang fields from its waiting gang members, given as
// (wait start, task) oldest first.
template <typename Members>
void SetGangFields(const Members& gang_members,
                   const cluster::ClusterState& state, RequestShape& shape) {
  shape.gang_waiting_since_us = std::numeric_limits<int64_t>::max();
  shape.gang_missing = 0;
  std::map<JobId, int64_t> waiting;  // needy gang -> its members here
  std::map<JobId, int64_t> needed;   // needy gang -> members it lacks
  for (const auto& [since, id] : gang_members) {
    const cluster::Job* job = NeedyGang(id, state);
    if (job == nullptr) continue;
    shape.gang_waiting_since_us = std::min(shape.gang_waiting_since_us, since);
    ++waiting[job->id];
    needed[job->id] = job->gang_need() - job->running;
  }
  for (const auto& [job, count] : waiting) {
    shape.gang_missing += std::min(count, needed[job]);
  }
}

void AddToShape(const cluster::Task& task, const cluster::ClusterState& state,
                std::map<std::string, RequestShape>& shapes) {
  std::string key = ShapeKey(task, state);
  RequestShape& shape = shapes[key];
  if (shape.waiting == 0) {
    shape.key = std::move(key);
    shape.ask = task.spec;
    shape.ask.input.clear();
    shape.preferred = task.spec.preferred_labels;
    const cluster::Job* job = state.FindJob(task.job);
    if (job != nullptr && job->different_machines) {
      shape.different_machines_job = task.job;
    }
  } else if (shape.different_machines_job.value() != 0) {
    Cover(shape.ask, task.spec);
    if (shape.preferred != task.spec.preferred_labels) shape.preferred.clear();
  }
  const cluster::AcceleratorRequest& accelerator = task.spec.accelerator;
  if (shape.different_machines_job.value() != 0 && accelerator.milli > 0 &&
      std::find(shape.covered_fractions.begin(), shape.covered_fractions.end(),
                accelerator) == shape.covered_fractions.end()) {
    shape.covered_fractions.push_back(accelerator);
  }
  ++shape.waiting;
}

std::vector<RequestShape> InKeyOrder(
    std::map<std::string, RequestShape>& shapes) {
  std::vector<RequestShape> out;
  out.reserve(shapes.size());
  for (auto& [key, shape] : shapes) out.push_back(std::move(shape));
  return out;
}

}  // namespace

std::vector<RequestShape> WaitingShapes(
    const cluster::ClusterState& state,
    const std::function<bool(const cluster::Task&)>& include) {
  std::map<std::string, RequestShape> shapes;
  std::map<std::string, std::set<std::pair<int64_t, TaskId>>> gang_members;
  for (const auto& [id, task] : state.tasks()) {
    if (task.running() || (include && !include(task))) continue;
    AddToShape(task, state, shapes);
    if (InGang(task, state)) {
      gang_members[ShapeKey(task, state)].insert({task.wait_start_us, id});
    }
  }
  for (auto& [key, shape] : shapes) {
    SetGangFields(gang_members[key], state, shape);
  }
  return InKeyOrder(shapes);
}

std::optional<RequestShape> WaitingShapeOf(const cluster::Task& task,
                                           const cluster::ClusterState& state) {
  if (task.running()) return std::nullopt;
  std::map<std::string, RequestShape> shapes;
  AddToShape(task, state, shapes);
  RequestShape& shape = shapes.begin()->second;
  if (shape.different_machines_job.value() == 0) {
    shape.input_racks = InputRacks(task, state);
    return shape;
  }
  // The job's tasks share one shape key.
  const cluster::Job* job = state.FindJob(task.job);
  if (job == nullptr) return shape;
  for (TaskId id : job->tasks) {
    const cluster::Task* other = state.FindTask(id);
    if (id != task.spec.id && other != nullptr && !other->running()) {
      AddToShape(*other, state, shapes);
    }
  }
  return shapes.begin()->second;
}

std::vector<RackShare> InputRacks(const cluster::Task& task,
                                  const cluster::ClusterState& state) {
  if (task.spec.input.empty()) return {};
  const cluster::InputLocation where = cluster::LocateInput(task.spec, state);
  if (where.total <= 0) return {};
  std::vector<std::pair<std::string, int64_t>> racks;
  for (const auto& rack : where.in_rack) {
    if (rack.second > 0) racks.push_back(rack);
  }
  // in_rack is in name order: a stable sort keeps it among equal bytes.
  std::stable_sort(
      racks.begin(), racks.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  if (racks.size() > kMaxInputRacks) racks.resize(kMaxInputRacks);
  std::vector<RackShare> shares;
  shares.reserve(racks.size());
  for (auto& [rack, bytes] : racks) {
    shares.push_back({std::move(rack), static_cast<double>(bytes) /
                                           static_cast<double>(where.total)});
  }
  return shares;
}

void ShapeIndex::Update(TaskId id, const cluster::Task* task, bool keep,
                        const cluster::ClusterState& state) {
  auto it = key_of_.find(id);
  const auto leave = [&](const Entry& entry) {
    const MemberMap::iterator members = entry.shape;
    members->second.tasks.erase(id);
    members->second.gang_by_since.erase({entry.since, id});
    if (members->second.tasks.empty()) {
      members_.erase(members);
    } else if (by_input_rack_ && id < *members->second.tasks.begin()) {
      // It held the shape's racks: the new lowest id takes over.
      const cluster::Task* lowest =
          state.FindTask(*members->second.tasks.begin());
      members->second.input_racks = lowest == nullptr
                                        ? std::vector<RackShare>{}
                                        : InputRacks(*lowest, state);
    }
  };
  if (keep && task != nullptr) {
    const cluster::Job* job = state.FindJob(task->job);
    std::string& key = scratch_key_;
    key.clear();
    AppendShapeKey(*task, job, key);
    std::vector<RackShare> racks;
    if (by_input_rack_ && (job == nullptr || !job->different_machines)) {
      racks = InputRacks(*task, state);
      if (!racks.empty()) absl::StrAppend(&key, "|in=", racks[0].rack);
    }
    if (it != key_of_.end()) {
      if (it->second.shape->first == key &&
          it->second.since == task->wait_start_us) {
        // The same shape; its racks may have moved (the topology did).
        Members& members = it->second.shape->second;
        if (by_input_rack_ && *members.tasks.begin() == id) {
          members.input_racks = std::move(racks);
        }
        return;
      }
      leave(it->second);  // may erase the shape it->second names
    }
    MemberMap::iterator shape = members_.find(key);
    if (shape == members_.end()) shape = members_.try_emplace(key).first;
    const Entry entry{shape, task->wait_start_us,
                      job != nullptr && job->gang()};
    if (it != key_of_.end()) {
      it->second = entry;
    } else {
      key_of_.emplace(id, entry);
    }
    Members& members = shape->second;
    members.tasks.insert(id);
    // A shape's racks are its lowest task id's, whatever the order tasks
    // came in (a restart indexes them in id order).
    if (*members.tasks.begin() == id) members.input_racks = std::move(racks);
    if (entry.gang) members.gang_by_since.insert({entry.since, id});
    return;
  }
  if (it == key_of_.end()) return;
  leave(it->second);
  key_of_.erase(it);
}

bool ShapeIndex::GangWaitedPast(const cluster::ClusterState& state,
                                int64_t now_us, double after_s) const {
  if (!(after_s > 0)) return false;
  const auto after_us = static_cast<int64_t>(std::llround(after_s * 1e6));
  for (const auto& [key, members] : members_) {
    for (const auto& [since, id] : members.gang_by_since) {
      if (since > now_us || now_us - since < after_us) break;  // younger on
      if (NeedyGang(id, state) != nullptr) return true;
    }
  }
  return false;
}

std::optional<std::vector<RequestShape>> ShapeIndex::ShapesToReserve(
    const cluster::ClusterState& state, int64_t now_us, double after_s,
    const std::vector<std::string>& starving, bool owed) const {
  if (owed) return Shapes(state);
  return ShapesIfStarvingChanged(state, now_us, after_s, starving);
}

std::optional<std::vector<RequestShape>> ShapeIndex::ShapesIfStarvingChanged(
    const cluster::ClusterState& state, int64_t now_us, double after_s,
    const std::vector<std::string>& starving) const {
  if (starving.empty() && !GangWaitedPast(state, now_us, after_s)) {
    return std::nullopt;  // the common case, without building shapes
  }
  std::vector<RequestShape> shapes = Shapes(state);
  if (StarvingFirst(shapes, now_us, after_s).Keys(shapes) == starving) {
    return std::nullopt;
  }
  return shapes;
}

std::vector<std::string_view> ShapeIndex::Keys() const {
  std::vector<std::string_view> keys;
  keys.reserve(members_.size());
  for (const auto& [key, members] : members_) keys.push_back(key);
  return keys;
}

const std::string* ShapeIndex::KeyOf(TaskId id) const {
  auto it = key_of_.find(id);
  return it == key_of_.end() ? nullptr : &it->second.shape->first;
}

std::optional<cluster::ChangeSet> ShapeIndex::Track(
    const cluster::ChangeSet& changes, const cluster::ClusterState& state,
    const std::function<bool(const cluster::Task&)>& include) {
  const auto keep = [&](const cluster::Task* task) {
    return task != nullptr && !task->running() && (!include || include(*task));
  };
  if (tracking_) {
    for (TaskId id : changes.tasks) {
      const cluster::Task* task = state.FindTask(id);
      Update(id, task, keep(task), state);
    }
    return std::nullopt;
  }
  tracking_ = true;
  cluster::ChangeSet widened = changes;
  for (const auto& [id, task] : state.tasks()) {
    if (keep(&task)) {
      Update(id, &task, true, state);
      widened.tasks.insert(id);
    }
  }
  return widened;
}

std::vector<RequestShape> ShapeIndex::Shapes(
    const cluster::ClusterState& state) const {
  std::vector<RequestShape> out;
  out.reserve(members_.size());
  for (const auto& [key, members] : members_) {
    const auto& tasks = members.tasks;
    std::map<std::string, RequestShape> one;
    for (TaskId id : tasks) {
      const cluster::Task* task = state.FindTask(id);
      if (task == nullptr) continue;
      AddToShape(*task, state, one);
      // Tasks of one ordinary shape ask alike: the first tells it all.
      if (one.begin()->second.different_machines_job.value() == 0) {
        one.begin()->second.waiting = static_cast<int64_t>(tasks.size());
        break;
      }
    }
    if (one.empty()) continue;
    out.push_back(std::move(one.begin()->second));
    out.back().key = key;  // the index's key, which may name the rack
    out.back().input_racks = members.input_racks;
    SetGangFields(members.gang_by_since, state, out.back());
  }
  return out;
}

std::vector<size_t> StarvingShapes(const std::vector<RequestShape>& shapes,
                                   int64_t now_us, double after_s) {
  std::vector<size_t> starving;
  if (!(after_s > 0)) return starving;
  const auto after_us = static_cast<int64_t>(std::llround(after_s * 1e6));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int64_t since = shapes[i].gang_waiting_since_us;
    if (since <= now_us && now_us - since >= after_us) starving.push_back(i);
  }
  std::stable_sort(starving.begin(), starving.end(), [&](size_t a, size_t b) {
    return shapes[a].gang_waiting_since_us < shapes[b].gang_waiting_since_us;
  });
  return starving;
}

bool AsksForRoom(const cluster::Task& task,
                 const cluster::ClusterState& state) {
  const cluster::Resources& r = task.spec.request;
  if (r.cpu_millis > 0 || r.memory_bytes > 0 || r.network_bytes_per_sec > 0 ||
      !r.scalars.empty() || !task.spec.accelerator.empty() ||
      !task.spec.required_labels.empty()) {
    return true;
  }
  const cluster::Job* job = state.FindJob(task.job);
  return job != nullptr && job->different_machines;
}

StarvingFirst::StarvingFirst(const std::vector<RequestShape>& shapes,
                             int64_t now_us, double after_s)
    : starving_(StarvingShapes(shapes, now_us, after_s)), open_(starving_) {
  for (size_t i : starving_) left_[i] = shapes[i].gang_missing;
}

void StarvingFirst::Reserved(size_t shape, int64_t n) {
  auto it = left_.find(shape);
  if (it == left_.end() || it->second <= 0) return;
  it->second -= n;
  if (it->second <= 0) {
    open_.erase(std::find(open_.begin(), open_.end(), shape));
  }
}

std::vector<std::string> StarvingFirst::Keys(
    const std::vector<RequestShape>& shapes) const {
  std::vector<std::string> keys;
  keys.reserve(starving_.size());
  for (size_t i : starving_) keys.push_back(shapes[i].key);
  return keys;
}

namespace {

// ReserveMachine's order of offers: the shapes in `first`, then the
// rotation from `rotation` without them, each only if `wanted` (null:
// any) accepts it. The rotation goes over `among` (shape indices) if it
// is given, else over all `shape_count` shapes.
std::function<std::optional<size_t>()> OfferOrder(
    size_t shape_count, size_t rotation, std::span<const size_t> first,
    const std::function<bool(size_t)>& wanted,
    const std::vector<size_t>* among = nullptr) {
  // Few shapes come first, usually none: a sorted copy to skip them in
  // the rotation by binary search.
  std::vector<size_t> skip(first.begin(), first.end());
  std::sort(skip.begin(), skip.end());
  const size_t count = among != nullptr ? among->size() : shape_count;
  return [count, rotation, first, &wanted, among, skip = std::move(skip),
          f = size_t{0}, j = size_t{0}]() mutable -> std::optional<size_t> {
    while (f < first.size()) {
      const size_t index = first[f++];
      if (!wanted || wanted(index)) return index;
    }
    while (j < count) {
      const size_t at = (rotation + j++) % count;
      const size_t index = among != nullptr ? (*among)[at] : at;
      if (std::binary_search(skip.begin(), skip.end(), index)) continue;
      if (!wanted || wanted(index)) return index;
    }
    return std::nullopt;
  };
}

}  // namespace

void ReserveMachine(const cluster::Machine& machine,
                    const cluster::ClusterState& state,
                    const std::vector<RequestShape>& shapes, size_t rotation,
                    const std::function<void(size_t, int64_t)>& reserved,
                    const std::function<bool(size_t)>& wanted,
                    std::span<const size_t> first, RoomLimits limits) {
  if (shapes.empty()) return;
  MachineRoom(machine, limits)
      .Offer(state, shapes, OfferOrder(shapes.size(), rotation, first, wanted),
             reserved);
}

SmallestAsk SmallestAskOf(const std::vector<RequestShape>& shapes) {
  if (shapes.empty()) return {};
  SmallestAsk smallest{std::numeric_limits<int64_t>::max(),
                       std::numeric_limits<int64_t>::max()};
  for (const RequestShape& shape : shapes) {
    smallest.cpu_millis =
        std::min(smallest.cpu_millis, shape.ask.request.cpu_millis);
    smallest.memory_bytes =
        std::min(smallest.memory_bytes, shape.ask.request.memory_bytes);
  }
  return smallest;
}

bool MayFitAny(const cluster::Machine& machine, const SmallestAsk& smallest) {
  const cluster::Resources& capacity = machine.capacity;
  const cluster::Resources& allocated = machine.allocated;
  if (capacity.cpu_millis > 0 &&
      capacity.cpu_millis - allocated.cpu_millis < smallest.cpu_millis) {
    return false;
  }
  return !(capacity.memory_bytes > 0 &&
           capacity.memory_bytes - allocated.memory_bytes <
               smallest.memory_bytes);
}

void ReserveLeastLoaded(const cluster::ClusterState& state,
                        const std::vector<RequestShape>& shapes, MachineCap cap,
                        bool fullest_first, RoomLimits limits,
                        StarvingFirst& starving,
                        const std::function<void(const cluster::Machine&,
                                                 size_t, int64_t)>& reserved,
                        const PooledMachines* pooled) {
  const auto pool_takes = [&](size_t i) {
    return pooled != nullptr && pooled->takes[i];
  };
  // Machines each shape still wants. A held machine whose pool arc stays
  // open counts for every shape the pool takes (each reaches it through
  // the pool): `held_open` of them so far, so such a shape wants
  // wanted_machines[i] - held_open more.
  std::vector<int64_t> wanted_machines(shapes.size());
  int64_t held_open = 0;
  const auto wants = [&](size_t i) {
    return wanted_machines[i] > (pool_takes(i) ? held_open : 0);
  };
  // Shapes the pool does not take that still want machines, and the most
  // machines a shape it takes wants (`pooled_most_stale` once a reservation
  // may have lowered it; recounted only when it would end the walk).
  size_t open_unpooled = 0;
  int64_t pooled_most = 0;
  bool pooled_most_stale = false;
  const auto count_pooled_most = [&] {
    pooled_most = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (pool_takes(i))
        pooled_most = std::max(pooled_most, wanted_machines[i]);
    }
    pooled_most_stale = false;
  };
  // With a pool: the shapes it does not take and those it takes.
  std::vector<size_t> unpooled_shapes;
  std::vector<size_t> pooled_shapes;
  for (size_t i = 0; i < shapes.size(); ++i) {
    wanted_machines[i] =
        std::max(cap.min_machines, cap.per_task * shapes[i].waiting);
    if (!pool_takes(i)) ++open_unpooled;
    if (pooled != nullptr) {
      (pool_takes(i) ? pooled_shapes : unpooled_shapes).push_back(i);
    }
  }
  count_pooled_most();
  // Every shape has its share (a starving shape is credited held machines
  // only once it is no longer short, or where it reserved nothing).
  const auto done = [&] {
    if (open_unpooled > 0) return false;
    if (held_open < pooled_most && pooled_most_stale) count_pooled_most();
    return held_open >= pooled_most;
  };
  const SmallestAsk smallest = SmallestAskOf(shapes);
  const auto visit = [&](auto begin, auto end) {
    for (auto it = begin; it != end && !done(); ++it) {
      const cluster::Machine& machine = *it->machine;
      if (!MayFitAny(machine, smallest)) continue;
      const bool held = pooled != nullptr && pooled->holds(machine);
      if (held && open_unpooled == 0 && starving.open().empty()) {
        ++held_open;
        continue;
      }
      // A copy: reservations on this machine may close a starving shape.
      const std::vector<size_t> first(starving.open().begin(),
                                      starving.open().end());
      const auto rotation = static_cast<size_t>(it->id.value());
      bool any = false;
      const auto on_reserved = [&](size_t i, int64_t n) {
        const bool wanted = wants(i);
        any = true;
        starving.Reserved(i, n);
        reserved(machine, i, n);
        if (pool_takes(i) && wanted_machines[i] == pooled_most) {
          pooled_most_stale = true;
        }
        --wanted_machines[i];
        if (wanted && !wants(i) && !pool_takes(i)) --open_unpooled;
      };
      if (!held) {
        ReserveMachine(machine, state, shapes, rotation, on_reserved, wants,
                       first, limits);
        continue;
      }
      // The pool holds this machine: its room goes first to the starving
      // shapes and the shapes the pool does not take; once one reserves,
      // the pool's arc here closes, so the room left goes round all the
      // shapes as on any machine.
      MachineRoom room(machine, limits);
      const std::function<bool(size_t)> unpooled = [&](size_t i) {
        return wants(i) &&
               (!pool_takes(i) ||
                std::find(first.begin(), first.end(), i) != first.end());
      };
      room.Offer(state, shapes,
                 OfferOrder(shapes.size(), rotation, first, unpooled,
                            &unpooled_shapes),
                 on_reserved);
      if (!any) {
        ++held_open;
        continue;
      }
      const std::function<bool(size_t)> taken = [&](size_t i) {
        return wants(i) && pool_takes(i);
      };
      room.Offer(
          state, shapes,
          OfferOrder(shapes.size(), rotation, first, taken, &pooled_shapes),
          on_reserved);
    }
  };
  const auto& open = state.open_machines_by_load();
  if (fullest_first) {
    visit(open.rbegin(), open.rend());
  } else {
    visit(open.begin(), open.end());
  }
}

int64_t NetworkTaken(const cluster::Machine& machine, RoomLimits limits) {
  return limits.network_by_use
             ? std::max(machine.allocated.network_bytes_per_sec,
                        machine.used.network_bytes_per_sec)
             : machine.allocated.network_bytes_per_sec;
}

std::string LimitsRefuse(const cluster::Machine& machine,
                         const cluster::TaskSpec& task, RoomLimits limits) {
  if (limits.max_tasks > 0 &&
      static_cast<int64_t>(machine.running.size()) >= limits.max_tasks) {
    return "task limit";
  }
  cluster::Machine room;
  room.task_slots = 1;
  room.capacity = machine.capacity;
  room.allocated = machine.allocated;
  room.allocated.network_bytes_per_sec = NetworkTaken(machine, limits);
  if (cluster::ResourceFitCount(room, task.request, 1) == 0) {
    return "network (reported use)";
  }
  return "";
}

MachineRoom::MachineRoom(const cluster::Machine& machine, RoomLimits limits)
    : machine_(&machine),
      slots_(machine.free_slots()),
      network_by_use_(limits.network_by_use) {
  if (const int64_t max_tasks = limits.max_tasks; max_tasks > 0) {
    slots_ = std::min(
        slots_, std::max<int64_t>(0, max_tasks - static_cast<int64_t>(
                                                     machine.running.size())));
  }
}

bool MachineRoom::MayFit(const SmallestAsk& ask) const {
  return MayFitAny(room_.has_value() ? *room_ : *machine_, ask);
}

namespace {

// Whether `shape`'s ask fits `room` with each fraction it covers in place
// of its whole devices (RequestShape::covered_fractions).
bool CoveredFractionsFit(const RequestShape& shape,
                         const cluster::Machine& room) {
  if (shape.ask.accelerator.whole == 0) return true;
  cluster::TaskSpec ask = shape.ask;
  for (const cluster::AcceleratorRequest& fraction : shape.covered_fractions) {
    ask.accelerator = fraction;
    if (!cluster::FitTask(room, ask).fits()) return false;
  }
  return true;
}

}  // namespace

void MachineRoom::Offer(const cluster::ClusterState& state,
                        const std::vector<RequestShape>& shapes,
                        const std::function<std::optional<size_t>()>& next,
                        const std::function<void(size_t, int64_t)>& reserved,
                        const std::function<int64_t(size_t)>& most) {
  size_t misses = 0;
  bool reserved_any = false;
  while (slots_ > 0 && misses < kMaxMisses) {
    const std::optional<size_t> next_index = next();
    if (!next_index.has_value()) break;
    const size_t index = *next_index;
    const RequestShape& shape = shapes[index];
    const bool asks_devices = !shape.ask.accelerator.empty();
    if (asks_devices && devices_taken_) continue;
    if (!LabelsMatch(machine_->labels, shape.ask.required_labels)) continue;
    int64_t limit = std::min(shape.waiting, slots_);
    if (most) limit = std::min(limit, most(index));
    if (limit <= 0) continue;
    if (shape.different_machines_job.value() != 0) {
      const cluster::Job* job = state.FindJob(shape.different_machines_job);
      if (job != nullptr && JobRunsOn(*job, *machine_)) continue;
      limit = std::min<int64_t>(limit, 1);
    }
    if (!room_.has_value()) {
      // What FitTask reads, with slots counted here (FitTask checks one by
      // the running set).
      room_.emplace();
      room_->task_slots = static_cast<uint32_t>(slots_) + 1;
      room_->capacity = machine_->capacity;
      room_->allocated = machine_->allocated;
      room_->allocated.network_bytes_per_sec = NetworkTaken(
          *machine_, {.max_tasks = 0, .network_by_use = network_by_use_});
      room_->devices = machine_->devices;
    }
    int64_t n = cluster::ResourceFitCount(*room_, shape.ask.request, limit);
    if (n > 0 && !CoveredFractionsFit(shape, *room_)) n = 0;
    if (asks_devices) {
      // Device by device, as the graph manager will choose them.
      int64_t booked = 0;
      while (booked < n) {
        const cluster::Fit fit = cluster::FitTask(*room_, shape.ask);
        if (!fit.fits()) break;
        cluster::BookTask(*room_, shape.ask, fit.devices);
        ++booked;
      }
      n = booked;
    } else if (n > 0) {
      cluster::AddResources(room_->allocated, shape.ask.request, n);
    }
    if (n == 0) {
      if (reserved_any) ++misses;
      continue;
    }
    reserved_any = true;
    misses = 0;
    devices_taken_ = devices_taken_ || asks_devices;
    slots_ -= n;
    reserved(index, n);
  }
}

std::vector<const cluster::Machine*> MachinesLeastLoadedFirst(
    const cluster::ClusterState& state) {
  std::vector<const cluster::Machine*> order;
  order.reserve(state.open_machines_by_load().size());
  for (const cluster::ClusterState::OpenMachine& open :
       state.open_machines_by_load()) {
    order.push_back(open.machine);
  }
  return order;
}

std::map<std::string, NodeId> EnsureShapeNodes(
    const std::vector<RequestShape>& shapes, NetworkBuilder& builder) {
  std::vector<std::string_view> keys;
  keys.reserve(shapes.size());
  for (const RequestShape& shape : shapes) keys.push_back(shape.key);
  return EnsureShapeNodes(keys, builder);
}

std::map<std::string, NodeId> EnsureShapeNodes(
    const std::vector<std::string_view>& keys, NetworkBuilder& builder) {
  std::map<std::string, NodeId> nodes;
  for (std::string_view key : keys) {
    nodes.emplace_hint(
        nodes.end(), key,
        builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass,
                                     NetworkBuilder::StableKey(key)));
  }
  return nodes;
}

absl::StatusOr<NodeId> ShapeNodeOf(const cluster::Task& task,
                                   const cluster::ClusterState& state,
                                   const std::map<std::string, NodeId>& nodes) {
  auto it = nodes.find(ShapeKey(task, state));
  if (it == nodes.end()) {
    return absl::InternalError(absl::StrCat(
        "waiting task ", task.spec.id.value(), " has no request-shape class"));
  }
  return it->second;
}

absl::StatusOr<ShapeClasses> SyncShapeClasses(
    ShapeIndex& index, const cluster::ChangeSet& changes,
    const cluster::ClusterState& state, int64_t unscheduled_cost,
    int64_t preemption_cost, NetworkBuilder& builder) {
  return SyncShapeClasses(
      index, changes, state,
      TaskRoutes{.waiting_cost =
                     [unscheduled_cost](const cluster::Task&) {
                       return unscheduled_cost;
                     },
                 .running = nullptr,
                 .preemption_cost = preemption_cost,
                 .in_classes = nullptr,
                 .pool = kNoNode},
      builder);
}

absl::StatusOr<ShapeClasses> SyncShapeClasses(
    ShapeIndex& index, const cluster::ChangeSet& changes,
    const cluster::ClusterState& state, const TaskRoutes& routes,
    NetworkBuilder& builder, bool with_shapes) {
  const std::optional<cluster::ChangeSet> widened =
      index.Track(changes, state, routes.in_classes);
  ShapeClasses classes;
  if (with_shapes) {
    classes.shapes = index.Shapes(state);
    classes.nodes = EnsureShapeNodes(classes.shapes, builder);
  } else {
    classes.nodes = EnsureShapeNodes(index.Keys(), builder);
  }
  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      widened ? *widened : changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        std::vector<DesiredArc> arcs;
        if (task.running() && routes.running) {
          return builder.SetOutArcs(node, routes.running(task, ends));
        }
        if (task.running()) {
          arcs.push_back({ends.job, 1, routes.preemption_cost, {}});
          arcs.push_back({ends.machine, 1, 0, {}});
        } else if (routes.in_classes && !routes.in_classes(task)) {
          if (routes.pool == kNoNode) {
            return absl::InternalError(absl::StrCat(
                "waiting task ", task.spec.id.value(), " has no pool"));
          }
          arcs.push_back({ends.job, 1, routes.waiting_cost(task), {}});
          arcs.push_back({routes.pool, 1, 0, {}});
        } else {
          const std::string* key = index.KeyOf(task.spec.id);
          const auto shape =
              key == nullptr ? classes.nodes.end() : classes.nodes.find(*key);
          if (shape == classes.nodes.end()) {
            return absl::InternalError(
                absl::StrCat("waiting task ", task.spec.id.value(),
                             " has no request-shape class"));
          }
          arcs.push_back({ends.job, 1, routes.waiting_cost(task), {}});
          arcs.push_back({shape->second, 1, 0, {}});
        }
        if (!routes.job_first) std::swap(arcs[0], arcs[1]);
        return builder.SetOutArcs(node, arcs);
      }));
  return classes;
}

absl::Status SetShapeArcs(const std::map<std::string, NodeId>& nodes,
                          std::map<std::string, std::vector<DesiredArc>>& arcs,
                          NetworkBuilder& builder,
                          std::span<const uint64_t> keep) {
  std::set<uint64_t> live(keep.begin(), keep.end());
  for (const auto& [key, node] : nodes) {
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, arcs[key]));
    live.insert(NetworkBuilder::StableKey(key));
  }
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, live, builder);
  return absl::OkStatus();
}

}  // namespace flowsched::flow
