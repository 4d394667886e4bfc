#pragma once

// Guarantee 6 (no result published unless checked feasible and optimal) at
// the cost of what a round changed. The certificate keeps its own copy of
// an incremental solver's problem, fed the same changes as the solver, and
// of the solution (flow per arc handle, potential per node), fed the
// values the solver claims for what it says it changed. It checks only
// what could have broken since its last passed check:
//   - an arc whose capacity, cost or flow changed, or whose tail's or
//     head's potential changed: 0 <= flow <= capacity and complementary
//     slackness (rc = cost - p[src] + p[dst]; flow < capacity => rc >= 0,
//     flow > 0 => rc <= 0);
//   - a node whose supply changed or an arc at it changed flow, was added
//     or removed: outflow - inflow == supply;
//   - supplies sum to zero, and the claimed total cost equals
//     sum(cost * flow), both kept as running Int128 sums.
// Why this is sound: every condition reads only an arc's own values and
// its endpoints' potentials, or a node's supply and the flows of its arcs.
// A condition none of whose inputs changed in the certificate's copy holds
// because it held at the last passed check; the inputs change only through
// the methods below, each of which marks what it touched. So after a
// passed Certify the whole copy is a feasible flow with potentials that
// prove it optimal (the argument of flow_checker.h), whatever the solver
// did or failed to report: an unreported change of the solver's makes the
// copy differ from the solver, and the copy either fails (the caller then
// reads everything and checks it all) or is still optimal. What a caller
// publishes must therefore be read from this copy (flow()), not from the
// solver. CertifyAll checks every arc and node and recomputes the sums from
// scratch; run it every N rounds and after a failure, so that a slip in
// this bookkeeping is caught as well.
//
// Thread-safety: none.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "services/solver/int128.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

class IncrementalCertificate {
 public:
  // The problem's changes, validated like IncrementalSolver validates them
  // (the same status codes); a rejected change changes nothing. A new
  // node's potential is 0; a removed arc's flow is cancelled.
  absl::Status SetSupply(uint32_t node, int64_t supply);
  absl::Status RemoveNode(uint32_t node);  // FailedPrecondition with arcs
  absl::Status SetArc(uint32_t handle, uint32_t src, uint32_t dst,
                      int64_t capacity, int64_t cost);
  absl::Status RemoveArc(uint32_t handle);

  // The solution's values as the solver claims them. Ignored for a handle
  // that is not live or a node that does not exist (nothing can flow
  // there; a potential of a node that is not there bounds nothing).
  void SetFlow(uint32_t handle, int64_t flow);
  void SetPotential(uint32_t node, int64_t potential);

  // Checks what changed since the last passed check (everything, if the
  // last one failed, there was none yet, or what changed reaches a
  // quarter of the network's arcs), with `claimed_total_cost` the
  // solver's total cost. OK: the copy is feasible and optimal. Internal
  // naming the first violation otherwise.
  absl::Status Certify(int64_t claimed_total_cost);
  // Checks every arc and node, with balances and sums recomputed.
  absl::Status CertifyAll(int64_t claimed_total_cost);
  // Drops everything: an empty network.
  void Clear();

  [[nodiscard]] bool HandleLive(uint32_t handle) const {
    return handle < arcs_.size() && arcs_[handle].live;
  }
  [[nodiscard]] int64_t flow(uint32_t handle) const {
    return HandleLive(handle) ? arcs_[handle].flow : 0;
  }
  // The arc's tail while it is live (0 otherwise).
  [[nodiscard]] uint32_t arc_src(uint32_t handle) const {
    return HandleLive(handle) ? arcs_[handle].src : 0;
  }
  [[nodiscard]] bool NodeExists(uint32_t node) const {
    return node < nodes_.size() && nodes_[node].exists;
  }
  [[nodiscard]] uint32_t handle_limit() const {
    return static_cast<uint32_t>(arcs_.size());
  }
  [[nodiscard]] uint32_t node_limit() const {
    return static_cast<uint32_t>(nodes_.size());
  }
  // Whether the last Certify checked everything (CertifyAll, or Certify
  // when it chose to).
  [[nodiscard]] bool last_full() const { return last_full_; }
  // Arcs and nodes the last Certify checked (CertifyAll: all of them).
  [[nodiscard]] uint64_t last_arcs_checked() const { return arcs_checked_; }
  [[nodiscard]] uint64_t last_nodes_checked() const { return nodes_checked_; }

  // The held copy as a problem and solution in handle order (live handles
  // ascending; `handles[i]` is arc i's handle), e.g. for
  // CheckOptimalFlow in tests or a DIMACS dump. O(n + m).
  void Export(McmfProblem& problem, McmfSolution& solution,
              std::vector<uint32_t>& handles) const;

 private:
  struct Arc {
    uint32_t src = 0;
    uint32_t dst = 0;
    int64_t capacity = 0;
    int64_t cost = 0;
    int64_t flow = 0;
    // Positions in the endpoints' incident lists.
    uint32_t pos_at_src = 0;
    uint32_t pos_at_dst = 0;
    bool live = false;
    bool marked = false;  // in dirty_arcs_
  };
  // Certify checks everything instead once the arcs to check, times this,
  // exceed the live arcs.
  static constexpr uint64_t kRandomReadCost = 4;
  // A node's potential lives in potentials_: the checks read it for both
  // ends of every arc, and a dense array keeps that to one cache line per
  // eight nodes.
  struct Node {
    int64_t supply = 0;
    Int128 balance = 0;              // outflow - inflow
    std::vector<uint32_t> incident;  // handles with the node at an end
    bool exists = false;
    bool marked = false;            // in dirty_nodes_
    bool potential_marked = false;  // in moved_nodes_
  };

  void MarkArc(uint32_t handle);
  void MarkNode(uint32_t node);
  void Detach(uint32_t handle);
  // Moves arc flow to `flow`, updating balances and the cost sum.
  void ChangeFlow(Arc& arc, int64_t flow);
  absl::Status CheckArc(uint32_t handle) const;
  absl::Status CheckNode(uint32_t node) const;
  absl::Status CheckSums(int64_t claimed_total_cost) const;
  absl::Status CertifyChanges(int64_t claimed_total_cost);
  void ClearMarks();

  std::vector<Arc> arcs_;
  std::vector<Node> nodes_;
  std::vector<int64_t> potentials_;  // per node
  uint64_t live_arcs_ = 0;
  std::vector<uint32_t> dirty_arcs_;
  std::vector<uint32_t> dirty_nodes_;
  std::vector<uint32_t> moved_nodes_;  // potential changed
  Int128 supply_sum_ = 0;
  Int128 total_cost_ = 0;      // sum cost * flow over live arcs
  bool all_unchecked_ = true;  // the next Certify checks everything
  bool last_full_ = false;
  uint64_t arcs_checked_ = 0;
  uint64_t nodes_checked_ = 0;
};

}  // namespace flowsched::solver
