#pragma once

// Quincy's data costs (SOSP 2009 section 4.2): what reading a task's input
// costs from a computer, a rack or anywhere, psi per GB across a rack
// switch and xi per GB across the core switch, in paper units
// (quincy_units.h), each price capped at `cap` (the paper's Omega).
//
// Data sizes come from the task's DataLocality entries and the machines'
// racks, read by cluster::LocateInput: L_m bytes on computer m (a
// replicated block counts on each computer holding a copy), B_l bytes in
// rack l (its rack entry, each block once, or else the sum of its
// computers'), T = input_bytes (or the racks' sum when it is 0). Bytes of T
// that no entry places are remote from every computer. On computer m in
// rack l a task reads R = B_l - L_m across the rack switch and X = T - B_l
// across the core switch; a rack's worst case uses the smallest L_m in the
// rack, and the cluster's worst case (R^X, X^X) the largest R and X over
// all racks. Preferred are the computers and racks holding more than
// delta_computer (delta_rack) of T, at most max_preferences of each, most
// bytes first.
//
// Pricing a task takes time proportional to its locality entries: racks
// without input data all share one price, so they are never enumerated.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"

namespace flowsched::cluster {
struct InputLocation;
}  // namespace flowsched::cluster

namespace flowsched::flow {

struct DataLocalityParams {
  double psi = 1.0;  // per GB read across a rack switch
  double xi = 2.0;   // per GB read across the core switch
  double delta_computer = 0.1;
  double delta_rack = 0.1;
  size_t max_preferences = 10;
  int64_t cap = int64_t{1} << 20;
};

class DataLocalityTerm {
 public:
  using Racks = std::map<std::string, std::vector<MachineId>>;

  explicit DataLocalityTerm(DataLocalityParams params) : params_(params) {}

  // The racks and their computers prices are taken over. REQUIRES: `racks`
  // outlives this term's use, or is indexed again (lookups point into it).
  void Index(const Racks& racks);

  // What a task's data placement costs: alpha to the cluster aggregator,
  // rho_l to each preferred rack, gamma_m to each preferred computer.
  struct TaskPrices {
    std::vector<MachineId> computers;     // preferred, most bytes first
    std::vector<int64_t> computer_costs;  // gamma_m, as `computers`
    std::vector<std::string> racks;       // preferred, most bytes first
    std::vector<int64_t> rack_costs;      // rho_l, as `racks`
    int64_t alpha = 0;
    int64_t cluster_core_bytes = 0;  // X^X
  };
  // O(locality entries + preferences * log).
  [[nodiscard]] TaskPrices Price(const cluster::Task& task,
                                 const cluster::ClusterState& state) const;
  // The rack of an indexed machine; null if it is not indexed.
  [[nodiscard]] const std::string* RackOf(MachineId machine) const;
  // d* of a task running on `machine` in `rack`: exact for a preferred
  // computer; otherwise the paper's approximations, its rack's worst case
  // when the rack is preferred and (X^X / P, X^X) with P racks otherwise.
  [[nodiscard]] int64_t RunningCost(MachineId machine, const std::string& rack,
                                    const TaskPrices& prices) const;
  // Reading `rack_bytes` across a rack switch and `core_bytes` across the
  // core switch.
  [[nodiscard]] int64_t DataCost(int64_t rack_bytes, int64_t core_bytes) const;

 private:
  // alpha and cluster_core_bytes of `prices`; returns the cost of each rack
  // of locality.in_rack (as that list; 0 for one not indexed).
  std::vector<int64_t> PriceRacks(const cluster::InputLocation& locality,
                                  TaskPrices& prices) const;

  DataLocalityParams params_;
  size_t rack_count_ = 0;
  // Each computer's rack and each rack's size, for the lookups Price makes
  // per input replica (views and pointers into the indexed racks).
  absl::flat_hash_map<MachineId, const std::string*> rack_of_;
  absl::flat_hash_map<std::string_view, size_t> rack_sizes_;
};

}  // namespace flowsched::flow
