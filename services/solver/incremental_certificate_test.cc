#include "services/solver/incremental_certificate.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/incremental_sim_testutil.h"
#include "services/solver/incremental_solver.h"
#include "services/solver/lemon_reference.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// A path 0 -> 1 -> 2 carrying 2 units (capacity 3 each, cost 1 and 2),
// with a parallel arc 0 -> 2 (capacity 5, cost 4) left empty: optimal with
// potentials p = (0, -1, -3).
class SmallCertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_THAT(cert_.SetSupply(0, 2), IsOk());
    ASSERT_THAT(cert_.SetSupply(1, 0), IsOk());
    ASSERT_THAT(cert_.SetSupply(2, -2), IsOk());
    ASSERT_THAT(cert_.SetArc(0, 0, 1, 3, 1), IsOk());
    ASSERT_THAT(cert_.SetArc(1, 1, 2, 3, 2), IsOk());
    ASSERT_THAT(cert_.SetArc(2, 0, 2, 5, 4), IsOk());
    cert_.SetFlow(0, 2);
    cert_.SetFlow(1, 2);
    cert_.SetPotential(1, -1);
    cert_.SetPotential(2, -3);
    ASSERT_THAT(cert_.Certify(6), IsOk());
    ASSERT_EQ(cert_.last_arcs_checked(), 3u);  // the first check is full
  }
  IncrementalCertificate cert_;
};

TEST_F(SmallCertificateTest, NothingChangedChecksNothing) {
  EXPECT_THAT(cert_.Certify(6), IsOk());
  EXPECT_EQ(cert_.last_arcs_checked(), 0u);
  EXPECT_EQ(cert_.last_nodes_checked(), 0u);
}

TEST_F(SmallCertificateTest, APotentialAloneBreaksTheArcsAtItsNode) {
  // rc(0 -> 2) = 4 - 0 + p2 < 0 with p2 = -5 while the arc has room.
  cert_.SetPotential(2, -5);
  EXPECT_THAT(cert_.Certify(6),
              StatusIs(absl::StatusCode::kInternal, "complementary slackness"));
  // A failed check leaves everything to be checked again.
  cert_.SetPotential(2, -3);
  EXPECT_THAT(cert_.Certify(6), IsOk());
  EXPECT_EQ(cert_.last_arcs_checked(), 3u);
}

TEST_F(SmallCertificateTest, WhenEveryPotentialMovesEachArcIsCheckedOnce) {
  // The same shift everywhere keeps every reduced cost: still optimal. Arc
  // by arc through the moved nodes would read each arc twice; the check
  // reads the network once instead.
  cert_.SetPotential(0, 10);
  cert_.SetPotential(1, 9);
  cert_.SetPotential(2, 7);
  EXPECT_THAT(cert_.Certify(6), IsOk());
  EXPECT_EQ(cert_.last_arcs_checked(), 3u);
  EXPECT_EQ(cert_.last_nodes_checked(), 3u);
}

TEST_F(SmallCertificateTest, FlowThatDoesNotBalanceIsRefused) {
  cert_.SetFlow(1, 1);
  EXPECT_THAT(cert_.Certify(4),
              StatusIs(absl::StatusCode::kInternal, "outflow - inflow"));
}

TEST_F(SmallCertificateTest, FlowAboveCapacityIsRefused) {
  ASSERT_THAT(cert_.SetArc(1, 1, 2, 1, 2), IsOk());
  EXPECT_THAT(cert_.Certify(6),
              StatusIs(absl::StatusCode::kInternal, "outside [0, 1]"));
}

TEST_F(SmallCertificateTest, AWrongTotalCostIsRefused) {
  EXPECT_THAT(cert_.Certify(7),
              StatusIs(absl::StatusCode::kInternal, "total cost 7 claimed"));
}

