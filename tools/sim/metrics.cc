#include "tools/sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "services/baselines/greedy_scheduler.h"
#include "services/cluster/input_locality.h"
#include "services/common/percentile.h"

namespace flowsched::sim {

LocalityBytes InputLocality(const cluster::ClusterState& state,
                            const cluster::Task& task, MachineId machine_id) {
  const cluster::InputLocation where = cluster::LocateInput(task.spec, state);
  const cluster::Machine* machine = state.FindMachine(machine_id);
  LocalityBytes bytes;
  bytes.local = where.OnMachine(machine_id);
  bytes.rack =
      machine == nullptr ? 0 : where.InRack(machine->rack) - bytes.local;
  bytes.remote = where.total - bytes.local - bytes.rack;
  return bytes;
}

Distribution Summarise(std::vector<double>& values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = values.size();
  d.p50 = NearestRankPercentile(values, 0.5);
  d.p90 = NearestRankPercentile(values, 0.9);
  d.p99 = NearestRankPercentile(values, 0.99);
  d.max = values.back();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) /
           static_cast<double>(values.size());
  return d;
}

std::vector<std::pair<double, double>> Cdf(const std::vector<double>& sorted,
                                           size_t max_points) {
  std::vector<std::pair<double, double>> points;
  const size_t n = sorted.size();
  if (n == 0 || max_points == 0) return points;
  const size_t step = (n + max_points - 1) / max_points;  // ceil
  for (size_t i = step - 1; i < n; i += step) {
    points.emplace_back(sorted[i],
                        static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (points.back().second < 1.0) points.emplace_back(sorted.back(), 1.0);
  return points;
}

double JainIndex(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  if (x.empty() || squares == 0) return 1.0;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

double FairShareJain(const cluster::ClusterState& state) {
  std::vector<double> ratios;
  // Both in job id order: the running counts are read by walking the jobs
  // alongside the shares, not by a lookup per job (this runs every few
  // rounds over every job).
  auto job = state.jobs().begin();
  for (const auto& [job_id, share] : baselines::FairShareList(state)) {
    while (job != state.jobs().end() && job->first < job_id) ++job;
    if (share <= 0 || job == state.jobs().end() || job->first != job_id) {
      continue;
    }
    ratios.push_back(static_cast<double>(job->second.running) /
                     static_cast<double>(share));
  }
  return JainIndex(ratios);
}

}  // namespace flowsched::sim
