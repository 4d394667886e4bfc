#include "tools/sim/synthetic.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace flowsched::sim {
namespace {

struct Shape {
  uint64_t initial_tasks = 0, initial_jobs = 0, arriving_tasks = 0;
  uint64_t service_tasks = 0, largest_job = 0;
  std::vector<uint64_t> job_sizes;
};

Shape Measure(const Workload& w) {
  Shape s;
  std::map<uint64_t, uint64_t> sizes;
  std::set<uint64_t> initial_jobs;
  for (const SimTask& t : w.tasks) {
    ++sizes[t.job_id];
    if (t.submit_us == 0) {
      ++s.initial_tasks;
      initial_jobs.insert(t.job_id);
    } else {
      ++s.arriving_tasks;
    }
    s.service_tasks += t.service ? 1 : 0;
  }
  s.initial_jobs = initial_jobs.size();
  for (const auto& [job, n] : sizes) s.job_sizes.push_back(n);
  std::sort(s.job_sizes.begin(), s.job_sizes.end());
  s.largest_job = s.job_sizes.back();
  return s;
}

TEST(SyntheticTest, FullScaleMatchesTheTracesSteadyState) {
  SyntheticSpec spec;  // 12,500 machines, 90% of 13 slots
  spec.duration_us = 60'000'000;
  const Workload w = GenerateSynthetic(spec);
  ASSERT_EQ(w.machines.size(), 12'500u);
  std::set<std::string> racks;
  for (const SimMachine& m : w.machines) racks.insert(m.rack);
  EXPECT_EQ(racks.size(), (12'500u + 39) / 40);
  const Shape s = Measure(w);
  // About 150,000 running tasks in about 1,800 jobs.
  EXPECT_EQ(s.initial_tasks, 146'250u);
  EXPECT_GT(s.initial_jobs, 1'200u);
  EXPECT_LT(s.initial_jobs, 2'600u);
  // Heavy tail: the largest job is far above the median one.
  const uint64_t median = s.job_sizes[s.job_sizes.size() / 2];
  EXPECT_GT(s.largest_job, 20 * median);
  // Services hold most running tasks; batch tasks still arrive.
  EXPECT_GT(s.service_tasks, s.initial_tasks / 2);
  EXPECT_GT(s.arriving_tasks, 0u);
}

TEST(SyntheticTest, ArrivalsKeepThePopulationSteadyAndRuntimesDiffer) {
  SyntheticSpec spec{.machines = 400, .duration_us = 3'600'000'000};
  const Workload w = GenerateSynthetic(spec);
  double service_runtime = 0, batch_runtime = 0;
  uint64_t services = 0, batches = 0, arrived = 0;
  for (const SimTask& t : w.tasks) {
    ASSERT_GT(t.duration_us, 0);
    ASSERT_LE(t.submit_us, spec.duration_us);
    ASSERT_GT(t.cpu, 0);
    ASSERT_LE(t.cpu, 1.0 / spec.slots_per_machine);
    if (t.submit_us == 0) continue;
    ++arrived;
    (t.service ? service_runtime : batch_runtime) +=
        static_cast<double>(t.duration_us);
    (t.service ? services : batches) += 1;
  }
  ASSERT_GT(services, 0u);
  ASSERT_GT(batches, 0u);
  EXPECT_GT(service_runtime / static_cast<double>(services),
            10 * batch_runtime / static_cast<double>(batches));
  // Little's law: in an hour about (running / mean runtime) * 3600 arrive;
  // within a factor of two (job sizes are heavy-tailed).
  const double running = 0.9 * 400 * 13;
  const double expected = running / 7'613 * 3'600;
  EXPECT_GT(static_cast<double>(arrived), expected / 2);
  EXPECT_LT(static_cast<double>(arrived), expected * 2);
}

// Each block's replicas, placed as HDFS does: on 3 machines in 2 racks,
// so a task's machine entries add up to 3x its input and its rack entries
// (one per rack holding data, each block counted once) to 2x. With one
// replica there are no rack entries and the machines hold the input once.
TEST(SyntheticTest, InputBlocksAreReplicatedAsHdfsPlacesThem) {
  for (uint32_t replicas : {1u, 3u}) {
    const Workload w = GenerateSynthetic(
        {.machines = 400, .duration_us = 1, .input_replicas = replicas});
    std::map<uint64_t, std::string> rack_of;
    for (const SimMachine& m : w.machines) rack_of[m.id] = m.rack;
    for (const SimTask& t : w.tasks) {
      int64_t on_machines = 0;
      std::map<std::string, int64_t> stated;
      std::set<std::string> holding;
      for (const cluster::DataLocality& in : t.input) {
        ASSERT_GT(in.bytes, 0);
        if (in.machine.value() == 0) {
          ASSERT_TRUE(stated.emplace(in.rack, in.bytes).second);
          EXPECT_LE(in.bytes, t.input_bytes);
          continue;
        }
        ASSERT_TRUE(rack_of.contains(in.machine.value()));
        on_machines += in.bytes;
        holding.insert(rack_of[in.machine.value()]);
      }
      EXPECT_EQ(on_machines, replicas * t.input_bytes) << replicas;
      if (replicas == 1) {
        EXPECT_TRUE(stated.empty());
        continue;
      }
      int64_t in_racks = 0;
      for (const auto& [rack, bytes] : stated) {
        EXPECT_TRUE(holding.contains(rack)) << rack;
        in_racks += bytes;
      }
      EXPECT_EQ(stated.size(), holding.size());
      EXPECT_EQ(in_racks, 2 * t.input_bytes);
    }
  }
}

// Two machines in one rack: no other rack for the second copy, and no
// third machine, so each block has two copies and the rack holds it once.
TEST(SyntheticTest, ReplicasNeverOutnumberTheMachines) {
  const Workload w =
      GenerateSynthetic({.machines = 2, .duration_us = 1, .input_replicas = 5});
  ASSERT_FALSE(w.tasks.empty());
  for (const SimTask& t : w.tasks) {
    int64_t on_machines = 0;
    int64_t in_rack = 0;
    for (const cluster::DataLocality& in : t.input) {
      (in.machine.value() == 0 ? in_rack : on_machines) += in.bytes;
    }
    EXPECT_EQ(on_machines, 2 * t.input_bytes);
    EXPECT_EQ(in_rack, t.input_bytes);
  }
}

// One copy per block is the workload this generator made before copies
// existed (recorded at 4881538: a hash of every task's input entries), so
// figures measured on it stay comparable; copies add to it and change
// nothing of the primaries (their own random stream).
TEST(SyntheticTest, OneCopyIsTheWorkloadOfBeforeReplication) {
  auto hash = [](const Workload& w, bool primaries_only) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a over 8-byte words
    auto mix = [&](uint64_t v) {
      for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 1099511628211ULL;
      }
    };
    for (const SimTask& t : w.tasks) {
      mix(t.task_id);
      mix(static_cast<uint64_t>(t.input_bytes));
      if (primaries_only) continue;
      for (const cluster::DataLocality& in : t.input) {
        mix(in.machine.value());
        mix(static_cast<uint64_t>(in.bytes));
      }
    }
    return h;
  };
  const Workload one = GenerateSynthetic(
      {.machines = 400, .duration_us = 1'000'000, .input_replicas = 1});
  EXPECT_EQ(one.tasks.size(), 4680u);
  EXPECT_EQ(hash(one, false), 10525194937386707800ULL);
  const Workload three = GenerateSynthetic(
      {.machines = 400, .duration_us = 1'000'000, .input_replicas = 3});
  EXPECT_EQ(hash(three, true), hash(one, true));
}

// Machine ids listed twice, racks of one machine, more copies than
// machines: placing the copies ends, on distinct machines.
TEST(SyntheticTest, CopiesArePlacedWhateverTheMachineList) {
  Workload w;
  w.machines = {
      SimMachine{.id = 1, .rack = "a"}, SimMachine{.id = 3, .rack = "a"},
      SimMachine{.id = 2, .rack = "b"}, SimMachine{.id = 2, .rack = "b"},
      SimMachine{.id = 1, .rack = "b"}};
  for (uint64_t t = 1; t <= 200; ++t) {
    w.tasks.push_back(SimTask{.task_id = t, .job_id = t % 7});
  }
  for (uint32_t replicas : {1u, 2u, 3u, 10u}) {
    AssignInputBlocks(w, 5, replicas);
    for (const SimTask& t : w.tasks) {
      int64_t on_machines = 0;
      for (const cluster::DataLocality& in : t.input) {
        if (in.machine.value() != 0) on_machines += in.bytes;
      }
      // 10 copies are clamped to the 3 distinct machines.
      EXPECT_EQ(on_machines, std::min(replicas, 3u) * t.input_bytes);
    }
  }
  Workload single;
  for (uint64_t m = 1; m <= 5; ++m) {
    single.machines.push_back(
        SimMachine{.id = m, .rack = absl::StrCat("r", m)});
  }
  single.tasks = w.tasks;
  AssignInputBlocks(single, 5, 3);
  for (const SimTask& t : single.tasks) {
    int64_t in_racks = 0;
    for (const cluster::DataLocality& in : t.input) {
      if (in.machine.value() == 0) in_racks += in.bytes;
    }
    EXPECT_EQ(in_racks, 3 * t.input_bytes);  // one machine per rack
  }
}

// Whatever the replication, most of a job's input is in its home rack.
TEST(SyntheticTest, InputBlocksLiveMostlyInTheJobsHomeRack) {
  for (uint32_t replicas : {1u, 3u}) {
    const Workload w = GenerateSynthetic(
        {.machines = 400, .duration_us = 1, .input_replicas = replicas});
    std::map<uint64_t, std::string> rack_of;
    for (const SimMachine& m : w.machines) rack_of[m.id] = m.rack;
    std::map<uint64_t, std::map<std::string, int64_t>> job_rack_bytes;
    int64_t total = 0;
    for (const SimTask& t : w.tasks) {
      for (const cluster::DataLocality& in : t.input) {
        // A rack's bytes: its rack entry if given, else its machines'.
        if (replicas == 1) {
          job_rack_bytes[t.job_id][rack_of[in.machine.value()]] += in.bytes;
        } else if (in.machine.value() == 0) {
          job_rack_bytes[t.job_id][in.rack] += in.bytes;
        }
      }
      total += t.input_bytes;
    }
    int64_t in_top_rack = 0;
    for (const auto& [job, racks] : job_rack_bytes) {
      int64_t top = 0;
      for (const auto& [rack, bytes] : racks) top = std::max(top, bytes);
      in_top_rack += top;
    }
    EXPECT_GT(static_cast<double>(in_top_rack),
              0.7 * static_cast<double>(total))
        << replicas;
  }
}

// A task present at time 0 is part-way through a length-biased runtime: a
// uniform part of it is done (its age, Quincy's theta at the start) and
// the rest is its remaining duration. Arrivals have no age.
TEST(SyntheticTest, InitialTasksHaveRunAUniformPartOfTheirRuntime) {
  const Workload w =
      GenerateSynthetic({.machines = 200, .duration_us = 60'000'000});
  double done_fraction = 0;
  uint64_t initial = 0, aged = 0;
  for (const SimTask& t : w.tasks) {
    ASSERT_GE(t.age_us, 0);
    if (t.submit_us != 0) {
      ASSERT_EQ(t.age_us, 0) << t.task_id;
      continue;
    }
    ++initial;
    aged += t.age_us > 0;
    done_fraction += static_cast<double>(t.age_us) /
                     static_cast<double>(t.age_us + t.duration_us);
  }
  ASSERT_GT(initial, 1000u);
  EXPECT_GT(aged, initial * 99 / 100);
  EXPECT_NEAR(done_fraction / static_cast<double>(initial), 0.5, 0.05);
}

TEST(SyntheticTest, DeterministicForASeed) {
  const SyntheticSpec spec{.machines = 200, .duration_us = 600'000'000};
  const Workload a = GenerateSynthetic(spec);
  const Workload b = GenerateSynthetic(spec);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    ASSERT_EQ(a.tasks[i].submit_us, b.tasks[i].submit_us);
    ASSERT_EQ(a.tasks[i].duration_us, b.tasks[i].duration_us);
    ASSERT_EQ(a.tasks[i].age_us, b.tasks[i].age_us);
    ASSERT_EQ(a.tasks[i].input, b.tasks[i].input);
  }
  SyntheticSpec other = spec;
  other.seed = 2;
  const Workload c = GenerateSynthetic(other);
  EXPECT_FALSE(c.tasks.size() == a.tasks.size() &&
               c.tasks.back().submit_us == a.tasks.back().submit_us);
}

}  // namespace
}  // namespace flowsched::sim
