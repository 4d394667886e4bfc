#pragma once

// Reading and writing the DIMACS min-cost flow format, so that flowsched's
// solvers can be run on the standard benchmark instances (and networks
// exported from flowsched can be fed to other solvers such as CS2 or LEMON's
// dimacs-solver).
//
// Format (1-based node ids, one item per line):
//   c <comment>
//   p min <nodes> <arcs>                 exactly once, before n and a lines
//   n <id> <supply>                      at most once per node, before a lines
//   a <src> <dst> <low> <cap> <cost>     exactly <arcs> of them
// Nodes without an n line have supply 0.

#include <cstdint>
#include <istream>
#include <ostream>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

// Largest node count ParseDimacs accepts. The p line alone decides how much
// memory is allocated, so a bound keeps a corrupt header from asking for
// tens of gigabytes; 2^28 nodes is far beyond any scheduling network.
inline constexpr uint32_t kMaxDimacsNodeCount = uint32_t{1} << 28;

// A DIMACS instance with lower bounds removed. McmfProblem has no lower
// bounds, so each arc with low > 0 is rewritten as the standard
// transformation (Quincy appendix, "minimum flow on an edge"): capacity
// cap - low, supply[src] -= low, supply[dst] += low, and the constant
// low * cost is added to every solution's cost. With f' the flow of
// `problem`, the original flow is f = f' + lower and its cost is
// cost(f') + cost_offset.
struct DimacsProblem {
  McmfProblem problem;
  int64_t cost_offset = 0;     // sum over arcs of low * cost
  std::vector<int64_t> lower;  // per arc, the original lower bound
};

// Parses one instance. Every malformed input gives InvalidArgument starting
// with "line N: " (N 1-based; for problems only detectable at the end, N is
// the p line or the last line) and saying what is wrong: missing or
// duplicate p line, a problem type other than "min", n/a lines before the
// p line or n lines after a lines, node id out of range, duplicate n line,
// arc count different from the p line, non-numeric or extra fields,
// negative lower bound or capacity, cap < low, |cost| > kMaxArcCost,
// cap > kMaxArcCapacity, |supply| > kMaxNodeSupply (also after the lower
// bound transformation), supplies not summing to zero (DIMACS min requires
// balanced instances; we do not add a dummy node), or a cost offset that
// does not fit int64. The result always passes ValidateProblem.
absl::StatusOr<DimacsProblem> ParseDimacs(std::istream& in);

// Writes `problem` as a DIMACS min instance: the comment (each of its lines
// prefixed with "c "), the p line, n lines for non-zero supplies, and one
// a line per arc in input order with lower bound 0. InvalidArgument if the
// problem fails ValidateProblem, InternalError if the stream fails.
absl::Status WriteDimacs(const McmfProblem& problem, std::ostream& out,
                         std::string_view comment);

// The optimal cost and flows in terms of the original instance: solution
// cost plus cost_offset (OutOfRange if that does not fit int64), and
// flow + lower per arc. REQUIRES: solution.outcome == kOptimal and
// solution.flow.size() == dimacs.lower.size().
absl::StatusOr<int64_t> OriginalCost(const DimacsProblem& dimacs,
                                     const McmfSolution& solution);
std::vector<int64_t> OriginalFlow(const DimacsProblem& dimacs,
                                  const McmfSolution& solution);

}  // namespace flowsched::solver
