// `flowsched simulate`: a discrete-event simulation, in simulated time, of
// the flow scheduler (a policy, the solver, checker and extraction) and the
// baselines on one workload: a Google cluster trace 2011 (machine_events
// and task_events CSV), the Alibaba GPU trace 2023's node and pod lists
// (CPU and memory only) or the synthetic generator. Writes CSVs, a summary
// table and gnuplot plots; see tools/sim/README.md.

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "tools/flowsched/commands.h"
#include "tools/sim/contender.h"
#include "tools/sim/locality_floor.h"
#include "tools/sim/openb_reader.h"
#include "tools/sim/openb_workload.h"
#include "tools/sim/report.h"
#include "tools/sim/simulator.h"
#include "tools/sim/synthetic.h"
#include "tools/sim/trace_reader.h"

namespace flowsched::tools {
namespace {

struct SimulateOptions {
  std::string trace_machines;
  std::string trace_tasks;
  std::string openb_nodes;
  std::string openb_pods;
  bool openb_pods_stay = false;
  std::string bad_lines = "skip";
  uint64_t machines = 12'500;
  double machine_fraction = 1.0;
  double job_fraction = 1.0;
  uint64_t max_machines = 0;
  uint64_t max_jobs = 0;
  uint64_t machines_per_rack = 40;
  uint32_t input_replicas = sim::kDefaultInputReplicas;
  double utilisation = 0.9;
  double speedup = 1.0;
  std::string model = "slots";
  uint32_t slots_per_machine = 13;
  std::string policy = "quincy-qfp";
  std::string solver = "incremental";
  std::string baselines = "greedy,greedy-fair,filter-score";
  double duration_s = 60.0;
  std::string out = "sim-out";
  uint64_t seed = 1;
  double progress_every_s = 2.0;
  double max_wall_s = 0;
  uint32_t export_rounds = 0;
  bool locality_floor = false;
  std::string policy_clock = "trace";
  std::string price_at = "decision";

