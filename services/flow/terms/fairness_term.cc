#include "services/flow/terms/fairness_term.h"

#include <algorithm>
#include <cstddef>
#include <span>

namespace flowsched::flow {
namespace {

// Section 3.3: A*_j = min(floor(M / K), N_j); leftover slots go equally
// to jobs with more ready tasks, so that sum A_j = min(M, sum N_j). The
// admitted jobs are the first `admitted` of `bounds`.
void FairShares(size_t admitted, int64_t k, int64_t slots, int64_t demand,
                QuincyBoundsByJob& bounds) {
  const std::span<std::pair<JobId, QuincyJobBounds>> jobs(bounds.data(),
                                                          admitted);
  int64_t assigned = 0;
  for (auto& [id, b] : jobs) {
    b.share = std::min(slots / k, b.tasks);
    assigned += b.share;
  }
  int64_t leftover = std::min(slots, demand) - assigned;
  while (leftover > 0) {
    int64_t hungry = 0;
    for (const auto& [id, b] : jobs) hungry += b.share < b.tasks;
    if (hungry == 0) break;
    const int64_t each = std::max<int64_t>(1, leftover / hungry);
    for (auto& [id, b] : jobs) {
      const int64_t add = std::min({each, b.tasks - b.share, leftover});
      b.share += add;
      leftover -= add;
      if (leftover == 0) break;
    }
  }
}

// QF (section 4.3): a job running more than its share keeps what it runs,
// and the other jobs' shares are cut in proportion to their size.
void KeepRunningShares(int64_t slots, int64_t demand,
                       QuincyBoundsByJob& bounds) {
  int64_t total = 0;
  for (auto& [id, b] : bounds) {
    b.share = std::max(b.share, b.running);
    total += b.share;
  }
  int64_t running = 0;
  for (const auto& [id, b] : bounds) running += b.running;
  int64_t excess = total - std::max(std::min(slots, demand), running);
  int64_t base = 0;
  for (const auto& [id, b] : bounds) {
    if (b.share > b.running) base += b.share;
  }
  if (excess <= 0 || base <= 0) return;
  const int64_t to_cut = excess;
  for (auto& [id, b] : bounds) {
    if (b.share <= b.running) continue;
    const int64_t cut = std::min(b.share - b.running, to_cut * b.share / base);
    b.share -= cut;
    excess -= cut;
  }
  // Rounding remainder: one at a time, in job order.
  bool progress = true;
  while (excess > 0 && progress) {
    progress = false;
    for (auto& [id, b] : bounds) {
      if (excess == 0) break;
      if (b.share > b.running) {
        --b.share;
        --excess;
        progress = true;
      }
    }
  }
}

// E_j and F_j from the shares (section 4.3); jobs past admission get 0.
// The admitted jobs are the first `admitted` of `bounds` (Derive's
// bounds are in job id order), so a position tells admission.
void VariantBounds(size_t admitted, bool unfair, int64_t slots, int64_t demand,
                   QuincyBoundsByJob& bounds) {
  size_t position = 0;
  for (auto& [id, b] : bounds) {
    if (position++ >= admitted) {
      b.share = 0;
      b.min_running = b.max_running = 0;
    } else if (unfair) {
      // QP: E_j = 1, F_j = N_j; if N <= M then E_j = F_j = N_j so that no
      // computer idles while a locality-seeking task waits.
      b.max_running = b.tasks;
      b.min_running = demand <= slots ? b.tasks : std::min<int64_t>(1, b.tasks);
    } else {
      b.min_running = b.max_running = b.share;
    }
  }
}

// Feasibility (not in the paper, which admits K <= M jobs): the lower
// bounds must fit the slots the flow can reach. Without preemption,
// running tasks are pinned, so F_j covers them and the new placements
// E_j - running_j must fit the free slots. Lower bounds are cut from the
// last job (latest submitted) first.
void FitLowerBounds(const cluster::ClusterState& state, bool preemptive,
                    int64_t slots, QuincyBoundsByJob& bounds) {
  int64_t budget = slots;
  if (!preemptive) {
    budget = 0;
    for (const auto& [id, machine] : state.machines()) {
      budget += machine.free_slots();
    }
  }
  int64_t need = 0;
  for (auto& [id, b] : bounds) {
    if (!preemptive) b.max_running = std::max(b.max_running, b.running);
    need += preemptive ? b.min_running
                       : std::max<int64_t>(0, b.min_running - b.running);
  }
  for (auto it = bounds.rbegin(); it != bounds.rend() && need > budget; ++it) {
    QuincyJobBounds& b = it->second;
    const int64_t floor = preemptive ? 0 : std::min(b.running, b.min_running);
    const int64_t cut = std::min(need - budget, b.min_running - floor);
    b.min_running -= cut;
    need -= cut;
  }
}

}  // namespace

QuincyJobBounds FairnessTerm::Counts(const cluster::Job& job) {
  QuincyJobBounds b;
  b.tasks = static_cast<int64_t>(job.tasks.size());
  b.running = job.running;
  return b;
}

void FairnessTerm::CountJobs(const cluster::ClusterState& state,
                             QuincyBoundsByJob& bounds) {
  bounds.clear();
  bounds.reserve(state.jobs().size());
  for (const auto& [id, job] : state.jobs()) {
    bounds.emplace_back(id, Counts(job));
  }
}

void FairnessTerm::Derive(const cluster::ClusterState& state,
                          QuincyBoundsByJob& bounds) const {
  const size_t admitted =
      params_.admission_limit == 0
          ? bounds.size()
          : std::min<size_t>(bounds.size(), params_.admission_limit);
  if (admitted == 0) return;
  const auto slots = static_cast<int64_t>(state.total_slots());
  int64_t demand = 0;
  for (size_t i = 0; i < admitted; ++i) demand += bounds[i].second.tasks;
  const auto k = static_cast<int64_t>(
      params_.admission_limit == 0 ? admitted : params_.admission_limit);
  FairShares(admitted, k, slots, demand, bounds);
  if (params_.fair && !params_.preemptive) {
    KeepRunningShares(slots, demand, bounds);
  }
  VariantBounds(admitted, !params_.fair, slots, demand, bounds);
  FitLowerBounds(state, params_.preemptive, slots, bounds);
}

}  // namespace flowsched::flow
