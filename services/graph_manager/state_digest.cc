#include "services/graph_manager/state_digest.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fmt/format.h"

namespace flowsched::graph_manager {
namespace {

// Two independent 64-bit streams (FNV-1a and a multiply-xorshift mix) make
// a 128-bit digest without a crypto library; collisions only need to be
// unlikely, not adversarially hard.
class Digester {
 public:
  void Bytes(std::string_view bytes) {
    U64(bytes.size());
    for (unsigned char c : bytes) {
      fnv_ = (fnv_ ^ c) * 0x100000001b3ULL;
    }
    for (unsigned char c : bytes) Mix(c);
  }
  void U64(uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      fnv_ = (fnv_ ^ ((value >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
    }
    Mix(value);
  }
  void I64(int64_t value) { U64(static_cast<uint64_t>(value)); }
  [[nodiscard]] std::string Hex() const {
    return fmt::format("{:016x}{:016x}", fnv_, mix_);
  }

 private:
  void Mix(uint64_t value) {
    mix_ ^= value + 0x9e3779b97f4a7c15ULL + (mix_ << 6) + (mix_ >> 2);
    mix_ *= 0xbf58476d1ce4e5b9ULL;
    mix_ ^= mix_ >> 31;
  }
  uint64_t fnv_ = 0xcbf29ce484222325ULL;
  uint64_t mix_ = 0x6a09e667f3bcc908ULL;
};

// The parts added with issue #31 (named scalars, devices, accelerator
// asks and device shares) are hashed only when present, tagged, so a state
// without them keeps the digest it had before they existed.
void Resources(Digester& d, const cluster::Resources& r) {
  d.I64(r.cpu_millis);
  d.I64(r.memory_bytes);
  d.I64(r.network_bytes_per_sec);
  if (r.scalars.empty()) return;
  d.Bytes("scalars");
  d.U64(r.scalars.size());
  for (const auto& [name, amount] : r.scalars) {
    d.Bytes(name);
    d.I64(amount);
  }
}

void Devices(Digester& d, const std::vector<cluster::Device>& devices) {
  if (devices.empty()) return;
  d.Bytes("devices");
  d.U64(devices.size());
  // Use is derived from the tasks' shares (hashed with the tasks).
  for (const cluster::Device& device : devices) {
    d.Bytes(device.model);
    d.I64(device.capacity_milli);
    d.I64(device.memory_bytes);
  }
}

void Accelerator(Digester& d, const cluster::AcceleratorRequest& ask) {
  if (ask.empty()) return;
  d.Bytes("accelerator");
  d.U64(ask.whole);
  d.I64(ask.milli);
  d.I64(ask.memory_bytes);
  d.U64(ask.models.has_value() ? ask.models->size() + 1 : 0);
  if (ask.models.has_value()) {
    for (const std::string& model : *ask.models) d.Bytes(model);
  }
  // Only when set, so digests of states without preferences stay as they
  // were.
  if (!ask.preferred_models.empty()) {
    d.Bytes("preferred_models");
    d.U64(ask.preferred_models.size());
    for (const std::string& model : ask.preferred_models) d.Bytes(model);
  }
}

void Shares(Digester& d, const std::vector<cluster::DeviceShare>& shares) {
  if (shares.empty()) return;
  d.Bytes("shares");
  d.U64(shares.size());
  for (const cluster::DeviceShare& share : shares) {
    d.U64(share.index);
    d.I64(share.milli);
  }
}

// Length-prefixed with a tag, so an empty map still separates its
// neighbours.
void Labels(Digester& d, std::string_view tag,
            const std::map<std::string, std::string>& labels) {
  d.Bytes(tag);
  d.U64(labels.size());
  for (const auto& [key, value] : labels) {
    d.Bytes(key);
    d.Bytes(value);
  }
}

void DigestJobs(Digester& d, const cluster::ClusterState& state) {
  d.Bytes("jobs");
  for (const auto& [id, job] : state.jobs()) {
    d.U64(id.value());
    d.Bytes(job.name);
    d.I64(job.priority);
    d.U64(job.tasks.size());
    d.U64(job.different_machines ? 1 : 0);
    d.U64(job.min_members);
  }
}

void DigestMachines(Digester& d, const cluster::ClusterState& state) {
  d.Bytes("machines");
  for (const auto& [id, machine] : state.machines()) {
    d.U64(id.value());
    d.Bytes(machine.rack);
    Resources(d, machine.capacity);
    d.U64(machine.task_slots);
    for (const auto& [key, value] : machine.labels) {
      d.Bytes(key);
      d.Bytes(value);
    }
    Resources(d, machine.used);
    for (TaskId task : machine.running) d.U64(task.value());
    Devices(d, machine.devices);
  }
}

void DigestTasks(Digester& d, const cluster::ClusterState& state) {
  d.Bytes("tasks");
  for (const auto& [id, task] : state.tasks()) {
    d.U64(id.value());
    d.U64(task.job.value());
    d.U64(task.machine.value());
    Resources(d, task.spec.request);
    d.I64(task.spec.priority);
    d.I64(task.spec.input_bytes);
    for (const cluster::DataLocality& input : task.spec.input) {
      d.U64(input.machine.value());
      d.Bytes(input.rack);
      d.I64(input.bytes);
    }
    Labels(d, "required", task.spec.required_labels);
    Labels(d, "preferred", task.spec.preferred_labels);
    Accelerator(d, task.spec.accelerator);
    Shares(d, task.devices);
    d.U64(task.placements);
    // Quincy prices wait and run time, so they are scheduling state; in
    // deterministic mode they derive from log times and replay exactly.
    // (Other modes use the wall clock, like submit and start times, which
    // stay out; compare digests of deterministic runs only.)
    d.I64(task.wait_us_total);
    d.I64(task.run_us_total);
  }
}

// Nodes in id order, then arcs sorted by (src, dst): the digest does not
// depend on the order arcs were added in.
void DigestNetwork(Digester& d, const flow::FlowNetwork& network) {
  d.Bytes("nodes");
  std::vector<std::tuple<flow::NodeId, flow::NodeId, int64_t, int64_t,
                         std::vector<flow::ArcSegment>>>
      arcs;
  network.ForEachNode([&](flow::NodeId id, const flow::NodeData& node) {
    d.U64(id);
    d.U64(static_cast<uint64_t>(node.kind));
    d.I64(node.supply);
    d.U64(node.entity_id);
    d.U64(node.running_on);
    network.ForEachOutArc(id, [&](const flow::ArcView& arc) {
      arcs.emplace_back(
          arc.src, arc.dst, arc.capacity, arc.cost,
          std::vector<flow::ArcSegment>(arc.extra_segments.begin(),
                                        arc.extra_segments.end()));
    });
  });
  std::sort(arcs.begin(), arcs.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) <
           std::tie(std::get<0>(b), std::get<1>(b));
  });
  d.Bytes("arcs");
  for (const auto& [src, dst, capacity, cost, pieces] : arcs) {
    d.U64(src);
    d.U64(dst);
    d.I64(capacity);
    d.I64(cost);
    for (const flow::ArcSegment& piece : pieces) {
      d.I64(piece.capacity);
      d.I64(piece.cost);
    }
  }
}

}  // namespace

std::string StateDigest(const cluster::ClusterState& state,
                        const flow::FlowNetwork& network) {
  Digester d;
  DigestJobs(d, state);
  DigestMachines(d, state);
  DigestTasks(d, state);
  DigestNetwork(d, network);
  return d.Hex();
}

}  // namespace flowsched::graph_manager
