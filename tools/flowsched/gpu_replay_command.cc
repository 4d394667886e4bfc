// `flowsched gpu-replay`: the FGD paper's replay of the Alibaba openb GPU
// trace (Weng et al., ATC 2023) with its greedy schedulers and any flow
// policy, on the project's fit rule; see tools/sim/gpu_replay.h and
// docs/2026-11-27-gpu-replay.md.

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "tools/flowsched/commands.h"
#include "tools/sim/contender.h"
#include "tools/sim/gpu_replay.h"
#include "tools/sim/gpu_replay_report.h"
#include "tools/sim/report.h"

namespace flowsched::tools {
namespace {

// Used when --nodes / --pods are not given and these exist (a checkout
// beside the shared data directory).
constexpr char kDefaultNodes[] =
    "../shared/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
constexpr char kDefaultPods[] =
    "../shared/data/alibaba-gpu-v2023/openb_pod_list_default.csv";

struct GpuReplayFlags {
  std::string nodes;
  std::string pods;
  std::string seeds = "42-51";
  std::string schedulers = "random,dot-product,clustering,packing,best-fit,fgd";
  uint32_t batch = 1;
  double inflate = 1.3;
  std::string solver = "incremental";
  std::string csv;
  double progress_every_s = 10.0;
};

// "42-51", "42,45" or "42": the seeds in order.
absl::StatusOr<std::vector<uint64_t>> ParseSeeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  const std::vector<std::string> parts = absl::StrSplit(text, ',');
  for (const std::string& part : parts) {
    const std::vector<std::string> range = absl::StrSplit(part, '-');
    uint64_t first = 0, last = 0;
    if (range.size() > 2 || !absl::SimpleAtoi(range[0], &first) ||
        !absl::SimpleAtoi(range.back(), &last) || last < first ||
        last - first > 10'000) {
      return absl::InvalidArgumentError(fmt::format(
          "--seeds '{}': want a list of seeds or ranges like 42-51", text));
    }
    for (uint64_t seed = first;; ++seed) {  // `last` may be the largest value
      if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end()) {
        return absl::InvalidArgumentError(
            fmt::format("--seeds '{}': seed {} is given twice", text, seed));
      }
      seeds.push_back(seed);
      if (seed == last) break;
    }
  }
  return seeds;
}

// The flag's path, else the default when it exists; empty when neither.
std::string PathOrDefault(const std::string& flag, const char* fallback) {
  if (!flag.empty()) return flag;
  std::error_code ec;
  return std::filesystem::exists(fallback, ec) ? fallback : "";
}

