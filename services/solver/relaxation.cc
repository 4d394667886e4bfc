#include "services/solver/relaxation.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <limits>
#include <string>
#include <vector>

#include "services/common/status_macros.h"
#include "services/solver/feasibility.h"
#include "services/solver/int128.h"
#include "services/solver/no_index.h"
#include "services/solver/problem_validator.h"
#include "services/solver/solution_cost.h"
#include "services/solver/static_residual_graph.h"

namespace flowsched::solver {

bool ExtendRelaxationBudget(Int128 remaining, Int128 initial, double fraction) {
  return fraction > 0 && initial > 0 &&
         static_cast<long double>(remaining) <=
             static_cast<long double>(fraction) *
                 static_cast<long double>(initial);
}

bool RelaxationStalled(Int128 remaining, Int128 window_start, Int128 initial,
                       double fraction) {
  // Surpluses sum to at most n * 2^62 < 2^94, so 5x stays in Int128.
  return remaining * 5 > window_start * 4 &&
         !ExtendRelaxationBudget(remaining, initial, fraction);
}

namespace {

constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max();

// Prices start at 0 and only rise. Keeping them at or below 2^61 keeps every
// stored reduced cost (|cost| <= 2^30 plus a price difference) and every
// step inside int64 without per-operation checks.
constexpr int64_t kMaxPrice = int64_t{1} << 61;
// (n + 1) * max|cost| must stay below this, as for SSP: a feasible problem's
// optimal prices fit well within the price guard then.
constexpr Int128 kMaxRelaxationCostSpan = Int128{1} << 61;
// The stop flag, the budget and the progress windows are checked once per
// this much work: a queue pop or a multinode step counts 1, and the arcs a
// node scan or a price rise reads count one each. Counting iterations alone
// let a check wait for 4,096 price rises of a large set (a multinode tree
// of thousands of nodes is read twice per rise) or scans of the cluster
// aggregator's 150,000 arcs.
constexpr uint64_t kStopCheckInterval = 16384;

// CPU time the calling thread has used (RelaxationOptions::cpu_budget_ns).
int64_t ThreadCpuNs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

class RelaxationWorkspace {
 public:
  using Arc = StaticResidualGraph::Arc;

  RelaxationWorkspace(const McmfProblem& problem,
                      const RelaxationOptions& options,
                      const std::atomic<bool>* stop)
      : problem_(problem), options_(options), stop_(stop) {}

  // Bounds checks, residual graph, zero prices (or the warm start's),
  // arcs with negative reduced cost saturated (complementary slackness).
  absl::Status Init(const RelaxationWarmStart* warm = nullptr);
  // Relaxation iterations until no surplus is left. Returns kInfeasible only
  // with a cut certificate (a set with surplus and no residual arc out).
  absl::StatusOr<McmfOutcome> Run();
  absl::StatusOr<McmfSolution> ExtractSolution() const;

