#include "tools/sim/synthetic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace flowsched::sim {
namespace {

constexpr int64_t kBlockBytes = int64_t{256} << 20;
constexpr double kHomeRackProbability = 0.8;
constexpr int kMaxBlocks = 6;

double Mean(double median_s, double sigma) {
  return median_s * std::exp(sigma * sigma / 2);
}

}  // namespace

void AssignInputBlocks(Workload& workload, uint64_t seed, uint32_t replicas) {
  if (workload.machines.empty()) return;
  std::mt19937_64 rng(seed ^ 0x5eedb10c5ULL);
  // The copies draw from their own stream, so a workload with replicas is
  // the one-copy workload plus its copies.
  std::mt19937_64 copy_rng(seed ^ 0xc0b1e5c0b1e5ULL);
  // Each machine id once, in the rack it is first listed in.
  std::map<std::string, std::vector<uint64_t>> racks;
  std::unordered_map<uint64_t, size_t> rack_of;  // machine id -> rack_list
  std::vector<uint64_t> ids;
  for (const SimMachine& m : workload.machines) {
    if (!rack_of.emplace(m.id, 0).second) continue;
    racks[m.rack].push_back(m.id);
    ids.push_back(m.id);
  }
  std::vector<const std::vector<uint64_t>*> rack_list;
  std::vector<const std::string*> rack_names;
  for (const auto& [name, members] : racks) {
    for (uint64_t id : members) rack_of[id] = rack_list.size();
    rack_list.push_back(&members);
    rack_names.push_back(&name);
  }
  // No more copies than machines, or placing them would never end.
  replicas = std::clamp<uint32_t>(
      replicas, 1,
      static_cast<uint32_t>(std::min<size_t>(kMaxInputReplicas, ids.size())));
  std::map<uint64_t, size_t> home_rack;
  std::uniform_int_distribution<size_t> pick_rack(0, rack_list.size() - 1);
  std::uniform_int_distribution<size_t> pick_machine(
      0, workload.machines.size() - 1);
  std::uniform_int_distribution<int> blocks(1, kMaxBlocks);
  std::bernoulli_distribution at_home(kHomeRackProbability);
  auto any_of = [](const std::vector<uint64_t>& of, std::mt19937_64& engine) {
    return of[std::uniform_int_distribution<size_t>(0, of.size() - 1)(engine)];
  };
  // HDFS's default placement: the second copy in another rack, the third
  // on another machine of the second's rack, any further ones (or one
  // with no such rack or machine) on a machine that holds none yet.
  auto place_copies = [&](std::vector<uint64_t>& holders) {
    while (holders.size() < replicas) {
      uint64_t next = 0;
      if (holders.size() == 1 && rack_list.size() > 1) {
        const size_t first = rack_of.at(holders[0]);
        size_t rack = pick_rack(copy_rng);
        while (rack == first) rack = pick_rack(copy_rng);
        next = any_of(*rack_list[rack], copy_rng);
      } else if (holders.size() == 2 &&
                 rack_list[rack_of.at(holders[1])]->size() > 1) {
        next = any_of(*rack_list[rack_of.at(holders[1])], copy_rng);
      } else {
        next = any_of(ids, copy_rng);
      }
      if (std::find(holders.begin(), holders.end(), next) == holders.end()) {
        holders.push_back(next);
      }
    }
  };
  for (SimTask& task : workload.tasks) {
    auto [it, inserted] = home_rack.try_emplace(task.job_id, 0);
    if (inserted) it->second = pick_rack(rng);
    const std::vector<uint64_t>& home = *rack_list[it->second];
    const int n = blocks(rng);
    task.input.clear();
    std::map<uint64_t, int64_t> bytes_on;
    std::map<size_t, int64_t> bytes_in;  // rack -> bytes, each block once
    for (int b = 0; b < n; ++b) {
      std::vector<uint64_t> holders = {
          at_home(rng) ? any_of(home, rng)
                       : workload.machines[pick_machine(rng)].id};
      place_copies(holders);
      std::set<size_t> block_racks;
      for (uint64_t machine : holders) {
        bytes_on[machine] += kBlockBytes;
        block_racks.insert(rack_of.at(machine));
      }
      for (size_t rack : block_racks) bytes_in[rack] += kBlockBytes;
    }
    // With copies a rack's machines may hold the same block twice: each
    // machine entry names its rack and each rack entry says how much of
    // the input the rack holds (cluster::LocateInput).
    for (const auto& [machine, bytes] : bytes_on) {
      task.input.push_back(cluster::DataLocality{
          .machine = MachineId(machine),
          .rack = replicas > 1 ? *rack_names[rack_of.at(machine)] : "",
          .bytes = bytes});
    }
    if (replicas > 1) {
      for (const auto& [rack, bytes] : bytes_in) {
        task.input.push_back(
            cluster::DataLocality{.rack = *rack_names[rack], .bytes = bytes});
      }
    }
    task.input_bytes = kBlockBytes * n;
  }
}

