#include "services/core/gang_rule.h"

#include <algorithm>
#include <tuple>

#include "services/core/decision_builder.h"

namespace flowsched::core {
namespace {

const GangRequirement* FindGang(std::span<const GangRequirement> gangs,
                                JobId job) {
  for (const GangRequirement& gang : gangs) {
    if (gang.job == job) return &gang;
  }
  return nullptr;
}

}  // namespace

std::vector<JobId> JobsOfPlacements(
    const flow::FlowNetwork& network,
    const std::vector<flow::TaskPlacement>& placements) {
  std::vector<JobId> jobs(placements.size());
  for (size_t i = 0; i < placements.size(); ++i) {
    jobs[i] = JobOfTask(network, placements[i].task_node);
  }
  return jobs;
}

std::map<JobId, GangTally> TallyGangs(
    const std::vector<flow::TaskPlacement>& placements,
    std::span<const JobId> jobs, std::span<const GangRequirement> gangs) {
  std::map<JobId, GangTally> tally;
  for (const GangRequirement& gang : gangs) tally[gang.job];
  for (size_t i = 0; i < placements.size() && i < jobs.size(); ++i) {
    auto it = tally.find(jobs[i]);
    if (it == tally.end()) continue;
    it->second.waiting += placements[i].running_on == 0;
    if (placements[i].machine_id == 0) continue;
    ++it->second.on_machines;
    if (placements[i].running_on == 0) ++it->second.placed_now;
  }
  return tally;
}

std::vector<JobId> PartialGangs(std::span<const GangRequirement> gangs,
                                const std::map<JobId, GangTally>& tally) {
  std::vector<JobId> partial;
  for (const GangRequirement& gang : gangs) {
    auto it = tally.find(gang.job);
    if (it != tally.end() && Partial(gang, it->second)) {
      partial.push_back(gang.job);
    }
  }
  std::sort(partial.begin(), partial.end());
  return partial;
}

JobId GangToWithdraw(std::span<const JobId> partial,
                     std::span<const GangRequirement> gangs,
                     const std::map<JobId, GangTally>& tally) {
  const auto rank = [&](JobId job) {
    const GangRequirement* gang = FindGang(gangs, job);
    auto it = tally.find(job);
    const uint32_t placed = it == tally.end() ? 0 : it->second.placed_now;
    // Ascending: fewest placed, not held, highest job id.
    return std::make_tuple(placed, gang != nullptr && gang->hold, ~job.value());
  };
  return *std::min_element(partial.begin(), partial.end(),
                           [&](JobId a, JobId b) { return rank(a) < rank(b); });
}

void MarkGangDecisions(std::span<const GangRequirement> gangs,
                       std::vector<Decision>& decisions) {
  if (gangs.empty()) return;
  std::map<JobId, uint32_t> min_members;
  for (const GangRequirement& gang : gangs) {
    min_members[gang.job] = gang.min_members;
  }
  for (Decision& decision : decisions) {
    auto it = min_members.find(decision.job);
    if (it != min_members.end()) decision.gang_min_members = it->second;
  }
}

}  // namespace flowsched::core