int Run(const GpuReplayFlags& flags) {
  const std::string nodes_path = PathOrDefault(flags.nodes, kDefaultNodes);
  const std::string pods_path = PathOrDefault(flags.pods, kDefaultPods);
  if (nodes_path.empty() || pods_path.empty()) {
    std::cerr << "flowsched gpu-replay: give --nodes and --pods (openb node "
                 "and pod lists; the defaults under ../shared/data do not "
                 "exist here)\n";
    return 2;
  }
  auto seeds = ParseSeeds(flags.seeds);
  if (!seeds.ok()) {
    std::cerr << "flowsched gpu-replay: " << seeds.status().message() << "\n";
    return 2;
  }
  const std::vector<std::string> schedulers =
      sim::SplitContenderList(flags.schedulers);
  if (schedulers.empty()) {
    std::cerr << "flowsched gpu-replay: --schedulers names none\n";
    return 2;
  }
  for (const std::string& scheduler : schedulers) {
    // Every name is checked before the first run, not when its turn comes.
    if (auto made = sim::MakeContender(scheduler, flags.solver); !made.ok()) {
      std::cerr << "flowsched gpu-replay: " << made.status().message() << "\n";
      return 2;
    }
  }
  auto nodes = sim::ReadOpenbNodeFile(nodes_path);
  if (!nodes.ok()) {
    std::cerr << "flowsched gpu-replay: " << nodes.status().message() << "\n";
    return 1;
  }
  auto pods = sim::ReadOpenbPodFile(pods_path);
  if (!pods.ok()) {
    std::cerr << "flowsched gpu-replay: " << pods.status().message() << "\n";
    return 1;
  }
  std::cerr << fmt::format("gpu-replay: {} nodes ({}), {} pods ({})\n",
                           nodes->size(), nodes_path, pods->size(), pods_path);
  std::vector<sim::GpuReplayResult> results;
  const size_t total = schedulers.size() * seeds->size();
  for (const std::string& scheduler : schedulers) {
    for (uint64_t seed : *seeds) {
      sim::GpuReplayOptions options{.seed = seed,
                                    .inflate = flags.inflate,
                                    .batch = flags.batch,
                                    .solver = flags.solver,
                                    .progress = &std::cerr,
                                    .progress_every_s = flags.progress_every_s};
      auto result = sim::RunGpuReplay(*nodes, *pods, scheduler, options);
      if (!result.ok()) {
        std::cerr << "flowsched gpu-replay: " << result.status().message()
                  << "\n";
        return 1;
      }
      std::cerr << fmt::format(
          "gpu-replay {}/{}: {} seed {} batch {}: unallocated {:.2f}% at "
          "100% arrived, {} of {} pods failed, {:.1f} s\n",
          results.size() + 1, total, scheduler, seed, flags.batch,
          100 * result->UnallocatedAt(1.0), result->unplaced, result->pods,
          result->wall_s);
      results.push_back(std::move(*result));
    }
  }
  const auto rows = sim::SummariseGpuReplays(results);
  std::cout << sim::GpuReplayTable(rows);
  if (!flags.csv.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(flags.csv, ec);
    if (auto s = sim::WriteGpuReplayCsvs(results, rows, flags.csv); !s.ok()) {
      std::cerr << "flowsched gpu-replay: " << s.message() << "\n";
      return 1;
    }
    const std::string problem =
        sim::RunGnuplot(flags.csv, "plot_gpu_replay.gp");
    std::cerr << (problem.empty()
                      ? fmt::format("plot: {}/unallocated_gpu.png\n", flags.csv)
                      : problem + "\n");
  }
  return 0;
}

}  // namespace

CommandMain AddGpuReplayCommand(CLI::App& app, CommonFlags& /*flags*/) {
  auto* cmd = app.add_subcommand(
      "gpu-replay",
      "Replay the Alibaba openb GPU trace as the FGD paper does (pods "
      "inflated to 130% of GPU capacity, shuffled per seed, never "
      "finishing) with its greedy GPU schedulers and flow policies; print "
      "unallocated GPU at 100%/130% arrived and fragmentation at 90%");
  auto f = std::make_shared<GpuReplayFlags>();
  cmd->add_option("--nodes", f->nodes,
                  fmt::format("openb node list CSV (default {} if it exists)",
                              kDefaultNodes));
  cmd->add_option("--pods", f->pods,
                  fmt::format("openb pod list CSV, any variant (default {} "
                              "if it exists)",
                              kDefaultPods));
  cmd->add_option("--seeds", f->seeds,
                  "Seeds (shuffle, inflation, random): a list, ranges allowed")
      ->capture_default_str();
  cmd->add_option("--schedulers", f->schedulers,
                  "Comma-separated: random, dot-product, clustering, packing, "
                  "best-fit, fgd, fgd-sigmoid, or "
                  "flow:<policy>[:key=value,...]")
      ->capture_default_str();
  cmd->add_option("--batch", f->batch,
                  "Pods per arrival batch, one scheduling round each (1: the "
                  "paper's protocol; flow: e.g. 100)")
      ->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  cmd->add_option("--inflate", f->inflate,
                  "Requested GPU of the replayed pods / GPU capacity")
      ->check(CLI::Range(0.01, 10.0))
      ->capture_default_str();
  cmd->add_option("--solver", f->solver,
                  "Flow contenders: incremental or a solver registry name")
      ->capture_default_str();
  cmd->add_option("--csv", f->csv,
                  "Write per-run curves, mean curves, summary.csv and "
                  "plot_gpu_replay.gp (figure 9a) into this directory");
  cmd->add_option("--progress-every", f->progress_every_s,
                  "Progress line on stderr every this many seconds of a run")
      ->capture_default_str();
  return [f]() { return Run(*f); };
}

}  // namespace flowsched::tools
