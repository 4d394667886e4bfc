#include "services/flow/terms/data_locality_term.h"

#include <algorithm>
#include <utility>

#include "services/cluster/input_locality.h"
#include "services/flow/terms/quincy_units.h"

namespace flowsched::flow {
namespace {

// Up to `limit` keys whose bytes exceed `threshold`, most bytes first.
template <typename Key, typename Known>
std::vector<Key> Preferred(const std::vector<std::pair<Key, int64_t>>& bytes,
                           double threshold, size_t limit, const Known& known) {
  std::vector<std::pair<int64_t, Key>> candidates;
  for (const auto& [key, count] : bytes) {
    if (static_cast<double>(count) > threshold && known(key)) {
      candidates.emplace_back(count, key);
    }
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Key> keys;
  for (size_t i = 0; i < candidates.size() && i < limit; ++i) {
    keys.push_back(candidates[i].second);
  }
  return keys;
}

}  // namespace

void DataLocalityTerm::Index(const Racks& racks) {
  rack_of_.clear();
  rack_sizes_.clear();
  rack_count_ = racks.size();
  for (const auto& [rack, machines] : racks) {
    rack_sizes_[rack] = machines.size();
    for (MachineId id : machines) rack_of_[id] = &rack;
  }
}

const std::string* DataLocalityTerm::RackOf(MachineId machine) const {
  auto where = rack_of_.find(machine);
  return where == rack_of_.end() ? nullptr : where->second;
}

int64_t DataLocalityTerm::DataCost(int64_t rack_bytes,
                                   int64_t core_bytes) const {
  return quincy_units::RoundToUnits(
      (params_.psi * static_cast<double>(rack_bytes) +
       params_.xi * static_cast<double>(core_bytes)) *
          quincy_units::kUnitsPerPaperUnit / quincy_units::kBytesPerGb,
      params_.cap);
}

std::vector<int64_t> DataLocalityTerm::PriceRacks(
    const cluster::InputLocation& locality, TaskPrices& prices) const {
  const int64_t total = locality.total;
  // Rack worst cases R^R_l, X^R_l and the cluster's R^X, X^X. A rack
  // without input data has B_l = 0 and R^R_l = 0, so only the racks named
  // by the task's entries are visited: B_l, and the smallest L_m of the
  // rack when every one of its computers holds some input (else 0). Kept
  // per entry of locality.in_rack, which is sorted by rack.
  struct RackBytes {
    size_t size = 0;  // computers in the rack; 0: not indexed
    size_t with_data = 0;
    int64_t smallest = 0;
  };
  const auto& in_rack = locality.in_rack;
  std::vector<RackBytes> data_racks(in_rack.size());
  size_t known_racks = 0;
  for (size_t i = 0; i < in_rack.size(); ++i) {
    auto size = rack_sizes_.find(in_rack[i].first);
    if (size == rack_sizes_.end()) continue;
    data_racks[i] = {size->second, 0, total};
    ++known_racks;
  }
  for (const auto& [id, bytes] : locality.on_machine) {
    auto where = rack_of_.find(id);
    if (where == rack_of_.end()) continue;
    const size_t entry = locality.RackEntry(*where->second);
    if (entry == in_rack.size() || data_racks[entry].size == 0) continue;
    RackBytes& bytes_there = data_racks[entry];
    ++bytes_there.with_data;
    bytes_there.smallest = std::min(bytes_there.smallest, bytes);
  }
  int64_t worst_rack_bytes = 0;
  int64_t min_rack_bytes = total;
  if (known_racks < rack_count_) {
    min_rack_bytes = std::min<int64_t>(min_rack_bytes, 0);
  }
  std::vector<int64_t> costs(in_rack.size(), 0);
  for (size_t i = 0; i < in_rack.size(); ++i) {
    const RackBytes& bytes = data_racks[i];
    if (bytes.size == 0) continue;
    const int64_t in_bytes = in_rack[i].second;
    const int64_t min_local =
        bytes.with_data == bytes.size ? bytes.smallest : 0;
    worst_rack_bytes = std::max(worst_rack_bytes, in_bytes - min_local);
    min_rack_bytes = std::min(min_rack_bytes, in_bytes);
    costs[i] = DataCost(in_bytes - min_local, total - in_bytes);
  }
  if (rack_count_ == 0) min_rack_bytes = 0;
  prices.cluster_core_bytes = total - min_rack_bytes;
  prices.alpha = DataCost(worst_rack_bytes, prices.cluster_core_bytes);
  return costs;
}

DataLocalityTerm::TaskPrices DataLocalityTerm::Price(
    const cluster::Task& task, const cluster::ClusterState& state) const {
  const cluster::InputLocation locality =
      cluster::LocateInput(task.spec, state);
  const int64_t total = locality.total;
  TaskPrices prices;
  const std::vector<int64_t> rack_costs = PriceRacks(locality, prices);
  const double t = static_cast<double>(total);
  prices.computers = Preferred<MachineId>(
      locality.on_machine, params_.delta_computer * t, params_.max_preferences,
      [&](const MachineId& id) { return rack_of_.contains(id); });
  prices.racks = Preferred<std::string>(
      locality.in_rack, params_.delta_rack * t, params_.max_preferences,
      [&](const std::string& rack) { return rack_sizes_.contains(rack); });
  for (const std::string& rack : prices.racks) {
    // A preferred rack has an entry (and is indexed).
    prices.rack_costs.push_back(rack_costs[locality.RackEntry(rack)]);
  }
  for (MachineId id : prices.computers) {
    const std::string& rack = *rack_of_.at(id);
    const int64_t in_rack = locality.InRack(rack);
    prices.computer_costs.push_back(
        DataCost(in_rack - locality.OnMachine(id), total - in_rack));
  }
  return prices;
}

int64_t DataLocalityTerm::RunningCost(MachineId machine,
                                      const std::string& rack,
                                      const TaskPrices& prices) const {
  auto computer =
      std::find(prices.computers.begin(), prices.computers.end(), machine);
  if (computer != prices.computers.end()) {
    return prices.computer_costs[static_cast<size_t>(computer -
                                                     prices.computers.begin())];
  }
  auto preferred = std::find(prices.racks.begin(), prices.racks.end(), rack);
  if (preferred != prices.racks.end()) {
    return prices
        .rack_costs[static_cast<size_t>(preferred - prices.racks.begin())];
  }
  const auto p = static_cast<int64_t>(rack_count_);
  return DataCost(prices.cluster_core_bytes / std::max<int64_t>(1, p),
                  prices.cluster_core_bytes);
}

}  // namespace flowsched::flow
