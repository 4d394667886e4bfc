#pragma once

// `flowsched bench solver`: flowsched's min-cost flow solvers against LEMON
// NetworkSimplex and CostScaling on the same scheduling networks, with
// every flowsched result certified by CheckOptimalFlow and its cost
// compared with LEMON's. See tools/bench/README.md.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/scheduling_networks.h"

namespace flowsched::bench {

// LEMON algorithm names in tables and CSV.
inline constexpr char kLemonNetworkSimplex[] = "lemon_ns";
inline constexpr char kLemonCostScaling[] = "lemon_cs";
// flowsched's incremental solver: on incremental sequences it repairs each
// round from the last (IncrementalRunner); on a single network it is the
// registry's from-scratch solver::ScratchIncremental.
inline constexpr char kIncremental[] = "incremental";
// Firmament's incremental portfolio (relaxation and cost scaling both
// resuming from the previous round's optimum, Portfolio::SolveFrom);
// incremental sequences only.
inline constexpr char kWarmPortfolio[] = "warm_portfolio";
// Relaxation alone resuming from the previous round's optimum
// (Relaxation::SolveFrom); incremental sequences only.
inline constexpr char kWarmRelaxation[] = "warm_relaxation";

// InvalidArgument naming the first entry of `algorithms` that is neither a
// solver::MakeSolver name nor one of the sequence-only warm runners above.
absl::Status CheckAlgorithmNames(const std::vector<std::string>& algorithms);

struct BenchCase {
  std::string name;
  // "static", "contended", "incremental", "dimacs" or "random" (a static
  // network of RandomFamilyCases)
  std::string kind;
  std::string dimacs_path;  // kind "dimacs": the network is read from here
  ClusterShape shape;
  uint32_t rounds = 0;  // incremental: rounds after the initial solve
  IncrementalOptions incremental;
};

// The standard suite. Full: Quincy and load-spreading shapes at 1,250 /
// 5,000 / 12,500 machines x 50/90/97/110% utilisation, the contended
// load-spreading case (12,500 machines at 97% plus a 5,000-task job) and
// incremental sequences. Quick: the same kinds at 100 machines (seconds).
std::vector<BenchCase> StandardCases(bool quick);

struct BenchOptions {
  // flowsched algorithms (solver::MakeSolver names); LEMON NetworkSimplex
  // and CostScaling always run as the reference.
  std::vector<std::string> algorithms;
  // Substrings of case names; empty runs every case.
  std::vector<std::string> case_filters;
  bool quick = false;
  int repeat = 3;  // static cases: solves per algorithm, median reported
  // Wall-clock budget per solve; 0 = none. An algorithm whose solve takes
  // longer is killed and reported as skipped for that case.
  double max_seconds = 0;
  std::string csv_path;  // empty: no CSV
  // DIMACS min-cost flow files benchmarked as static cases (kind "dimacs",
  // named by file name) instead of the standard suite, e.g. the networks
  // `flowsched simulate --export-rounds` writes.
  std::vector<std::string> dimacs_files;
  // When not empty (and no dimacs_files), these cases instead of the
  // standard suite, e.g. RandomFamilyCases. Kind "random" cases add a
  // summary of each algorithm's ratio to the best LEMON: median, p90 and
  // the worst case.
  std::vector<BenchCase> cases;
  // When not empty: write each selected generated case's network (an
  // incremental sequence's first round) to DIR/<case>.min as DIMACS and
  // solve nothing, so another tool can solve the same networks.
  std::string write_dimacs_dir;
};

// Runs the selected cases, each algorithm in its own forked process (for
// per-algorithm peak memory and the time budget). Tables go to `out`,
// progress to `progress`. Returns 0 if every completed flowsched result
// passed CheckOptimalFlow and matched LEMON's cost, 1 otherwise, 2 for bad
// options (unknown case filter, unwritable CSV).
int RunSolverBench(const BenchOptions& options, std::ostream& out,
                   std::ostream& progress);

}  // namespace flowsched::bench
