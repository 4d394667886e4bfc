#include "services/solver/dimacs.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "services/solver/int128.h"
#include "services/solver/problem_validator.h"

namespace flowsched::solver {
namespace {

absl::Status LineError(size_t line, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

// Whitespace-separated fields of one line; views into the line.
std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// Parses a whole field as a decimal int64 ("+5", "5.0" and "5x" are
// rejected: DIMACS fields are plain integers).
absl::StatusOr<int64_t> ParseInt(std::string_view field, std::string_view name,
                                 size_t line) {
  int64_t value = 0;
  const auto [end, error] =
      std::from_chars(field.data(), field.data() + field.size(), value);
  if (error == std::errc::result_out_of_range) {
    return LineError(line,
                     absl::StrCat(std::string(name), " '", std::string(field),
                                  "' is out of the int64 range"));
  }
  if (error != std::errc() || end != field.data() + field.size()) {
    return LineError(line,
                     absl::StrCat(std::string(name), " '", std::string(field),
                                  "' is not an integer"));
  }
  return value;
}

class Parser {
 public:
  absl::StatusOr<DimacsProblem> Parse(std::istream& in) {
    std::string text;
    while (std::getline(in, text)) {
      ++line_;
      std::string_view view(text);
      if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
      const std::vector<std::string_view> fields = Split(view);
      if (fields.empty()) continue;
      absl::Status status;
      if (fields[0] == "c") {
        continue;
      } else if (fields[0] == "p") {
        status = ParseProblemLine(fields);
      } else if (fields[0] == "n") {
        status = ParseNodeLine(fields);
      } else if (fields[0] == "a") {
        status = ParseArcLine(fields);
      } else if (fields[0][0] == 'c') {
        continue;  // "cfoo": still a comment by its first character
      } else {
        status = LineError(
            line_, absl::StrCat("unknown line type '", std::string(fields[0]),
                                "' (expected c, p, n or a)"));
      }
      if (!status.ok()) return status;
    }
    if (in.bad()) return absl::InvalidArgumentError("read error");
    return Finish();
  }

 private:
  absl::Status ParseProblemLine(const std::vector<std::string_view>& fields) {
    if (p_line_ != 0) {
      return LineError(line_, absl::StrCat("duplicate p line (first on line ",
                                           p_line_, ")"));
    }
    if (fields.size() != 4) {
      return LineError(line_, absl::StrCat("p line needs 3 fields (min "
                                           "<nodes> <arcs>), got ",
                                           fields.size() - 1));
    }
    if (fields[1] != "min") {
      return LineError(line_,
                       absl::StrCat("problem type '", std::string(fields[1]),
                                    "' is not supported; expected "
                                    "'min'"));
    }
    absl::StatusOr<int64_t> nodes = ParseInt(fields[2], "node count", line_);
    if (!nodes.ok()) return nodes.status();
    absl::StatusOr<int64_t> arcs = ParseInt(fields[3], "arc count", line_);
    if (!arcs.ok()) return arcs.status();
    if (*nodes < 0 || *nodes > int64_t{kMaxDimacsNodeCount}) {
      return LineError(line_,
                       absl::StrCat("node count ", *nodes, " is outside [0, ",
                                    kMaxDimacsNodeCount, "]"));
    }
    if (*arcs < 0 || static_cast<uint64_t>(*arcs) > kMaxArcCount) {
      return LineError(line_,
                       absl::StrCat("arc count ", *arcs, " is outside [0, ",
                                    kMaxArcCount, "]"));
    }
    p_line_ = line_;
    declared_arcs_ = static_cast<size_t>(*arcs);
    McmfProblem& problem = result_.problem;
    problem.node_count = static_cast<uint32_t>(*nodes);
    problem.supply.assign(problem.node_count, 0);
    node_seen_.assign(problem.node_count, false);
    // Reserve only what a plausible file holds; a lying header must not
    // allocate gigabytes before the first arc is read.
    const size_t reserve = std::min<size_t>(declared_arcs_, size_t{1} << 22);
    problem.arcs.reserve(reserve);
    result_.lower.reserve(reserve);
    return absl::OkStatus();
  }

  absl::StatusOr<uint32_t> ParseNode(std::string_view field,
                                     std::string_view name) {
    absl::StatusOr<int64_t> id = ParseInt(field, name, line_);
    if (!id.ok()) return id.status();
    if (*id < 1 || *id > int64_t{result_.problem.node_count}) {
      return LineError(line_, absl::StrCat(std::string(name), " ", *id,
                                           " is out of range [1, ",
                                           result_.problem.node_count, "]"));
    }
    return static_cast<uint32_t>(*id - 1);
  }

  absl::Status ParseNodeLine(const std::vector<std::string_view>& fields) {
    if (p_line_ == 0) return LineError(line_, "n line before the p line");
    if (!result_.problem.arcs.empty()) {
      return LineError(line_,
                       "n line after the first a line (DIMACS puts "
                       "node descriptors before arcs)");
    }
    if (fields.size() != 3) {
      return LineError(line_, absl::StrCat("n line needs 2 fields (<id> "
                                           "<supply>), got ",
                                           fields.size() - 1));
    }
    absl::StatusOr<uint32_t> node = ParseNode(fields[1], "node id");
    if (!node.ok()) return node.status();
    absl::StatusOr<int64_t> supply = ParseInt(fields[2], "supply", line_);
    if (!supply.ok()) return supply.status();
    if (node_seen_[*node]) {
      return LineError(line_,
                       absl::StrCat("duplicate n line for node ", *node + 1));
    }
    if (*supply > kMaxNodeSupply || *supply < -kMaxNodeSupply) {
      return LineError(line_, absl::StrCat("supply ", *supply,
                                           " is beyond +-kMaxNodeSupply (",
                                           kMaxNodeSupply, ")"));
    }
    node_seen_[*node] = true;
    result_.problem.supply[*node] = *supply;
    supply_sum_ += *supply;
    return absl::OkStatus();
  }

  absl::Status ParseArcLine(const std::vector<std::string_view>& fields) {
    if (p_line_ == 0) return LineError(line_, "a line before the p line");
    if (fields.size() != 6) {
      return LineError(line_, absl::StrCat("a line needs 5 fields (<src> "
                                           "<dst> <low> <cap> <cost>), got ",
                                           fields.size() - 1));
    }
    if (result_.problem.arcs.size() == declared_arcs_) {
      return LineError(line_,
                       absl::StrCat("more a lines than the ", declared_arcs_,
                                    " arcs the p line declares"));
    }
    absl::StatusOr<uint32_t> src = ParseNode(fields[1], "source node");
    if (!src.ok()) return src.status();
    absl::StatusOr<uint32_t> dst = ParseNode(fields[2], "destination node");
    if (!dst.ok()) return dst.status();
    absl::StatusOr<int64_t> low = ParseInt(fields[3], "lower bound", line_);
    if (!low.ok()) return low.status();
    absl::StatusOr<int64_t> cap = ParseInt(fields[4], "capacity", line_);
    if (!cap.ok()) return cap.status();
    absl::StatusOr<int64_t> cost = ParseInt(fields[5], "cost", line_);
    if (!cost.ok()) return cost.status();
    if (*low < 0) {
      return LineError(line_, absl::StrCat("negative lower bound ", *low));
    }
    if (*cap < 0) {
      return LineError(line_, absl::StrCat("negative capacity ", *cap));
    }
    if (*cap < *low) {
      return LineError(line_, absl::StrCat("capacity ", *cap,
                                           " is below the lower bound ", *low));
    }
    if (*cap > kMaxArcCapacity) {
      return LineError(
          line_, absl::StrCat("capacity ", *cap, " exceeds kMaxArcCapacity (",
                              kMaxArcCapacity, ")"));
    }
    if (*cost > kMaxArcCost || *cost < -kMaxArcCost) {
      return LineError(
          line_, absl::StrCat("cost ", *cost, " is beyond +-kMaxArcCost (",
                              kMaxArcCost, ")"));
    }
    // n lines precede a lines, so every supply is final before its lower
    // bounds move it and |supply| <= 2^40, |low| <= 2^40 cannot overflow.
    std::vector<int64_t>& supply = result_.problem.supply;
    supply[*src] -= *low;
    supply[*dst] += *low;
    for (const uint32_t node : {*src, *dst}) {
      if (supply[node] > kMaxNodeSupply || supply[node] < -kMaxNodeSupply) {
        return LineError(
            line_, absl::StrCat("removing lower bound ", *low,
                                " moves the supply of node ", node + 1, " to ",
                                supply[node], ", beyond +-kMaxNodeSupply (",
                                kMaxNodeSupply, ")"));
      }
    }
    cost_offset_ += static_cast<Int128>(*low) * *cost;
    result_.problem.arcs.push_back(
        {.src = *src, .dst = *dst, .capacity = *cap - *low, .cost = *cost});
    result_.lower.push_back(*low);
    return absl::OkStatus();
  }

  absl::StatusOr<DimacsProblem> Finish() {
    if (p_line_ == 0) {
      return LineError(std::max<size_t>(line_, 1),
                       "missing p line (end of input)");
    }
    if (result_.problem.arcs.size() != declared_arcs_) {
      return LineError(p_line_,
                       absl::StrCat("p line declares ", declared_arcs_,
                                    " arcs but the input has ",
                                    result_.problem.arcs.size(), " a lines"));
    }
    if (supply_sum_ != 0) {
      return LineError(
          p_line_, absl::StrCat("supplies sum to ", Int128ToString(supply_sum_),
                                "; a DIMACS min instance must be "
                                "balanced (sum 0)"));
    }
    if (cost_offset_ > std::numeric_limits<int64_t>::max() ||
        cost_offset_ < std::numeric_limits<int64_t>::min()) {
      return LineError(line_, absl::StrCat("the lower bounds' fixed cost "
                                           "sum(low * cost) = ",
                                           Int128ToString(cost_offset_),
                                           " does not fit int64"));
    }
    result_.cost_offset = static_cast<int64_t>(cost_offset_);
    // Belt and braces: the checks above mirror ValidateProblem, so this only
    // fires if the two drift apart.
    if (absl::Status status = ValidateProblem(result_.problem); !status.ok()) {
      return LineError(line_, std::string(status.message()));
    }
    return std::move(result_);
  }

  DimacsProblem result_;
  size_t line_ = 0;
  size_t p_line_ = 0;  // 0: not seen yet
  size_t declared_arcs_ = 0;
  std::vector<bool> node_seen_;
  Int128 supply_sum_ = 0;
  Int128 cost_offset_ = 0;
};

}  // namespace

absl::StatusOr<DimacsProblem> ParseDimacs(std::istream& in) {
  return Parser().Parse(in);
}

absl::Status WriteDimacs(const McmfProblem& problem, std::ostream& out,
                         std::string_view comment) {
  if (absl::Status status = ValidateProblem(problem); !status.ok()) {
    return status;
  }
  size_t start = 0;
  while (start < comment.size()) {
    size_t end = comment.find('\n', start);
    if (end == std::string_view::npos) end = comment.size();
    out << "c " << comment.substr(start, end - start) << '\n';
    start = end + 1;
  }
  out << "p min " << problem.node_count << ' ' << problem.arcs.size() << '\n';
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    if (problem.supply[v] != 0) {
      out << "n " << v + 1 << ' ' << problem.supply[v] << '\n';
    }
  }
  for (const McmfArc& arc : problem.arcs) {
    out << "a " << arc.src + 1 << ' ' << arc.dst + 1 << " 0 " << arc.capacity
        << ' ' << arc.cost << '\n';
  }
  out.flush();
  if (!out) return absl::InternalError("writing the DIMACS output failed");
  return absl::OkStatus();
}

absl::StatusOr<int64_t> OriginalCost(const DimacsProblem& dimacs,
                                     const McmfSolution& solution) {
  const Int128 cost =
      static_cast<Int128>(solution.total_cost) + dimacs.cost_offset;
  if (cost > std::numeric_limits<int64_t>::max() ||
      cost < std::numeric_limits<int64_t>::min()) {
    return absl::OutOfRangeError(absl::StrCat(
        "optimal cost ", Int128ToString(cost), " does not fit int64"));
  }
  return static_cast<int64_t>(cost);
}

std::vector<int64_t> OriginalFlow(const DimacsProblem& dimacs,
                                  const McmfSolution& solution) {
  std::vector<int64_t> flow = solution.flow;
  for (size_t i = 0; i < flow.size() && i < dimacs.lower.size(); ++i) {
    flow[i] += dimacs.lower[i];
  }
  return flow;
}

}  // namespace flowsched::solver