Workload GenerateSynthetic(const SyntheticSpec& spec) {
  Workload workload;
  std::mt19937_64 rng(spec.seed);
  const uint64_t per_rack = std::max<uint64_t>(1, spec.machines_per_rack);
  // Google's three main platforms: half-size machines dominate.
  std::discrete_distribution<int> platform({0.55, 0.30, 0.15});
  constexpr double kCpu[] = {0.5, 0.25, 1.0};
  constexpr double kMemory[] = {0.5, 0.25, 1.0};
  for (uint64_t i = 0; i < spec.machines; ++i) {
    const int p = platform(rng);
    workload.machines.push_back(
        SimMachine{.id = i + 1,
                   .rack = absl::StrCat("rack-", i / per_rack),
                   .cpu = kCpu[p],
                   .memory = kMemory[p]});
  }

  std::lognormal_distribution<double> job_size(spec.job_size_mu,
                                               spec.job_size_sigma);
  std::lognormal_distribution<double> service_runtime(
      std::log(spec.service_median_s), spec.service_sigma);
  std::lognormal_distribution<double> batch_runtime(
      std::log(spec.batch_median_s), spec.batch_sigma);
  // Requests: small, as in the trace (most tasks ask for a few percent of
  // a machine); sized so that a machine's slots fit in CPU and memory.
  const double per_slot = 1.0 / std::max<uint32_t>(1, spec.slots_per_machine);
  std::uniform_real_distribution<double> request(0.1 * per_slot,
                                                 0.9 * per_slot);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  uint64_t next_job = 1, next_task = 1;
  // The trace's job sizes are for 12,500 machines: a subsampled cluster
  // gets proportionally capped jobs, so one job cannot swamp it.
  const uint64_t max_size = std::max<uint64_t>(
      1,
      std::min<uint64_t>(
          spec.max_job_size,
          std::max<uint64_t>(100, spec.max_job_size * spec.machines / 12'500)));
  // A task present at time 0 is a length-biased sample (longer tasks are
  // more likely to be running; for a lognormal that is mu + sigma^2) with a
  // uniform part of it already done.
  std::lognormal_distribution<double> service_biased(
      std::log(spec.service_median_s) + spec.service_sigma * spec.service_sigma,
      spec.service_sigma);
  std::lognormal_distribution<double> batch_biased(
      std::log(spec.batch_median_s) + spec.batch_sigma * spec.batch_sigma,
      spec.batch_sigma);
  auto add_job = [&](int64_t submit_us, bool service, uint64_t n) {
    const uint64_t job = next_job++;
    const bool initial = submit_us == 0;
    // Services run at production priority, batch jobs below.
    const int32_t priority = service ? 9 : 2;
    for (uint64_t t = 0; t < n; ++t) {
      double runtime_s = 0, age_s = 0;
      if (initial) {
        const double length_s =
            service ? service_biased(rng) : batch_biased(rng);
        const double left = unit(rng);
        runtime_s = length_s * left;
        age_s = length_s - runtime_s;
      } else {
        runtime_s = service ? service_runtime(rng) : batch_runtime(rng);
      }
      workload.tasks.push_back(SimTask{
          .task_id = next_task++,
          .job_id = job,
          .submit_us = submit_us,
          .duration_us = std::max<int64_t>(1, std::llround(runtime_s * 1e6)),
          .age_us = std::llround(age_s * 1e6),
          .cpu = request(rng),
          .memory = request(rng),
          .priority = priority,
          .service = service});
    }
  };
  auto size = [&]() {
    return std::clamp<uint64_t>(
        static_cast<uint64_t>(std::llround(job_size(rng))), 1, max_size);
  };

  const auto target = static_cast<uint64_t>(
      std::llround(spec.utilisation * static_cast<double>(spec.machines) *
                   spec.slots_per_machine));
  const double service_mean = Mean(spec.service_median_s, spec.service_sigma);
  const double batch_mean = Mean(spec.batch_median_s, spec.batch_sigma);
  const double fs = std::clamp(spec.service_job_fraction, 0.0, 1.0);
  // Running tasks by class in steady state are arrivals weighted by mean
  // runtime.
  const double service_share =
      fs * service_mean / (fs * service_mean + (1 - fs) * batch_mean);
  std::bernoulli_distribution initial_service(service_share);
  uint64_t population = 0;
  while (population < target) {
    // The last job is trimmed so the population is exactly the target.
    const uint64_t n = std::min(size(), target - population);
    add_job(0, initial_service(rng), n);
    population += n;
  }
  // Little's law for the arrival rate of tasks, then of jobs.
  const double mean_runtime_s = fs * service_mean + (1 - fs) * batch_mean;
  // The clipped lognormal's mean, estimated with its own generator so the
  // workload's random stream is unchanged.
  double mean_job_size = 0;
  {
    std::mt19937_64 probe(spec.seed + 1);
    constexpr int kProbes = 20'000;
    for (int i = 0; i < kProbes; ++i) {
      mean_job_size += static_cast<double>(std::clamp<uint64_t>(
          static_cast<uint64_t>(std::llround(job_size(probe))), 1, max_size));
    }
    mean_job_size /= kProbes;
  }
  const double jobs_per_s =
      static_cast<double>(target) / mean_runtime_s / mean_job_size;
  std::exponential_distribution<double> gap(jobs_per_s > 0 ? jobs_per_s : 1);
  std::bernoulli_distribution is_service(fs);
  double t_s = gap(rng);
  while (jobs_per_s > 0 && t_s * 1e6 < static_cast<double>(spec.duration_us)) {
    add_job(std::max<int64_t>(1, std::llround(t_s * 1e6)), is_service(rng),
            size());
    t_s += gap(rng);
  }
  AssignInputBlocks(workload, spec.seed, spec.input_replicas);
  return workload;
}

}  // namespace flowsched::sim