 private:
  void Enqueue(uint32_t v) {
    if (!queued_[v]) {
      queued_[v] = 1;
      queue_.push_back(v);
    }
  }
  void Push(uint32_t tail, uint32_t a, int64_t delta) {
    Arc& arc = graph_.arc(a);
    arc.residual -= delta;
    graph_.arc(arc.mate).residual += delta;
    surplus_[tail] -= delta;
    surplus_[arc.head] += delta;
    if (surplus_[arc.head] > 0) Enqueue(arc.head);
  }
  // `work`: see kStopCheckInterval.
  absl::Status Tick(uint64_t work = 1) {
    work_ += work;
    if (work_ < next_check_) return absl::OkStatus();
    next_check_ = work_ + kStopCheckInterval;
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
      return absl::CancelledError("relaxation: stopped by the caller");
    }
    if (options_.cpu_budget_ns <= 0 && options_.stall_window_ns <= 0) {
      return absl::OkStatus();
    }
    const int64_t used_ns = ThreadCpuNs() - start_cpu_ns_;
    if (options_.cpu_budget_ns > 0 && used_ns > budget_ns_) {
      if (!budget_extended_ &&
          ExtendRelaxationBudget(PositiveSurplus(), initial_surplus_,
                                 options_.extend_below_surplus_fraction)) {
        budget_extended_ = true;
        budget_ns_ += options_.cpu_budget_ns;
        return absl::OkStatus();
      }
      return absl::DeadlineExceededError("relaxation: CPU budget exhausted");
    }
    if (options_.stall_window_ns > 0 && used_ns >= window_end_ns_) {
      const Int128 remaining = PositiveSurplus();
      if (++windows_ended_ >= 2 &&
          RelaxationStalled(remaining, window_start_surplus_, initial_surplus_,
                            options_.extend_below_surplus_fraction)) {
        return absl::DeadlineExceededError(
            "relaxation: progress stalled, CPU budget given up early");
      }
      window_start_surplus_ = remaining;
      window_end_ns_ = used_ns + options_.stall_window_ns;
    }
    return absl::OkStatus();
  }
  // O(n); read at Run's start, when the budget runs out and at the end of
  // each progress window.
  Int128 PositiveSurplus() const {
    Int128 sum = 0;
    for (const int64_t s : surplus_) sum += s > 0 ? s : 0;
    return sum;
  }
  absl::Status CheckPrice(int64_t price, int64_t step) const {
    if (price > kMaxPrice - step) {
      return absl::OutOfRangeError(
          "relaxation: a node price would exceed 2^61");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<bool> SingleNode(uint32_t s);
  absl::Status Multinode(uint32_t s);
  absl::Status RaiseSet(int64_t step, Int128& delx);
  void Label(uint32_t v, uint32_t pred_arc);
  uint32_t PopFrontier();
  void ClearFrontier();
  bool Augment(uint32_t s, Int128& surplus_s, Int128& delx);

  const McmfProblem& problem_;
  const RelaxationOptions& options_;
  const std::atomic<bool>* stop_;
  uint32_t node_count_ = 0;
  uint64_t work_ = 0;
  uint64_t next_check_ = kStopCheckInterval;
  const int64_t start_cpu_ns_ = ThreadCpuNs();
  int64_t budget_ns_ = options_.cpu_budget_ns;
  bool budget_extended_ = false;
  Int128 initial_surplus_ = 0;  // PositiveSurplus() when Run starts
  // Progress windows (RelaxationOptions::stall_window_ns), in CPU time
  // since start_cpu_ns_; the first begins when Run starts.
  int64_t window_end_ns_ = 0;
  Int128 window_start_surplus_ = 0;
  int windows_ended_ = 0;
  bool infeasible_ = false;

  // An arc's cost is its reduced cost cost - p[tail] + p[head], kept by
  // every price change (RELAX-IV keeps rc, not prices, on arcs): scans test
  // "balanced" without touching the head's price, and a price rise already
  // visits every arc whose rc changes.
  StaticResidualGraph graph_;
  std::vector<int64_t> surplus_;  // supply + inflow - outflow
  std::vector<int64_t> price_;    // published as potentials
  // 1 if the node has an arc into a node with negative supply: machines and
  // unscheduled aggregators, the "sink side" of a scheduling network.
  std::vector<uint8_t> sink_side_;

  // FIFO queue of nodes with positive surplus (RELAX-IV's queue of nonzero
  // deficit nodes, positive side only).
  std::vector<uint32_t> queue_;
  std::vector<uint8_t> queued_;

  // Multinode tree: a node is labelled when reached through a balanced
  // residual arc (pred_), scanned once its arcs have been examined. Stamps
  // avoid O(n) resets per iteration.
  uint32_t stamp_ = 0;
  std::vector<uint32_t> label_stamp_;
  std::vector<uint32_t> scan_stamp_;
  std::vector<uint32_t> pred_;
  std::vector<uint32_t> members_;  // scanned nodes: the set S
  std::vector<uint32_t> targets_;  // labelled nodes with negative surplus
  // Labelled, unscanned nodes: a stack scanned first (prioritised, sink
  // side) and a FIFO for the rest.
  std::vector<uint32_t> frontier_front_;
  std::vector<uint32_t> frontier_back_;
  size_t frontier_back_head_ = 0;
};

absl::Status RelaxationWorkspace::Init(const RelaxationWarmStart* warm) {
  node_count_ = problem_.node_count;
  int64_t max_abs_cost = 0;
  for (const McmfArc& arc : problem_.arcs) {
    max_abs_cost = std::max(max_abs_cost, arc.cost < 0 ? -arc.cost : arc.cost);
  }
  if ((static_cast<Int128>(node_count_) + 1) * max_abs_cost >
      kMaxRelaxationCostSpan) {
    return absl::OutOfRangeError(fmt::format(
        "relaxation: (node_count {} + 1) times max |cost| {} exceeds 2^61; "
        "prices could overflow int64",
        node_count_, max_abs_cost));
  }
  FLOWSCHED_RETURN_IF_ERROR(CheckNodeThroughput(problem_, "relaxation"));
  surplus_.assign(problem_.supply.begin(), problem_.supply.end());
  sink_side_.assign(node_count_, 0);
  price_.assign(node_count_, 0);
  if (warm != nullptr) {
    // Shift the start prices to [0, span]: only differences matter, and
    // the guard below keeps every rise checked against kMaxPrice.
    const size_t known = std::min<size_t>(warm->potentials.size(), node_count_);
    int64_t low = 0, high = 0;
    for (size_t v = 0; v < known; ++v) {
      low = std::min(low, warm->potentials[v]);
      high = std::max(high, warm->potentials[v]);
    }
    if (static_cast<Int128>(high) - low > (Int128{1} << 60)) {
      return absl::OutOfRangeError(
          "relaxation: the warm start's prices span more than 2^60");
    }
    for (size_t v = 0; v < known; ++v) price_[v] = warm->potentials[v] - low;
    for (size_t v = known; v < node_count_; ++v) price_[v] = -low;
  }
  const auto reduced_cost = [this](size_t i) {
    const McmfArc& arc = problem_.arcs[i];
    return arc.cost - price_[arc.src] + price_[arc.dst];
  };
  graph_.BuildWithCosts(problem_, reduced_cost, [&](size_t i, uint32_t a) {
    const McmfArc& arc = problem_.arcs[i];
    Arc& fwd = graph_.arc(a);
    Arc& rev = graph_.arc(fwd.mate);
    const int64_t rc = fwd.cost;
    // Complementary slackness: an arc with negative reduced cost carries
    // its capacity, one with positive reduced cost nothing, a balanced
    // one whatever the warm start had on it.
    int64_t flow = 0;
    if (rc < 0) {
      flow = arc.capacity;
    } else if (rc == 0 && warm != nullptr && i < warm->flow.size()) {
      flow = std::clamp<int64_t>(warm->flow[i], 0, arc.capacity);
    }
    if (flow > 0) {
      fwd.residual = arc.capacity - flow;
      rev.residual = flow;
      surplus_[arc.src] -= flow;
      surplus_[arc.dst] += flow;
    }
    if (arc.capacity > 0 && arc.src != arc.dst &&
        problem_.supply[arc.dst] < 0) {
      sink_side_[arc.src] = 1;
    }
  });
  queued_.assign(node_count_, 0);
  label_stamp_.assign(node_count_, 0);
  scan_stamp_.assign(node_count_, 0);
  pred_.assign(node_count_, kNoIndex);
  return absl::OkStatus();
}

absl::StatusOr<McmfOutcome> RelaxationWorkspace::Run() {
  initial_surplus_ = PositiveSurplus();
  window_start_surplus_ = initial_surplus_;
  if (options_.stall_window_ns > 0) {
    window_end_ns_ = ThreadCpuNs() - start_cpu_ns_ + options_.stall_window_ns;
  }
  for (uint32_t v = 0; v < node_count_; ++v) {
    if (surplus_[v] > 0) Enqueue(v);
  }
  // RELAX-IV's outer loop: cycle through the queue of surplus nodes; the
  // first passes run single-node iterations only (cheap coordinate ascent
  // that settles most uncontested tasks, Firmament section 4.2), later a node
  // whose single-node iteration made no progress gets a multinode iteration.
  size_t head = 0;
  size_t pass_end = queue_.size();
  int pass = 0;
  while (head < queue_.size()) {
    if (head == pass_end) {
      ++pass;
      pass_end = queue_.size();
    }
    const uint32_t s = queue_[head++];
    queued_[s] = 0;
    FLOWSCHED_RETURN_IF_ERROR(Tick());
    if (surplus_[s] > 0) {
      FLOWSCHED_ASSIGN_OR_RETURN(const bool progress, SingleNode(s));
      if (infeasible_) return McmfOutcome::kInfeasible;
      if (surplus_[s] > 0 && !progress && pass >= options_.single_node_passes) {
        FLOWSCHED_RETURN_IF_ERROR(Multinode(s));
        if (infeasible_) return McmfOutcome::kInfeasible;
      }
      if (surplus_[s] > 0) Enqueue(s);
    }
    // Compact the consumed prefix once it dominates.
    if (head > 4096 && head * 2 > queue_.size()) {
      queue_.erase(queue_.begin(),
                   queue_.begin() + static_cast<std::ptrdiff_t>(head));
      pass_end -= head;
      head = 0;
    }
  }
  return McmfOutcome::kOptimal;
}

absl::StatusOr<bool> RelaxationWorkspace::SingleNode(uint32_t s) {
  // Coordinate ascent on p[s]. The dual's slope in p[s] is surplus[s] minus
  // the residual capacity of balanced (rc == 0) arcs out of s; while it is
  // >= 0 (RELAX-IV takes degenerate steps too), saturate those arcs and raise
  // p[s] to the next breakpoint, the smallest positive rc of a residual arc
  // out of s, which balances that arc. Then push what is left to balanced
  // neighbours with a deficit.
  const int64_t initial = surplus_[s];
  const uint32_t begin = graph_.first_out(s);
  const uint32_t end = graph_.first_out(s + 1);
  while (surplus_[s] > 0) {
    FLOWSCHED_RETURN_IF_ERROR(Tick(end - begin));  // the scan below
    Int128 balanced = 0;
    int64_t step = kInfinite;
    for (uint32_t a = begin; a < end; ++a) {
      const Arc& arc = graph_.arc(a);
      if (arc.residual == 0 || arc.head == s) continue;
      if (arc.cost == 0) {
        balanced += arc.residual;
      } else {
        step = std::min(step, arc.cost);  // rc > 0 by complementary slackness
      }
    }
    if (balanced > surplus_[s]) break;
    if (step == kInfinite) {
      // No breakpoint: with positive slope the dual is unbounded, i.e. {s}
      // has more surplus than residual capacity out of it.
      if (balanced < surplus_[s]) infeasible_ = true;
      break;
    }
    FLOWSCHED_RETURN_IF_ERROR(CheckPrice(price_[s], step));
    price_[s] += step;
    for (uint32_t a = begin; a < end; ++a) {
      Arc& arc = graph_.arc(a);
      if (arc.head == s) continue;
      if (arc.cost == 0 && arc.residual > 0) Push(s, a, arc.residual);
      arc.cost -= step;
      graph_.arc(arc.mate).cost += step;
    }
  }
  if (infeasible_) return false;
  for (uint32_t a = begin; a < end && surplus_[s] > 0; ++a) {
    const Arc& arc = graph_.arc(a);
    if (arc.cost != 0 || arc.residual == 0 || arc.head == s ||
        surplus_[arc.head] >= 0) {
      continue;
    }
    Push(s, a, std::min({surplus_[s], -surplus_[arc.head], arc.residual}));
  }
  return surplus_[s] < initial;
}

void RelaxationWorkspace::Label(uint32_t v, uint32_t pred_arc) {
  label_stamp_[v] = stamp_;
  pred_[v] = pred_arc;
  if (surplus_[v] < 0) {
    targets_.push_back(v);
  } else if (options_.arc_prioritisation && sink_side_[v]) {
    frontier_front_.push_back(v);
  } else {
    frontier_back_.push_back(v);
  }
}

uint32_t RelaxationWorkspace::PopFrontier() {
  if (!frontier_front_.empty()) {
    const uint32_t v = frontier_front_.back();
    frontier_front_.pop_back();
    return v;
  }
  if (frontier_back_head_ < frontier_back_.size()) {
    return frontier_back_[frontier_back_head_++];
  }
  return kNoIndex;
}

void RelaxationWorkspace::ClearFrontier() {
  for (uint32_t v : frontier_front_) label_stamp_[v] = 0;
  for (size_t i = frontier_back_head_; i < frontier_back_.size(); ++i) {
    label_stamp_[frontier_back_[i]] = 0;
  }
  frontier_front_.clear();
  frontier_back_.clear();
  frontier_back_head_ = 0;
}

bool RelaxationWorkspace::Augment(uint32_t s, Int128& surplus_s, Int128& delx) {
  // Flow along the tree from s to every labelled deficit found, each as far
  // as the path, s's surplus and the deficit allow. Tree arcs are balanced,
  // so complementary slackness is kept. A target outside S takes the flow
  // over a counted cut arc, so delx and surplus(S) both drop by dx.
  // Saturated tree arcs leave parts of the tree unusable (dx 0 below), which
  // only costs later augmentations, never correctness.
  bool moved = false;
  for (uint32_t t : targets_) {
    if (surplus_[s] == 0) break;
    int64_t dx = std::min(surplus_[s], -surplus_[t]);
    for (uint32_t v = t; v != s && dx > 0; v = graph_.tail(pred_[v])) {
      dx = std::min(dx, graph_.arc(pred_[v]).residual);
    }
    if (dx <= 0) continue;
    for (uint32_t v = t; v != s; v = graph_.tail(pred_[v])) {
      Arc& arc = graph_.arc(pred_[v]);
      arc.residual -= dx;
      graph_.arc(arc.mate).residual += dx;
    }
    surplus_[s] -= dx;
    surplus_[t] += dx;
    if (scan_stamp_[t] != stamp_) {
      surplus_s -= dx;
      delx -= dx;
    }
    moved = true;
  }
  // A filled deficit becomes an ordinary labelled node the tree may grow
  // through.
  for (uint32_t t : targets_) {
    if (surplus_[t] >= 0 && scan_stamp_[t] != stamp_) {
      if (options_.arc_prioritisation && sink_side_[t]) {
        frontier_front_.push_back(t);
      } else {
        frontier_back_.push_back(t);
      }
    }
  }
  targets_.clear();
  return moved;
}

absl::Status RelaxationWorkspace::RaiseSet(int64_t step, Int128& delx) {
  // Raise the prices of S by `step`. Balanced arcs leaving S would get a
  // negative rc, so they are saturated first (flow leaves S: delx units);
  // arcs inside S keep their rc. Arcs whose rc drops to 0 become the new
  // cut: their heads are the new frontier, labelled from S.
  int64_t top = 0;
  for (uint32_t i : members_) top = std::max(top, price_[i]);
  FLOWSCHED_RETURN_IF_ERROR(CheckPrice(top, step));
  ClearFrontier();
  delx = 0;
  for (uint32_t i : members_) {
    price_[i] += step;
    for (uint32_t a = graph_.first_out(i); a < graph_.first_out(i + 1); ++a) {
      Arc& arc = graph_.arc(a);
      const uint32_t j = arc.head;
      if (j == i || scan_stamp_[j] == stamp_) continue;
      if (arc.cost == 0 && arc.residual > 0) Push(i, a, arc.residual);
      arc.cost -= step;
      graph_.arc(arc.mate).cost += step;
      if (arc.cost == 0 && arc.residual > 0) {
        delx += arc.residual;
        if (label_stamp_[j] != stamp_) Label(j, a);
      }
    }
  }
  // Saturation may have left members of S with a deficit (a node with no
  // surplus of its own but balanced arcs out of S). They are in the tree
  // and their tree paths are inside S, untouched: augment to them.
  for (uint32_t i : members_) {
    if (surplus_[i] < 0) targets_.push_back(i);
  }
  return absl::OkStatus();
}

absl::Status RelaxationWorkspace::Multinode(uint32_t s) {
  // One long function on purpose: RELAX-IV's multinode iteration,
  // whose growth of the set S, price rise and flow adjustments share the
  // set's cut state in locals.
  //
  // Grow S (the scanned set) from s through balanced residual arcs. delx is
  // the residual capacity of balanced arcs from S to outside; the ascent of
  // raising all prices in S is surplus(S) - delx. When it is >= 0 the prices
  // of S rise to the next breakpoint over the cut (RELAX-IV's multinode price
  // rise, degenerate steps included); when a labelled node has a deficit,
  // flow is augmented along the tree instead.
  if (++stamp_ == 0) {
    std::fill(label_stamp_.begin(), label_stamp_.end(), 0);
    std::fill(scan_stamp_.begin(), scan_stamp_.end(), 0);
    stamp_ = 1;
  }
  members_.clear();
  targets_.clear();
  ClearFrontier();
  label_stamp_[s] = stamp_;
  pred_[s] = kNoIndex;
  frontier_front_.push_back(s);
  Int128 surplus_s = 0;  // surplus of S
  Int128 delx = 0;
  bool moved = false;        // whether an augmentation happened
  uint64_t member_arcs = 0;  // out-arcs of S, the work of a price rise
  while (true) {
    FLOWSCHED_RETURN_IF_ERROR(Tick());
    if (!members_.empty() && surplus_s >= delx) {
      // The breakpoint search and RaiseSet each scan S's arcs.
      FLOWSCHED_RETURN_IF_ERROR(Tick(2 * member_arcs));
      int64_t step = kInfinite;
      for (uint32_t i : members_) {
        for (uint32_t a = graph_.first_out(i); a < graph_.first_out(i + 1);
             ++a) {
          const Arc& arc = graph_.arc(a);
          if (arc.residual == 0 || arc.cost == 0 || arc.head == i ||
              scan_stamp_[arc.head] == stamp_) {
            continue;
          }
          step = std::min(step, arc.cost);
        }
      }
      if (step == kInfinite) {
        if (surplus_s > delx) {
          // S keeps a surplus whatever flows on the balanced arcs and no
          // other residual arc leaves it: a cut that proves infeasibility.
          infeasible_ = true;
          return absl::OkStatus();
        }
        // Degenerate without a breakpoint: nothing to gain, keep growing.
      } else {
        surplus_s -= delx;
        FLOWSCHED_RETURN_IF_ERROR(RaiseSet(step, delx));
        if (!targets_.empty()) moved |= Augment(s, surplus_s, delx);
        if (surplus_[s] <= 0) return absl::OkStatus();
        continue;
      }
    }
    const uint32_t i = PopFrontier();
    if (i == kNoIndex) {
      // After an augmentation, unfilled deficits stay labelled but
      // unscanned, so the frontier can run dry with delx > 0: the iteration
      // made progress, end it. Without one, an empty frontier means delx ==
      // 0 < surplus(S), which the branch above turns into a price rise or a
      // certificate.
      if (moved) return absl::OkStatus();
      return absl::InternalError("relaxation: multinode tree ran dry");
    }
    scan_stamp_[i] = stamp_;
    members_.push_back(i);
    member_arcs += graph_.first_out(i + 1) - graph_.first_out(i);
    work_ += graph_.first_out(i + 1) - graph_.first_out(i);  // the scan below
    surplus_s += surplus_[i];
    for (uint32_t a = graph_.first_out(i); a < graph_.first_out(i + 1); ++a) {
      const Arc& arc = graph_.arc(a);
      const uint32_t j = arc.head;
      if (arc.cost != 0 || j == i) continue;
      if (scan_stamp_[j] == stamp_) {
        // j -> i (the mate, also balanced) no longer leaves S.
        delx -= graph_.arc(arc.mate).residual;
      } else if (arc.residual > 0) {
        delx += arc.residual;
        if (label_stamp_[j] != stamp_) Label(j, a);
      }
    }
    if (!targets_.empty()) {
      // Unlike RELAX-IV, keep going after an augmentation while s has
      // surplus: S, delx and the intact part of the tree stay valid, and a
      // hub such as the cluster aggregator X (thousands of unit piece arcs
      // under load spreading) would otherwise rebuild its tree, O(deg X),
      // for every unit it routes.
      moved |= Augment(s, surplus_s, delx);
      if (surplus_[s] <= 0) return absl::OkStatus();
    }
  }
}

absl::StatusOr<McmfSolution> RelaxationWorkspace::ExtractSolution() const {
  FLOWSCHED_ASSIGN_OR_RETURN(
      McmfSolution solution, SolutionFromResiduals(problem_, [this](size_t i) {
        return graph_.arc(graph_.forward_arc(i)).residual;
      }));
  solution.potentials = price_;
  return solution;
}

}  // namespace

absl::StatusOr<McmfSolution> Relaxation::SolveFrom(
    const McmfProblem& problem, const RelaxationWarmStart& start) {
  FLOWSCHED_RETURN_IF_ERROR(ValidateProblem(problem));
  if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
    return absl::CancelledError("relaxation: stopped by the caller");
  }
  RelaxationWorkspace workspace(problem, options_, stop_);
  FLOWSCHED_RETURN_IF_ERROR(workspace.Init(&start));
  McmfSolution solution;
  FLOWSCHED_ASSIGN_OR_RETURN(const McmfOutcome outcome, workspace.Run());
  if (outcome == McmfOutcome::kOptimal) {
    FLOWSCHED_ASSIGN_OR_RETURN(solution, workspace.ExtractSolution());
  }
  solution.algorithm = std::string(name());
  return solution;
}

absl::StatusOr<McmfSolution> Relaxation::Solve(const McmfProblem& problem) {
  FLOWSCHED_RETURN_IF_ERROR(ValidateProblem(problem));
  if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
    return absl::CancelledError("relaxation: stopped by the caller");
  }
  RelaxationWorkspace workspace(problem, options_, stop_);
  FLOWSCHED_RETURN_IF_ERROR(workspace.Init());
  McmfSolution solution;
  // The relaxation method assumes feasibility (an infeasible problem shows
  // up as a cut certificate or as prices rising without bound, possibly to
  // the 2^61 guard), so ask a max flow first, as cost scaling does, unless
  // the caller decides feasibility elsewhere.
  const Feasibility feasibility = options_.check_feasibility
                                      ? CheckFeasibility(problem, stop_)
                                      : Feasibility::kFeasible;
  if (feasibility == Feasibility::kStopped) {
    return absl::CancelledError("relaxation: stopped by the caller");
  }
  if (feasibility == Feasibility::kFeasible) {
    FLOWSCHED_ASSIGN_OR_RETURN(const McmfOutcome outcome, workspace.Run());
    if (outcome == McmfOutcome::kOptimal) {
      FLOWSCHED_ASSIGN_OR_RETURN(solution, workspace.ExtractSolution());
    }
  }
  solution.algorithm = std::string(name());
  return solution;
}

}  // namespace flowsched::solver
