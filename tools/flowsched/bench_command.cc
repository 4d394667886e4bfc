// `flowsched bench solver`: the min-cost flow benchmark of tools/bench
// (flowsched's solvers versus LEMON on scheduling-shaped networks), and
// `bench e2e` (bench_e2e_command.cc).

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/solver_bench.h"
#include "tools/flowsched/commands.h"
#include "services/solver/solver_registry.h"

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
  cmd->add_flag("--list", *list, "Print the selected cases and algorithms");
  return [options, list, cmd, e2e]() {
    if (e2e.app->parsed()) return e2e.main();
    if (!cmd->parsed()) return 2;
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
      for (const bench::BenchCase& c : bench::StandardCases(options->quick)) {
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