TEST_F(SmallCertificateTest, RejectedChangesChangeNothing) {
  EXPECT_THAT(cert_.RemoveNode(1),
              StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  EXPECT_THAT(cert_.SetArc(3, 0, 9, 1, 1),
              StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(cert_.SetArc(3, 0, 1, -1, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(cert_.SetArc(3, 0, 1, 1, kMaxArcCost + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(cert_.SetSupply(5, kMaxArcCapacity + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(cert_.RemoveArc(7), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_FALSE(cert_.NodeExists(5));
  EXPECT_FALSE(cert_.HandleLive(3));
  EXPECT_THAT(cert_.CertifyAll(6), IsOk());
}

TEST_F(SmallCertificateTest, MovedAndRemovedArcsKeepTheIncidentListsTrue) {
  // Reroute the flow over the direct arc, then move the old path's arcs
  // about: every list swap must leave CertifyAll's recount equal to the
  // kept balances, and potentials then reach exactly the arcs at a node.
  ASSERT_THAT(cert_.SetArc(2, 0, 2, 5, 0), IsOk());  // now the cheapest
  cert_.SetFlow(0, 0);
  cert_.SetFlow(1, 0);
  cert_.SetFlow(2, 2);
  cert_.SetPotential(1, 0);
  cert_.SetPotential(2, 0);
  ASSERT_THAT(cert_.Certify(0), IsOk());
  ASSERT_THAT(cert_.SetArc(0, 2, 1, 3, 1), IsOk());  // new ends
  ASSERT_THAT(cert_.SetArc(3, 1, 1, 4, 0), IsOk());  // a self-loop
  ASSERT_THAT(cert_.RemoveArc(1), IsOk());
  ASSERT_THAT(cert_.SetArc(4, 1, 0, 2, 3), IsOk());
  ASSERT_THAT(cert_.RemoveArc(3), IsOk());
  EXPECT_THAT(cert_.Certify(0), IsOk());
  EXPECT_THAT(cert_.CertifyAll(0), IsOk());
  // Node 1's arcs are now 2 -> 1 (cost 1) and 1 -> 0 (cost 3), both
  // empty: with p1 = -2, rc(2 -> 1) = 1 - 0 - 2 < 0 while it has room.
  cert_.SetPotential(1, -2);
  EXPECT_THAT(cert_.Certify(0),
              StatusIs(absl::StatusCode::kInternal, "(2 -> 1)"));
  cert_.SetPotential(1, 0);
  ASSERT_THAT(cert_.RemoveArc(0), IsOk());
  ASSERT_THAT(cert_.RemoveArc(4), IsOk());
  ASSERT_THAT(cert_.RemoveNode(1), IsOk());
  EXPECT_THAT(cert_.Certify(0), IsOk());
  EXPECT_FALSE(cert_.NodeExists(1));
}

// Feeds every change to the solver and, when the solver takes it, to the
// certificate: what IncrementalMirror does.
struct Tee {
  IncrementalSolver& solver;
  IncrementalCertificate& cert;
  absl::Status SetSupply(uint32_t node, int64_t supply) {
    absl::Status s = solver.SetSupply(node, supply);
    if (s.ok()) {
      EXPECT_THAT(cert.SetSupply(node, supply), IsOk());
    }
    return s;
  }
  absl::Status SetArc(uint32_t h, uint32_t src, uint32_t dst, int64_t cap,
                      int64_t cost) {
    absl::Status s = solver.SetArc(h, src, dst, cap, cost);
    if (s.ok()) {
      EXPECT_THAT(cert.SetArc(h, src, dst, cap, cost), IsOk());
    }
    return s;
  }
  absl::Status RemoveArc(uint32_t h) {
    absl::Status s = solver.RemoveArc(h);
    if (s.ok()) {
      EXPECT_THAT(cert.RemoveArc(h), IsOk());
    }
    return s;
  }
  absl::Status RemoveNode(uint32_t node) {
    absl::Status s = solver.RemoveNode(node);
    if (s.ok()) {
      EXPECT_THAT(cert.RemoveNode(node), IsOk());
    }
    return s;
  }
};

// Hands the certificate the solver's claims for what it reported changed,
// or for everything.
void Report(const IncrementalSolver& solver,
            const IncrementalSolver::SolutionChanges& changes, bool everything,
            IncrementalCertificate& cert) {
  if (changes.everything || everything) {
    for (uint32_t h = 0; h < cert.handle_limit(); ++h) {
      cert.SetFlow(h, solver.flow(h));
    }
    for (uint32_t v = 0; v < cert.node_limit(); ++v) {
      cert.SetPotential(v, solver.potential(v));
    }
    return;
  }
  for (uint32_t h : changes.handles) cert.SetFlow(h, solver.flow(h));
  for (uint32_t v : changes.nodes) cert.SetPotential(v, solver.potential(v));
}

// The certificate's copy is what the full checker and LEMON call optimal.
void ExpectCopyOptimal(const IncrementalCertificate& cert) {
  McmfProblem problem;
  McmfSolution solution;
  std::vector<uint32_t> handles;
  cert.Export(problem, solution, handles);
  EXPECT_THAT(CheckOptimalFlow(problem, solution), IsOk());
  const testgen::LemonResult lemon = testgen::SolveWithLemon(problem);
  ASSERT_EQ(lemon.outcome, McmfOutcome::kOptimal);
  EXPECT_EQ(solution.total_cost, lemon.total_cost);
}

// Random scheduling rounds: the solver's reported changes pass the
// incremental check, which reads a small part of the network, and agree
// with the full check and with LEMON.
TEST(IncrementalCertificateTest, ReportedChangesCertifyEveryOptimalRound) {
  uint64_t checked = 0;
  uint64_t full = 0;
  int rounds = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    IncrementalSolver solver;
    IncrementalCertificate cert;
    Tee tee{solver, cert};
    testgen::SimOptions options{.machine_count = 40,
                                .rack_count = 4,
                                .job_count = 6,
                                .initial_tasks = 200,
                                .utilisation = 0.8};
    testgen::BasicSchedulingSim<Tee> sim(seed, options, tee);
    ASSERT_THAT(sim.Build(), IsOk());
    IncrementalSolver::SolutionChanges changes;
    for (int batch = 0; batch < 150; ++batch) {
      if (batch % 40 == 20) sim.SetUnscheduledFraction(0.3);
      if (batch % 40 == 25) sim.FailRandomMachine();
      if (batch % 40 == 30) sim.SetUnscheduledFraction(1.0);
      const int events = static_cast<int>(sim.Int(1, 8));
      for (int e = 0; e < events; ++e) sim.RandomEvent();
      ASSERT_THAT(sim.status(), IsOk());
      absl::StatusOr<IncrementalResult> result = solver.Solve();
      ASSERT_THAT(result, IsOk());
      // An infeasible round's changes stay in the log for the next one.
      if (result->outcome != McmfOutcome::kOptimal) continue;
      solver.TakeChanges(changes);
      Report(solver, changes, false, cert);
      ASSERT_THAT(cert.Certify(result->total_cost), IsOk())
          << "seed " << seed << " batch " << batch;
      checked += cert.last_arcs_checked();
      uint32_t live = 0;
      for (uint32_t h = 0; h < cert.handle_limit(); ++h) {
        live += cert.HandleLive(h);
        EXPECT_EQ(cert.flow(h), solver.flow(h));
      }
      // The copy's potentials are the solver's too (an unlogged potential
      // change would pass only while no arc at the node broke).
      McmfProblem copy_problem;
      McmfSolution copy;
      std::vector<uint32_t> copy_handles;
      cert.Export(copy_problem, copy, copy_handles);
      for (uint32_t v = 0; v < cert.node_limit(); ++v) {
        if (cert.NodeExists(v)) {
          EXPECT_EQ(copy.potentials[v], solver.potential(v)) << "node " << v;
        }
      }
      full += live;
      ++rounds;
      if (batch % 10 == 0) {
        ExpectCopyOptimal(cert);
        EXPECT_THAT(cert.CertifyAll(result->total_cost), IsOk());
      }
      if (HasFailure()) FAIL() << "seed " << seed << " batch " << batch;
    }
  }
  EXPECT_GE(rounds, 300);
  // The incremental checks read well under half of what full checks would.
  EXPECT_LT(checked * 2, full);
}

// Soundness: whatever the solver reports -- changes left out, values
// corrupted -- a passed Certify means the copy is optimal, and a failed one
// is cured by reading everything.
TEST(IncrementalCertificateTest, PassesOnlyWhatIsOptimalWhateverIsReported) {
  std::mt19937_64 rng(42);
  int refused = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    IncrementalSolver solver;
    IncrementalCertificate cert;
    Tee tee{solver, cert};
    testgen::SimOptions options{.machine_count = 20,
                                .rack_count = 4,
                                .job_count = 5,
                                .initial_tasks = 80,
                                .utilisation = 0.7};
    testgen::BasicSchedulingSim<Tee> sim(seed + 100, options, tee);
    ASSERT_THAT(sim.Build(), IsOk());
    IncrementalSolver::SolutionChanges changes;
    for (int batch = 0; batch < 200; ++batch) {
      const int events = static_cast<int>(sim.Int(1, 6));
      for (int e = 0; e < events; ++e) sim.RandomEvent();
      ASSERT_THAT(sim.status(), IsOk());
      absl::StatusOr<IncrementalResult> result = solver.Solve();
      ASSERT_THAT(result, IsOk());
      if (result->outcome != McmfOutcome::kOptimal) continue;
      solver.TakeChanges(changes);
      const bool tamper = !changes.everything && batch % 3 == 1;
      if (tamper) {
        // Drop one reported change, or report one value wrong.
        if (!changes.handles.empty() && rng() % 2 == 0) {
          changes.handles.erase(
              changes.handles.begin() +
              static_cast<std::ptrdiff_t>(rng() % changes.handles.size()));
        } else if (!changes.nodes.empty() && rng() % 2 == 0) {
          changes.nodes.erase(
              changes.nodes.begin() +
              static_cast<std::ptrdiff_t>(rng() % changes.nodes.size()));
        }
      }
      Report(solver, changes, false, cert);
      if (tamper && rng() % 2 == 0 && cert.handle_limit() > 0) {
        const auto h = static_cast<uint32_t>(rng() % cert.handle_limit());
        cert.SetFlow(h, cert.flow(h) + 1);
      }
      if (absl::Status s = cert.Certify(result->total_cost); s.ok()) {
        ExpectCopyOptimal(cert);
      } else {
        ++refused;
        Report(solver, changes, true, cert);
        ASSERT_THAT(cert.Certify(result->total_cost), IsOk());
        EXPECT_EQ(cert.last_arcs_checked(), [&] {
          uint64_t live = 0;
          for (uint32_t h = 0; h < cert.handle_limit(); ++h) {
            live += cert.HandleLive(h);
          }
          return live;
        }());
      }
      if (HasFailure()) FAIL() << "seed " << seed << " batch " << batch;
    }
  }
  // Tampering is caught (some of it is harmless: a dropped change of a
  // value the solver set back, or a copy that is optimal all the same).
  EXPECT_GT(refused, 10);
}

}  // namespace
}  // namespace flowsched::solver
