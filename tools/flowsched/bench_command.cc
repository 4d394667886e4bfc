// `flowsched bench solver`: the min-cost flow benchmark of tools/bench
// (flowsched's solvers versus LEMON on scheduling-shaped networks), and
// `bench e2e` (bench_e2e_command.cc).

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "services/solver/solver_registry.h"
#include "tools/bench/random_family.h"
#include "tools/bench/solver_bench.h"
#include "tools/flowsched/commands.h"

namespace flowsched::tools {

CommandMain AddBenchCommand(CLI::App& app, CommonFlags& flags) {
  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  auto* cmd = bench->add_subcommand(
      "solver",
      "Min-cost flow solvers versus LEMON NetworkSimplex/CostScaling on "
      "Quincy and load-spreading networks (see tools/bench/README.md)");
  auto options = std::make_shared<bench::BenchOptions>();
  auto list = std::make_shared<bool>(false);
  BenchSubcommand e2e = AddBenchE2eCommand(*bench, flags, app);
  cmd->add_flag("--quick", options->quick,
                "Small sizes only (seconds; the CI smoke run)");
  cmd->add_option("--cases", options->case_filters,
                  "Comma-separated substrings of case names (see --list)")
      ->delimiter(',');
  cmd->add_option("--dimacs", options->dimacs_files,
                  "Benchmark these DIMACS min-cost flow files (comma-"
                  "separated) instead of the generated cases, e.g. networks "
                  "from `flowsched simulate --export-rounds`")
      ->delimiter(',')
      ->check(CLI::ExistingFile);
  cmd->add_option("--csv", options->csv_path,
                  "Write one row per (case, algorithm) to this file");
  cmd->add_option("--algorithm", options->algorithms,
                  "flowsched algorithms (comma-separated: MakeSolver names, "
                  "among them incremental, which repairs round by round on "
                  "incremental sequences; on those also warm_portfolio and "
                  "warm_relaxation; default: every solver plus "
                  "warm_portfolio). LEMON always runs.")
      ->delimiter(',');
  cmd->add_option("--repeat", options->repeat,
                  "Solves per static case and algorithm (median reported)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-seconds", options->max_seconds,
                  "Budget per solve; an algorithm whose solve takes longer "
                  "is killed and reported as skipped for that case "
                  "(0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  auto family = std::make_shared<bench::RandomFamilyOptions>();
  family->count = 0;
  cmd->add_option("--random", family->count,
                  "Instead of the standard suite, N networks whose shape is "
                  "drawn at random (machines, rack size, slots, load, "
                  "running share, preference arcs, job sizes, cost range); "
                  "reports each algorithm's median, p90 and worst ratio to "
                  "the best LEMON. Default algorithm: portfolio")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--random-seed", family->seed,
                  "Seed of the random family (same seed, same networks)")
      ->capture_default_str();
  cmd->add_option("--random-min-machines", family->min_machines,
                  "Smallest network of the random family (machines)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--random-max-machines", family->max_machines,
                  "Largest network of the random family (machines)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--write-dimacs", options->write_dimacs_dir,
                  "Write the selected generated cases' networks to "
                  "DIR/<case>.min (DIMACS) and solve nothing")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--list", *list, "Print the selected cases and algorithms");
  return [options, family, list, cmd, e2e]() {
    if (e2e.app->parsed()) return e2e.main();
    if (!cmd->parsed()) return 2;
    if (family->count > 0) {
      if (family->min_machines > family->max_machines) {
        std::cerr << "flowsched bench solver: --random-min-machines "
                  << family->min_machines << " is above --random-max-machines "
                  << family->max_machines << "\n";
        return 2;
      }
      if (!options->dimacs_files.empty()) {
        std::cerr << "flowsched bench solver: --random and --dimacs exclude "
                     "each other\n";
        return 2;
      }
      options->cases = bench::RandomFamilyCases(*family);
      if (options->algorithms.empty()) options->algorithms = {"portfolio"};
    }
    if (options->algorithms.empty()) {
      options->algorithms = solver::SolverNames();  // incremental among them
      options->algorithms.push_back(bench::kWarmPortfolio);
    }
    if (absl::Status s = bench::CheckAlgorithmNames(options->algorithms);
        !s.ok()) {
      std::cerr << "flowsched bench solver: " << s.message() << "\n";
      return 2;
    }
    if (*list) {
      for (const bench::BenchCase& c :
           options->cases.empty() ? bench::StandardCases(options->quick)
                                  : options->cases) {
        bool selected = options->case_filters.empty();
        for (const std::string& f : options->case_filters) {
          if (c.name.find(f) != std::string::npos) selected = true;
        }
        if (selected) std::cout << "case " << c.name << "\n";
      }
      for (const std::string& a : options->algorithms) {
        std::cout << "algorithm " << a << "\n";
      }
      std::cout << "algorithm " << bench::kLemonNetworkSimplex << "\n"
                << "algorithm " << bench::kLemonCostScaling << "\n";
      return 0;
    }
    return bench::RunSolverBench(*options, std::cout, std::cerr);
  };
}

}  // namespace flowsched::tools