  [[nodiscard]] bool from_trace() const {
    return !trace_tasks.empty() || !trace_machines.empty() ||
           !openb_pods.empty() || !openb_nodes.empty();
  }
};

absl::StatusOr<sim::Workload> LoadOpenbWorkload(const SimulateOptions& o) {
  if (o.openb_nodes.empty() || o.openb_pods.empty()) {
    return absl::InvalidArgumentError(
        "--openb-nodes and --openb-pods go together");
  }
  if (!o.trace_tasks.empty() || !o.trace_machines.empty()) {
    return absl::InvalidArgumentError(
        "give one trace: --trace-machines/--trace-tasks or "
        "--openb-nodes/--openb-pods");
  }
  if (o.model != "cpu-mem") {
    return absl::InvalidArgumentError(
        "the openb trace needs --model cpu-mem (its pods ask for CPU and "
        "memory, not slots)");
  }
  if (o.machine_fraction < 1.0 || o.job_fraction < 1.0 || o.max_machines != 0 ||
      o.max_jobs != 0) {
    return absl::InvalidArgumentError(
        "--machine-fraction, --job-fraction, --max-machines and --max-jobs "
        "do not apply to the openb trace");
  }
  absl::StatusOr<std::vector<sim::OpenbNode>> nodes =
      sim::ReadOpenbNodeFile(o.openb_nodes);
  if (!nodes.ok()) return nodes.status();
  absl::StatusOr<std::vector<sim::OpenbPod>> pods =
      sim::ReadOpenbPodFile(o.openb_pods);
  if (!pods.ok()) return pods.status();
  sim::OpenbWorkloadStats stats;
  absl::StatusOr<sim::Workload> workload = sim::BuildOpenbWorkload(
      *nodes, *pods, o.machines_per_rack, o.openb_pods_stay, stats);
  if (!workload.ok()) return workload.status();
  std::cerr << fmt::format(
      "openb trace: {} nodes, {} pods, {} never scheduled (dropped), {} GPU "
      "asks left out (the simulator's models have no devices)\n",
      nodes->size(), stats.pods, stats.never_scheduled,
      stats.gpu_asks_left_out);
  sim::AssignInputBlocks(*workload, o.seed, o.input_replicas);
  return workload;
}

absl::StatusOr<sim::Workload> LoadWorkload(const SimulateOptions& o) {
  if (!o.openb_nodes.empty() || !o.openb_pods.empty()) {
    return LoadOpenbWorkload(o);
  }
  if (o.openb_pods_stay) {
    return absl::InvalidArgumentError(
        "--openb-pods-stay applies only to --openb-nodes/--openb-pods");
  }
  if (o.trace_machines.empty() != o.trace_tasks.empty()) {
    return absl::InvalidArgumentError(
        "--trace-machines and --trace-tasks go together");
  }
  sim::Workload workload;
  if (!o.trace_tasks.empty()) {
    sim::TraceReader reader(sim::TraceOptions{
        .bad_lines = o.bad_lines == "fail" ? sim::BadLinePolicy::kFail
                                           : sim::BadLinePolicy::kSkip,
        .machine_fraction = o.machine_fraction,
        .job_fraction = o.job_fraction,
        .max_machines = o.max_machines,
        .max_jobs = o.max_jobs,
        .machines_per_rack = o.machines_per_rack});
    if (auto s = reader.ReadFiles(o.trace_machines, o.trace_tasks); !s.ok()) {
      return s;
    }
    workload = reader.Build();
    const sim::TraceStats& stats = reader.stats();
    for (const std::string& error : stats.errors) {
      std::cerr << "flowsched simulate: skipped " << error << "\n";
    }
    std::cerr << fmt::format(
        "trace: {} lines, {} bad lines skipped, {} tasks never ran (dropped), "
        "{} events after the end\n",
        stats.lines, stats.skipped, stats.tasks_never_ran,
        stats.events_after_end);
    sim::AssignInputBlocks(workload, o.seed, o.input_replicas);
  } else {
    sim::SyntheticSpec spec{
        .machines = static_cast<uint64_t>(
            std::llround(static_cast<double>(o.machines) * o.machine_fraction)),
        .machines_per_rack = o.machines_per_rack,
        .slots_per_machine = o.slots_per_machine,
        .utilisation = o.utilisation,
        .duration_us = std::llround(o.duration_s * o.speedup * 1e6),
        .input_replicas = o.input_replicas,
        .seed = o.seed};
    if (o.max_machines != 0)
      spec.machines = std::min(spec.machines, o.max_machines);
    workload = sim::GenerateSynthetic(spec);
    if (o.job_fraction < 1.0 || o.max_jobs != 0) {
      std::erase_if(workload.tasks, [&](const sim::SimTask& t) {
        return !sim::InSample(t.job_id, o.job_fraction) ||
               (o.max_jobs != 0 && t.job_id > o.max_jobs);
      });
    }
  }
  return workload;
}

// The floor against what each scheduler's warm-up placed (the same
// population); 0 or an exit code.
int PrintLocalityFloor(const sim::Workload& workload, const SimulateOptions& o,
                       const std::vector<sim::Summary>& summaries) {
  std::cerr << "locality floor: solving the time-0 population's placement "
               "by rack...\n";
  absl::StatusOr<sim::LocalityFloor> floor;
  std::string_view measure = "slots";
  if (o.model == "slots") {
    floor = sim::ComputeLocalityFloor(workload, o.slots_per_machine, o.speedup);
  } else {
    // Two relaxations, each a lower bound: the larger is the tighter.
    floor = sim::ComputeLocalityFloor(workload, sim::FloorResource::kCpu,
                                      o.speedup);
    measure = "CPU";
    auto by_memory = sim::ComputeLocalityFloor(
        workload, sim::FloorResource::kMemory, o.speedup);
    if (floor.ok() && by_memory.ok() &&
        by_memory->cross_rack_share() > floor->cross_rack_share()) {
      floor = std::move(by_memory);
      measure = "memory";
    } else if (!by_memory.ok()) {
      floor = by_memory.status();
    }
  }
  if (!floor.ok()) {
    std::cerr << "flowsched simulate: locality floor: "
              << floor.status().message() << "\n";
    return 1;
  }
  fmt::print(
      "locality floor: {} of {} time-0 tasks fit the racks' {}; the "
      "least cross-rack input any placement of them reads is {}{:.1f}% "
      "({:.2f} TB){}\n",
      floor->placed, floor->tasks, measure, floor->exact ? "" : "at least ",
      100 * floor->cross_rack_share(),
      static_cast<double>(floor->cross_rack_bytes) / 1e12,
      o.model == "slots" ? "" : " (tasks may split over racks in this bound)");
  if (floor->placed < floor->tasks) {
    fmt::print(
        "locality floor: only {} of them fit the racks' {}, so the "
        "floor leaves out other tasks than a scheduler does and "
        "bounds it loosely\n",
        floor->placed, measure);
  }
  for (const sim::Summary& s : summaries) {
    fmt::print(
        "{}: time-0 population as placed by the warm-up: {:.1f}% "
        "cross-rack\n",
        s.scheduler, 100 * s.warmup_cross);
  }
  return 0;
}

}  // namespace

CommandMain AddSimulateCommand(CLI::App& app, CommonFlags& /*flags*/) {
  auto* cmd = app.add_subcommand(
      "simulate",
      "Simulate, in simulated time, the flow scheduler (policy, solver, "
      "checker, extraction) and the baselines on a Google 2011 trace, the "
      "Alibaba GPU trace 2023 (CPU and memory) or a synthetic workload; write "
      "placement latency, round runtime, utilisation, locality and fairness "
      "as CSV and plots");
  auto o = std::make_shared<SimulateOptions>();
  cmd->add_option("--trace-machines", o->trace_machines,
                  "Google 2011 machine_events CSV (plain, not gzip'd); with "
                  "--trace-tasks, replaces the synthetic workload");
  cmd->add_option("--trace-tasks", o->trace_tasks,
                  "Google 2011 task_events CSV (plain, not gzip'd)");
  cmd->add_option("--openb-nodes", o->openb_nodes,
                  "Alibaba GPU trace 2023 node list (openb_node_list_*.csv); "
                  "with --openb-pods, replaces the synthetic workload: CPU "
                  "and memory requests, arrivals and runtimes (GPU asks left "
                  "out; use --model cpu-mem)");
  cmd->add_option("--openb-pods", o->openb_pods,
                  "Alibaba GPU trace 2023 pod list (openb_pod_list_*.csv)");
  cmd->add_flag("--openb-pods-stay", o->openb_pods_stay,
                "openb: pods never finish (as in the FGD paper's replay), so "
                "the cluster fills; without it the trace's runtimes keep it "
                "nearly empty");
  cmd->add_option("--bad-lines", o->bad_lines,
                  "Invalid trace lines: skip (reported, counted) or fail")
      ->check(CLI::IsMember({"skip", "fail"}))
      ->capture_default_str();
  cmd->add_option("--machines", o->machines, "Synthetic: machines")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}))
      ->capture_default_str();
  cmd->add_option("--machine-fraction", o->machine_fraction,
                  "Keep this fraction of machines (trace: by id hash; "
                  "synthetic: scales --machines)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--job-fraction", o->job_fraction,
                  "Keep this fraction of jobs (by id hash)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--max-machines", o->max_machines,
                  "Keep at most this many machines (0: all)")
      ->capture_default_str();
  cmd->add_option("--max-jobs", o->max_jobs,
                  "Keep at most this many jobs (0: all)")
      ->capture_default_str();
  cmd->add_option("--machines-per-rack", o->machines_per_rack,
                  "Rack size (the trace has no racks)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000}))
      ->capture_default_str();
  cmd->add_option("--input-replicas", o->input_replicas,
                  "Copies of each input block, placed as HDFS does (second in "
                  "another rack, third beside it); 1 gives the workload of "
                  "before replication")
      ->check(CLI::Range(1u, sim::kMaxInputReplicas))
      ->capture_default_str();
  cmd->add_option("--utilisation", o->utilisation,
                  "Synthetic: steady-state fraction of slots in use")
      ->check(CLI::Range(0.0, 1.5))
      ->capture_default_str();
  cmd->add_option("--speedup", o->speedup,
                  "Divide arrival times and runtimes by this factor")
      ->check(CLI::Range(1e-3, 1e6))
      ->capture_default_str();
  cmd->add_option("--policy-clock", o->policy_clock,
                  "The clock the policy prices waiting and running time by: "
                  "trace (the workload's time, so --speedup changes only the "
                  "pace) or simulated (the accelerated clock)")
      ->check(CLI::IsMember({"trace", "simulated"}))
      ->capture_default_str();
  cmd->add_option("--price-at", o->price_at,
                  "The moment a round prices waiting and running time at: "
                  "decision (when its decisions apply: its start plus the "
                  "previous round's length, so a migration pays for the work "
                  "the task does meanwhile) or round-start")
      ->check(CLI::IsMember({"decision", "round-start"}))
      ->capture_default_str();
  cmd->add_option("--model", o->model,
                  "slots: --slots-per-machine slots per machine; cpu-mem: "
                  "CPU and memory from the normalised sizes")
      ->check(CLI::IsMember({"slots", "cpu-mem"}))
      ->capture_default_str();
  cmd->add_option("--slots-per-machine", o->slots_per_machine,
                  "Slots per machine (slot model; synthetic utilisation)")
      ->check(CLI::Range(1u, 1'000u))
      ->capture_default_str();
  cmd->add_option("--policy", o->policy,
                  "Flow policy (flowsched policy list); 'none' for baselines "
                  "only")
      ->capture_default_str();
  cmd->add_option("--solver", o->solver,
                  "incremental (the solver worker's path) or a solver name "
                  "(portfolio, cost_scaling, relaxation, ssp)")
      ->capture_default_str();
  cmd->add_option("--baselines", o->baselines,
                  "Comma-separated baselines on the same input (greedy, "
                  "greedy-fair, filter-score) or 'none'")
      ->capture_default_str();
  auto* duration = cmd->add_option("--duration", o->duration_s,
                                   "Simulated seconds (after --speedup); 0: "
                                   "the whole trace (the default "
                                   "with a trace)")
                       ->check(CLI::Range(0.0, 1e9))
                       ->capture_default_str();
  cmd->add_option("--out", o->out, "Output directory (created)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed (synthetic workload, data blocks)")
      ->capture_default_str();
  cmd->add_option("--max-wall", o->max_wall_s,
                  "Stop each scheduler's simulation after this many wall "
                  "seconds (0: no limit); reported as truncated")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  cmd->add_option("--export-rounds", o->export_rounds,
                  "Write the flow scheduler's first N round networks as "
                  "DIMACS to <out>/networks/round-<k>.dimacs (for "
                  "`flowsched solve`)")
      ->check(CLI::Range(0u, 100000u))
      ->capture_default_str();
  cmd->add_flag("--locality-floor", o->locality_floor,
                "Also solve for the least cross-rack input any placement of "
                "the time-0 population could read with the racks' slots (CPU "
                "and memory with --model cpu-mem), and print it next to each "
                "scheduler's");
  cmd->add_option("--progress-every", o->progress_every_s,
                  "Seconds (wall) between progress lines on stderr")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  return [o, duration]() {
    // A trace runs whole unless told otherwise (the Google trace's events
    // start at 600 s).
    if (o->from_trace() && duration->count() == 0) o->duration_s = 0;
    if (!o->from_trace() && o->duration_s <= 0) {
      std::cerr << "flowsched simulate: a synthetic workload needs "
                   "--duration > 0\n";
      return 2;
    }
    auto workload = LoadWorkload(*o);
    if (!workload.ok()) {
      std::cerr << "flowsched simulate: " << workload.status().message()
                << "\n";
      return 2;
    }
    uint64_t initial = 0;
    for (const sim::SimTask& t : workload->tasks) initial += t.submit_us == 0;
    std::cerr << fmt::format(
        "workload: {} machines, {} tasks ({} present at time 0, {} arriving)\n",
        workload->machines.size(), workload->tasks.size(), initial,
        workload->tasks.size() - initial);
    std::error_code ec;
    std::filesystem::create_directories(o->out, ec);
    if (ec) {
      std::cerr << "flowsched simulate: cannot create " << o->out << ": "
                << ec.message() << "\n";
      return 2;
    }
    std::vector<std::string> schedulers;
    if (o->policy != "none") schedulers.push_back("flow:" + o->policy);
    if (o->baselines != "none") {
      for (std::string& b : sim::SplitContenderList(o->baselines)) {
        schedulers.push_back(std::move(b));
      }
    }
    const sim::SimOptions options{
        .model =
            o->model == "slots" ? sim::Model::kSlots : sim::Model::kCpuMemory,
        .slots_per_machine = o->slots_per_machine,
        .speedup = o->speedup,
        .policy_clock = o->policy_clock == "trace"
                            ? sim::SimOptions::PolicyClock::kTrace
                            : sim::SimOptions::PolicyClock::kSimulated,
        .price_at = o->price_at == "decision"
                        ? sim::SimOptions::PriceAt::kDecision
                        : sim::SimOptions::PriceAt::kRoundStart,
        .horizon_us = std::llround(o->duration_s * 1e6),
        .solver = o->solver,
        .progress = &std::cerr,
        .progress_every_s = o->progress_every_s,
        .max_wall_s = o->max_wall_s,
        .export_dir = o->export_rounds > 0 ? o->out + "/networks" : "",
        .export_rounds = o->export_rounds};
    if (o->export_rounds > 0) {
      std::filesystem::create_directories(options.export_dir, ec);
      if (ec) {
        std::cerr << "flowsched simulate: cannot create " << options.export_dir
                  << ": " << ec.message() << "\n";
        return 2;
      }
    }
    std::vector<sim::SimResult> results;
    std::vector<sim::Summary> summaries;
    for (const std::string& name : schedulers) {
      auto result = sim::Simulate(*workload, name, options);
      if (!result.ok()) {
        std::cerr << "flowsched simulate: " << name << ": "
                  << result.status().message() << "\n";
        return result.status().code() == absl::StatusCode::kInvalidArgument ? 2
                                                                            : 1;
      }
      if (auto s = sim::WriteSchedulerCsvs(*result, o->out); !s.ok()) {
        std::cerr << "flowsched simulate: " << s.message() << "\n";
        return 1;
      }
      summaries.push_back(sim::Summarise(*result));
      results.push_back(std::move(*result));
    }
    if (auto s = sim::WriteSummaryCsv(summaries, o->out); !s.ok()) {
      std::cerr << "flowsched simulate: " << s.message() << "\n";
      return 1;
    }
    fmt::print("{}", sim::SummaryTable(summaries));
    for (const sim::Summary& s : summaries) {
      fmt::print(
          "{}: simulated {:.1f}s in {:.1f}s wall ({:.1f}x real time at "
          "speedup {:g}: {:.0f}x the trace's pace); rounds busy {:.1f}s "
          "({:.0f}% of simulated time); warm-up (time-0 population) {:.1f}s\n",
          s.scheduler, s.sim_s, s.wall_s, s.sim_per_wall(), o->speedup,
          s.sim_per_wall() * o->speedup, s.busy_s,
          s.sim_s > 0 ? 100 * s.busy_s / s.sim_s : 0.0, s.warmup_s);
    }
    for (const sim::SimResult& r : results) {
      if (r.truncated) {
        fmt::print("{}: TRUNCATED by --max-wall at {:.1f}s simulated\n",
                   r.scheduler, static_cast<double>(r.sim_end_us) / 1e6);
      }
      if (r.rejected_events > 0 || r.stale > 0 || r.capacity_violations > 0) {
        fmt::print(
            "{}: {} events rejected, {} stale decisions, {} capacity "
            "violations\n",
            r.scheduler, r.rejected_events, r.stale, r.capacity_violations);
      }
    }
    const int floor_rc =
        o->locality_floor ? PrintLocalityFloor(*workload, *o, summaries) : 0;
    fmt::print("{}\n", sim::WritePlots(results, o->out));
    fmt::print("CSVs in {}\n", o->out);
    return floor_rc;
  };
}

}  // namespace flowsched::tools
