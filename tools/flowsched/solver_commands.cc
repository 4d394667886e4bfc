// `flowsched solve`: one min-cost flow instance in DIMACS format through a
// flowsched solver, with the optimality certificate checked.

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "services/solver/dimacs.h"
#include "services/solver/flow_checker.h"
#include "services/solver/solver_registry.h"
#include "tools/flowsched/commands.h"

namespace flowsched::tools {
namespace {

// Exit codes: 0 optimal, 1 infeasible or solver failure, 2 bad input.
constexpr int kExitInfeasible = 1;
constexpr int kExitBadInput = 2;

struct SolveFlags {
  std::string file = "-";
  std::string algorithm;
  bool flows = false;
};

int RunSolve(const SolveFlags& flags) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (flags.file != "-") {
    file.open(flags.file);
    if (!file) {
      std::cerr << "flowsched solve: cannot open " << flags.file << "\n";
      return kExitBadInput;
    }
    in = &file;
  }
  const std::string name = flags.algorithm.empty()
                               ? std::string(solver::kDefaultSolver)
                               : flags.algorithm;
  absl::StatusOr<std::unique_ptr<solver::McmfSolver>> solver =
      solver::MakeSolver(name);
  if (!solver.ok()) {
    std::cerr << "flowsched solve: " << solver.status().message() << "\n";
    return kExitBadInput;
  }
  const absl::StatusOr<solver::DimacsProblem> dimacs = solver::ParseDimacs(*in);
  if (!dimacs.ok()) {
    std::cerr << "flowsched solve: " << flags.file << ": "
              << dimacs.status().message() << "\n";
    return kExitBadInput;
  }
  const auto start = std::chrono::steady_clock::now();
  const absl::StatusOr<solver::McmfSolution> solution =
      (*solver)->Solve(dimacs->problem);
  const double solve_ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  if (!solution.ok()) {
    std::cerr << "flowsched solve: " << name
              << " failed: " << solution.status().ToString() << "\n";
    return kExitInfeasible;
  }
  if (solution->outcome == solver::McmfOutcome::kInfeasible) {
    std::cerr << "flowsched solve: infeasible: no flow meets every supply "
                 "within the arc capacities (algorithm "
              << name << ", " << fmt::format("{:.3f}", solve_ms) << " ms)\n";
    return kExitInfeasible;
  }
  if (const absl::Status check =
          solver::CheckOptimalFlow(dimacs->problem, *solution);
      !check.ok()) {
    std::cerr << "flowsched solve: " << name
              << " returned a flow that fails the optimality check: "
              << check.ToString() << "\n";
    return kExitInfeasible;
  }
  const absl::StatusOr<int64_t> cost = solver::OriginalCost(*dimacs, *solution);
  if (!cost.ok()) {
    std::cerr << "flowsched solve: " << cost.status().message() << "\n";
    return kExitInfeasible;
  }
  std::cout << fmt::format("cost={} algorithm={} solve_ms={:.3f}\n", *cost,
                           solution->algorithm, solve_ms);
  if (flags.flows) {
    const std::vector<int64_t> flow = solver::OriginalFlow(*dimacs, *solution);
    std::string out;
    for (size_t i = 0; i < flow.size(); ++i) {
      if (flow[i] == 0) continue;
      const solver::McmfArc& arc = dimacs->problem.arcs[i];
      out += fmt::format("f {} {} {}\n", arc.src + 1, arc.dst + 1, flow[i]);
    }
    std::cout << out;
  }
  std::cout.flush();
  return 0;
}

}  // namespace

CommandMain AddSolveCommand(CLI::App& app, CommonFlags& /*flags*/) {
  auto* cmd = app.add_subcommand(
      "solve",
      "Solve a DIMACS min-cost flow instance and print "
      "'cost=<c> algorithm=<name> solve_ms=<t>' (exit 1: infeasible, "
      "2: malformed input)");
  auto flags = std::make_shared<SolveFlags>();
  cmd->add_option("file", flags->file, "DIMACS file, or - for stdin")
      ->capture_default_str();
  cmd->add_option("--algorithm", flags->algorithm,
                  "Min-cost flow algorithm (default: " +
                      std::string(solver::kDefaultSolver) + "; known: " +
                      absl::StrJoin(solver::SolverNames(), ", ") + ")");
  cmd->add_flag("--flows", flags->flows,
                "Also print 'f <src> <dst> <flow>' per arc with non-zero "
                "flow (1-based, input order, lower bounds included)");
  return [flags]() { return RunSolve(*flags); };
}

}  // namespace flowsched::tools
