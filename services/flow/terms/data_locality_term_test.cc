#include "services/flow/terms/data_locality_term.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/cluster_event.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using ::testing::ElementsAre;

// Two racks of two computers, r1 = {m1, m2}, r2 = {m3, m4}, and one task
// per test; psi = 1 and xi = 2 cost 1 and 2 units per MiB.
class DataLocalityTermTest : public ::testing::Test {
 protected:
  DataLocalityTermTest() {
    for (uint64_t m = 1; m <= 4; ++m) {
      Apply(
          cluster::MachineAdded{MachineId(m), m <= 2 ? "r1" : "r2", {}, 1, {}});
      racks_[m <= 2 ? "r1" : "r2"].push_back(MachineId(m));
    }
  }
  void Apply(cluster::EventBody body) {
    cluster::ChangeSet changes;
    ASSERT_THAT(
        state_.Apply(cluster::ClusterEvent{"e", 0, "t", body}, 0, changes),
        IsOk());
  }
  // Task 1 of job 1 reading `total_mib`, of which `input` (in MiB).
  const cluster::Task& Submit(int64_t total_mib,
                              std::vector<cluster::DataLocality> input) {
    for (cluster::DataLocality& d : input) d.bytes *= kMiB;
    Apply(cluster::JobSubmitted{
        JobId(1),
        "j",
        0,
        {{.id = TaskId(1), .input = input, .input_bytes = total_mib * kMiB}}});
    return *state_.FindTask(TaskId(1));
  }
  DataLocalityTerm Term(DataLocalityParams params = {}) {
    DataLocalityTerm term(params);
    term.Index(racks_);
    return term;
  }

  cluster::ClusterState state_;
  DataLocalityTerm::Racks racks_;
};

// The appendix example worked by hand: 1000 MiB, 800 on m1 and 200 on m3.
TEST_F(DataLocalityTermTest, PricesComputersRacksAndTheClusterByHand) {
  const cluster::Task& task =
      Submit(1000, {{MachineId(1), "", 800}, {MachineId(3), "", 200}});
  const DataLocalityTerm term = Term();
  const DataLocalityTerm::TaskPrices prices = term.Price(task, state_);
  // gamma_m1 = psi (800 - 800) + xi (1000 - 800); gamma_m3 = xi 800.
  EXPECT_THAT(prices.computers, ElementsAre(MachineId(1), MachineId(3)));
  EXPECT_THAT(prices.computer_costs, ElementsAre(400, 1600));
  // rho_r1 = psi (800 - 0) + xi 200 (m2 holds nothing); rho_r2 likewise.
  EXPECT_THAT(prices.racks, ElementsAre("r1", "r2"));
  EXPECT_THAT(prices.rack_costs, ElementsAre(1200, 1800));
  // alpha = psi R^X + xi X^X = 800 + 2 (1000 - 200).
  EXPECT_EQ(prices.alpha, 2400);
  EXPECT_EQ(prices.cluster_core_bytes, 800 * kMiB);
  // d*: exact on a preferred computer, the rack's worst case on another
  // computer of a preferred rack.
  EXPECT_EQ(term.RunningCost(MachineId(1), "r1", prices), 400);
  EXPECT_EQ(term.RunningCost(MachineId(2), "r1", prices), 1200);
  ASSERT_NE(term.RackOf(MachineId(4)), nullptr);
  EXPECT_EQ(*term.RackOf(MachineId(4)), "r2");
  EXPECT_EQ(term.RackOf(MachineId(9)), nullptr);
}

// Thresholds and the cap on preferences: with delta 0.3 only m1 and r1
// hold enough; with max_preferences 0 nothing is preferred and a running
// task is priced at (X^X / P, X^X).
TEST_F(DataLocalityTermTest, ThresholdsAndTheCapChooseThePreferences) {
  const cluster::Task& task =
      Submit(1000, {{MachineId(1), "", 800}, {MachineId(3), "", 200}});
  DataLocalityTerm strict =
      Term({.delta_computer = 0.3, .delta_rack = 0.3, .max_preferences = 10});
  DataLocalityTerm::TaskPrices prices = strict.Price(task, state_);
  EXPECT_THAT(prices.computers, ElementsAre(MachineId(1)));
  EXPECT_THAT(prices.racks, ElementsAre("r1"));
  DataLocalityTerm none = Term({.max_preferences = 0});
  prices = none.Price(task, state_);
  EXPECT_TRUE(prices.computers.empty());
  EXPECT_TRUE(prices.racks.empty());
  EXPECT_EQ(prices.alpha, 2400);
  // (800 / 2) across a rack switch and 800 across the core: 400 + 1600.
  EXPECT_EQ(none.RunningCost(MachineId(1), "r1", prices), 2000);
}

// Every computer of a rack holding some input makes the rack's worst case
// read only what its emptiest computer lacks; input nowhere known is read
// across the core from everywhere; prices are capped.
TEST_F(DataLocalityTermTest, RackWorstCasesAndUnknownInputAndTheCap) {
  const cluster::Task& task = Submit(
      1000, {{MachineId(1), "", 300}, {MachineId(2), "", 100}});  // 600 unknown
  const DataLocalityTerm::TaskPrices prices = Term().Price(task, state_);
  // r1: B = 400, smallest L = 100: psi 300 + xi 600.
  ASSERT_THAT(prices.racks, ElementsAre("r1"));
  EXPECT_THAT(prices.rack_costs, ElementsAre(1500));
  // The cluster: R^X = 300 (r1's), X^X = 1000 (r2 holds none).
  EXPECT_EQ(prices.alpha, 300 + 2000);
  EXPECT_EQ(Term({.cap = 1000}).Price(task, state_).alpha, 1000);
  EXPECT_EQ(Term({.cap = 1000}).DataCost(int64_t{1} << 50, 0), 1000);
  EXPECT_EQ(Term().DataCost(0, 0), 0);
}

}  // namespace
}  // namespace flowsched::flow
