#pragma once

// Quincy's queue-based baselines (SOSP 2009, §3).
//
// G: every waiting task joins the queue of each machine holding at least
// kMachinePreferenceFraction of its input, of each rack holding at least
// kRackPreferenceFraction, and the cluster queue (all in task-id order, i.e.
// submission order). Each machine with a free slot, in machine-id order,
// repeatedly takes the first task of its machine queue, else of its rack
// queue, else of the cluster queue; a taken task leaves every queue.
//
// GF: as G, but a job is blocked (its tasks are skipped) while it runs at
// least its fair share A_j (FairShares). There is no killing, so a job that
// already runs more than A_j just gets nothing new.
//
// Quincy's G is slot-only; here a task that does not fit the machine
// (cluster::FitTask: resources and devices) is skipped rather than blocking its
// queue, which keeps G work-conserving: afterwards no waiting task fits any
// machine.

#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "services/baselines/baseline_scheduler.h"

namespace flowsched::baselines {

inline constexpr double kMachinePreferenceFraction = 0.1;  // Quincy's δ^c
inline constexpr double kRackPreferenceFraction = 0.1;     // Quincy's δ^r

// A_j for every job with at least one task: A*_j = min(floor(M/K), N_j) with
// M the total slots, K the number of such jobs and N_j the job's running plus
// waiting tasks; leftover slots are then split equally (remainders to the
// lowest job ids) among jobs with N_j > A_j, so Σ A_j = min(M, Σ N_j).
std::map<JobId, int64_t> FairShares(const cluster::ClusterState& state);
// The same as (job, A_j) pairs in job id order, without a map's nodes: for
// callers that walk them once a round.
std::vector<std::pair<JobId, int64_t>> FairShareList(
    const cluster::ClusterState& state);

class GreedyScheduler final : public BaselineScheduler {
 public:
  explicit GreedyScheduler(bool fair) : fair_(fair) {}
  [[nodiscard]] std::string_view name() const override {
    return fair_ ? "greedy-fair" : "greedy";
  }
  std::vector<BaselinePlacement> Schedule(
      const cluster::ClusterState& state) override;

 private:
  bool fair_;
};

}  // namespace flowsched::baselines
