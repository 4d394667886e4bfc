#include "services/cluster/input_locality.h"

#include <algorithm>

namespace flowsched::cluster {
namespace {

int64_t Find(const auto& bytes, const auto& key) {
  auto it = bytes.find(key);
  return it == bytes.end() ? 0 : it->second;
}

}  // namespace

int64_t InputLocation::OnMachine(MachineId machine) const {
  return Find(on_machine, machine);
}

int64_t InputLocation::InRack(const std::string& rack) const {
  return Find(in_rack, rack);
}

InputLocation LocateInput(
    const std::vector<DataLocality>& input, int64_t input_bytes,
    absl::FunctionRef<const std::string*(const DataLocality&)> rack_of) {
  InputLocation where;
  struct RackSum {
    int64_t sum = 0;      // of its machine entries
    int64_t largest = 0;  // one machine's bytes
  };
  std::map<std::string, RackSum> machines;
  std::map<std::string, int64_t> stated;    // rack entries
  std::map<std::string, int64_t> departed;  // by the rack an entry names
  int64_t nowhere = 0;                      // on machines without a rack
  for (const DataLocality& entry : input) {
    if (entry.bytes <= 0) continue;
    if (entry.machine.value() == 0) {
      if (!entry.rack.empty()) stated[entry.rack] += entry.bytes;
      continue;
    }
    const std::string* rack = rack_of(entry);
    if (rack == nullptr) {
      nowhere += entry.bytes;
      if (!entry.rack.empty()) departed[entry.rack] += entry.bytes;
      continue;
    }
    const int64_t on = where.on_machine[entry.machine] += entry.bytes;
    RackSum& in = machines[*rack];
    in.sum += entry.bytes;
    in.largest = std::max(in.largest, on);
  }
  // Without a rack entry a rack holds its machines' sum. A rack entry
  // states the rack's bytes; a listed holder that is gone takes at most
  // its own bytes with it (it may have held the only copy), and what a
  // remaining machine holds is in the rack whatever the entry says.
  for (const auto& [rack, bytes] : stated) {
    auto gone = departed.find(rack);
    const int64_t left = std::max<int64_t>(
        0, bytes - (gone == departed.end() ? 0 : gone->second));
    if (left > 0) where.in_rack[rack] = left;
  }
  for (const auto& [rack, in] : machines) {
    auto it = where.in_rack.find(rack);
    if (!stated.contains(rack)) {
      where.in_rack[rack] = in.sum;
    } else if (it == where.in_rack.end() || it->second < in.largest) {
      where.in_rack[rack] = in.largest;
    }
  }
  int64_t sum = 0;
  int64_t most = 0;
  for (const auto& [rack, bytes] : where.in_rack) {
    sum += bytes;
    most = std::max(most, bytes);
  }
  where.total = std::max(input_bytes > 0 ? input_bytes : sum + nowhere, most);
  return where;
}

InputLocation LocateInput(const TaskSpec& spec, const ClusterState& state) {
  return LocateInput(spec.input, spec.input_bytes,
                     [&](const DataLocality& entry) -> const std::string* {
                       const Machine* machine =
                           state.FindMachine(entry.machine);
                       return machine == nullptr ? nullptr : &machine->rack;
                     });
}

}  // namespace flowsched::cluster
