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
  std::map<std::string, int64_t> stated;     // rack entries
  std::map<std::string, int64_t> machines;   // sums of machine entries
  std::map<std::string, int64_t> largest;    // largest machine's bytes
  int64_t nowhere = 0;                       // on machines without a rack
  for (const DataLocality& entry : input) {
    if (entry.bytes <= 0) continue;
    if (entry.machine.value() == 0) {
      if (!entry.rack.empty()) stated[entry.rack] += entry.bytes;
      continue;
    }
    const std::string* rack = rack_of(entry);
    if (rack == nullptr) {
      nowhere += entry.bytes;
      continue;
    }
    const int64_t on = where.on_machine[entry.machine] += entry.bytes;
    machines[*rack] += entry.bytes;
    int64_t& most = largest[*rack];
    most = std::max(most, on);
  }
  // A rack's machine sums count where no rack entry says otherwise; a rack
  // entry below what one of its machines holds is raised to it.
  where.in_rack = std::move(machines);
  for (const auto& [rack, bytes] : stated) where.in_rack[rack] = bytes;
  int64_t sum = 0;
  int64_t most = 0;
  for (auto& [rack, bytes] : where.in_rack) {
    bytes = std::max(bytes, Find(largest, rack));
    sum += bytes;
    most = std::max(most, bytes);
  }
  where.total = std::max(input_bytes > 0 ? input_bytes : sum + nowhere, most);
  return where;
}

}  // namespace flowsched::cluster
