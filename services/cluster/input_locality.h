#pragma once

// Where a task's input is, as Quincy prices it (section 4.2): the bytes on
// each machine (L_m), in each rack (B_l) and in all (T). Every reader of
// TaskSpec::input goes through here so that the policy that prices a
// placement, the baselines that choose one and the simulator that scores
// it agree on what "local" and "in the rack" mean.
//
// Entries may overlap: a replicated block is listed on every machine that
// holds a replica. A rack entry (machine 0) states the bytes stored in
// that rack, each counted once however many of its machines hold a copy;
// a rack without one holds the sum of its machines' entries (each byte on
// one machine there). A machine entry may name its machine's rack too:
// once that machine has left, the rack's stated bytes lose at most the
// entry's bytes (it may have held the only copy; never over-credited).
// T is input_bytes, or when that is 0 the sum over racks and over machines
// without one; it is never below a rack's bytes, nor a rack's below one
// of its machines'.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"

namespace flowsched::cluster {

// Sorted by key, each key once: a task names a few machines and racks, so
// flat vectors (not maps) keep a lookup per replica cheap for the millions
// of tasks a large cell prices.
struct InputLocation {
  int64_t total = 0;                                      // T
  std::vector<std::pair<MachineId, int64_t>> on_machine;  // L_m
  std::vector<std::pair<std::string, int64_t>> in_rack;   // B_l

  // 0 for a machine or rack holding none of the input. O(log entries).
  [[nodiscard]] int64_t OnMachine(MachineId machine) const;
  [[nodiscard]] int64_t InRack(std::string_view rack) const;
  // The position of the rack's entry in in_rack, in_rack.size() if none.
  // O(log entries).
  [[nodiscard]] size_t RackEntry(std::string_view rack) const;
};

// `rack_of(entry)` names the rack of a machine entry's machine, or returns
// nullptr when that machine's data counts as remote from every computer
// (the machine left the cluster, or is not there yet); the same rack for
// every entry of one machine, in a string that outlives the call. Entries
// with bytes <= 0 are ignored.
InputLocation LocateInput(
    const std::vector<DataLocality>& input, int64_t input_bytes,
    absl::FunctionRef<const std::string*(const DataLocality&)> rack_of);

// With the racks `state` knows: data on a machine that left the cluster is
// remote from every computer.
InputLocation LocateInput(const TaskSpec& spec, const ClusterState& state);

}  // namespace flowsched::cluster
