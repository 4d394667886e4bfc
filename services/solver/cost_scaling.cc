#include "services/solver/cost_scaling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "services/common/status_macros.h"
#include "services/solver/feasibility.h"
#include "services/solver/int128.h"
#include "services/solver/no_index.h"
#include "services/solver/problem_validator.h"
#include "services/solver/solution_cost.h"
#include "services/solver/static_residual_graph.h"

namespace flowsched::solver {
namespace {

constexpr int64_t kUnranked = std::numeric_limits<int64_t>::max();

// Scaled costs, (n + 1) * max|cost|, must stay at or below this, and so
// must every epsilon (the first is the largest scaled cost).
constexpr Int128 kMaxScaledCost = Int128{1} << 58;
// Prices live in [-kPriceFloor, 0]: they start there (zero, or a warm
// start's potentials with the largest at 0), only fall within a phase
// (NormalizePrices lifts the largest back to 0 after it), and every fall
// (relabel, global update, price refinement) is checked against the floor.
// With scaled costs and epsilon <= 2^58, every reduced cost, relabel
// candidate and rank product then stays below 2^62 in magnitude. Until
// 2026-11-25 the solver instead refused (n + 1)^2 * max|cost| > 2^57 up
// front, the worst-case drift of the textbook argument, which prices on
// real networks come nowhere near: 20,000 nodes with costs to 10^9 were
// refused (LEMON's CostScaling, which does not check, took 0.7-0.8 s), and
// the Quincy policy had to cap its waiting costs at 2^20 to stay inside it.
constexpr int64_t kPriceFloor = int64_t{1} << 60;

absl::Status PriceFloorError() {
  return absl::OutOfRangeError(
      "cost_scaling: scaled prices would fall below -2^60 (shortest-path "
      "distances times node_count + 1 beyond int64's safe range)");
}

// Floor division for a positive divisor (C++ '/' truncates towards zero).
int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

class CostScalingWorkspace {
 public:
  using Arc = StaticResidualGraph::Arc;

  CostScalingWorkspace(const McmfProblem& problem,
                       const CostScalingOptions& options)
      : problem_(problem), options_(options) {}

  // Bounds checks, residual graph, zero flow, excess = supply, zero prices.
  absl::Status Init();
  // Warm start: clamps `flow` into the capacities and recomputes excesses.
  void SetFlow(const std::vector<int64_t>& flow);
  // Warm start: adopts `potentials` (original units, published convention)
  // as scaled prices. Returns false (prices left at zero) if their spread
  // is larger than an optimum's could be.
  bool SetPotentials(const std::vector<int64_t>& potentials);

  // Warm start: price refinement at epsilon 1, then the epsilon the prices
  // and flow are optimal for: the largest reduced-cost violation over
  // residual arcs rounded up to a power of alpha. If that exceeds the
  // cold-start epsilon max|cost| * S the prices are reset to zero (for
  // which the cold epsilon holds) and the cold epsilon is returned.
  int64_t WarmEpsilon();
  const McmfProblem& problem() const { return problem_; }
  const CostScalingOptions& options() const { return options_; }
  int64_t ColdEpsilon() const {
    return std::max<int64_t>(1, max_abs_cost_ * scale_);
  }

  // Scaling phases from `start_epsilon` (the flow must be start-optimal)
  // down to epsilon 1. `warm` enables price refinement before the first
  // phase, too.
  absl::Status Optimize(int64_t start_epsilon, bool warm);

  // Exact potentials in original units plus flow and total cost.
  absl::StatusOr<McmfSolution> ExtractSolution();

 private:
  int64_t ReducedCost(uint32_t tail, const Arc& arc) const {
    return arc.cost + price_[tail] - price_[arc.head];
  }
  void PushFlow(uint32_t tail, uint32_t a, int64_t delta) {
    Arc& arc = graph_.arc(a);
    arc.residual -= delta;
    graph_.arc(arc.mate).residual += delta;
    mate_open_[a] = 1;
    mate_open_[arc.mate] = arc.residual > 0 ? 1 : 0;
    excess_[tail] -= delta;
    excess_[arc.head] += delta;
  }
  void Activate(uint32_t v) {
    if (!queued_[v]) {
      queued_[v] = 1;
      active_.push_back(v);
    }
  }

  absl::Status Refine(int64_t epsilon);
  absl::Status Discharge(uint32_t u, int64_t epsilon);
  bool Relabel(uint32_t u, int64_t epsilon, uint32_t scanned_from, int64_t best,
               uint32_t best_arc);
  absl::Status GlobalUpdate(int64_t epsilon);
  bool PriceRefine(int64_t epsilon);
  absl::Status NormalizePrices();
  absl::Status ExactPotentials();

  const McmfProblem& problem_;
  const CostScalingOptions& options_;
  uint32_t node_count_ = 0;
  int64_t scale_ = 1;
  int64_t max_abs_cost_ = 0;

  // A node's arcs are contiguous, which is what push, relabel and both
  // price heuristics scan. Arc costs are the original costs times scale_.
  StaticResidualGraph graph_;
  // mate_open_[a]: the paired arc of a has residual capacity. The global
  // update walks arcs into a node as the mates of its own arcs; this copy
  // spares it reading the mate (a cache miss per arc, the mates lie in
  // other nodes' blocks). PushFlow keeps it.
  std::vector<uint8_t> mate_open_;
  std::vector<int64_t> excess_;  // > 0 excess, < 0 deficit
  // Scaled prices with reduced cost c*S + price[u] - price[v]; relabels only
  // lower them (Goldberg's convention). Published potentials are the exact
  // -price / S after ExactPotentials().
  std::vector<int64_t> price_;

  // Push-relabel state: FIFO queue of active nodes (a ring over a vector
  // used as a queue with a moving head) and current-arc pointers.
  std::vector<uint32_t> active_;
  size_t active_head_ = 0;
  std::vector<uint8_t> queued_;
  std::vector<uint32_t> current_arc_;
  uint64_t relabels_since_update_ = 0;
  uint64_t update_threshold_ = 0;

  // Global update buckets: intrusive doubly-linked lists per rank.
  std::vector<uint32_t> bucket_first_;
  std::vector<uint32_t> bucket_next_;
  std::vector<uint32_t> bucket_prev_;
  std::vector<int64_t> rank_;
  std::vector<uint8_t> settled_;
  std::vector<std::pair<int64_t, uint32_t>> overflow_;  // ranks beyond buckets

  // Price refinement scratch: distances, the arc tail each distance came
  // from (kNoIndex: the virtual source) and stamps for the cycle check.
  std::vector<int64_t> distance_;
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> walk_stamp_;
  bool ParentsHaveCycle();
};

absl::Status CostScalingWorkspace::Init() {
  node_count_ = problem_.node_count;
  for (const McmfArc& arc : problem_.arcs) {
    max_abs_cost_ =
        std::max(max_abs_cost_, arc.cost < 0 ? -arc.cost : arc.cost);
  }
  const Int128 n1 = static_cast<Int128>(node_count_) + 1;
  if (n1 * max_abs_cost_ > kMaxScaledCost) {
    return absl::OutOfRangeError(fmt::format(
        "cost_scaling: (node_count {} + 1) times max |cost| {} exceeds 2^58; "
        "scaled costs could overflow int64",
        node_count_, max_abs_cost_));
  }
  scale_ = static_cast<int64_t>(n1);

  FLOWSCHED_RETURN_IF_ERROR(CheckNodeThroughput(problem_, "cost_scaling"));
  graph_.Build(problem_, scale_);
  mate_open_.assign(graph_.arc_count(), 0);
  for (uint32_t a = 0; a < graph_.arc_count(); ++a) {
    mate_open_[graph_.arc(a).mate] = graph_.arc(a).residual > 0 ? 1 : 0;
  }
  excess_.assign(problem_.supply.begin(), problem_.supply.end());
  price_.assign(node_count_, 0);
  queued_.assign(node_count_, 0);
  current_arc_.assign(node_count_, 0);
  return absl::OkStatus();
}

void CostScalingWorkspace::SetFlow(const std::vector<int64_t>& flow) {
  for (size_t i = 0; i < problem_.arcs.size(); ++i) {
    const McmfArc& arc = problem_.arcs[i];
    const int64_t f = std::clamp<int64_t>(flow[i], 0, arc.capacity);
    if (f == 0) continue;
    PushFlow(arc.src, graph_.forward_arc(i), f);
  }
}

bool CostScalingWorkspace::SetPotentials(
    const std::vector<int64_t>& potentials) {
  if (node_count_ == 0) return true;
  const auto [lo, hi] =
      std::minmax_element(potentials.begin(), potentials.end());
  // An optimum's potentials can be chosen with spread <= n * max|cost|;
  // anything wider is not worth the overflow risk, and prices, -p * S
  // shifted so the largest is 0, must start above the floor.
  const Int128 spread = static_cast<Int128>(*hi) - *lo;
  if (spread > static_cast<Int128>(node_count_) *
                   std::max<int64_t>(max_abs_cost_, 1) ||
      spread * scale_ > kPriceFloor) {
    return false;
  }
  for (uint32_t v = 0; v < node_count_; ++v) {
    price_[v] = (*lo - potentials[v]) * scale_;
  }
  return true;
}

int64_t CostScalingWorkspace::WarmEpsilon() {
  if (options_.price_refinement) PriceRefine(1);
  int64_t violation = 1;
  for (uint32_t u = 0; u < node_count_; ++u) {
    for (uint32_t a = graph_.first_out(u); a < graph_.first_out(u + 1); ++a) {
      if (graph_.arc(a).residual == 0) continue;
      violation = std::max(violation, -ReducedCost(u, graph_.arc(a)));
    }
  }
  const int64_t cold = ColdEpsilon();
  if (violation > cold) {
    std::fill(price_.begin(), price_.end(), 0);
    return cold;
  }
  // Floor: alpha * S, so the first phase runs at S (one original cost
  // unit) or above. Measured on scheduling networks
  // (docs/2026-11-27-solver-measurements.md, "CostScaling"): starting
  // below that, e.g. at 1 when only supplies changed, is slower than a
  // cold start, because equal-cost alternatives at hubs (the cluster
  // aggregator has thousands of zero-reduced-cost reverse arcs) are then
  // resolved by epsilon-sized price steps, O(S) relabels per unit.
  violation = std::max(violation, options_.alpha * scale_);
  int64_t epsilon = 1;
  while (epsilon < violation && epsilon <= cold / options_.alpha) {
    epsilon *= options_.alpha;
  }
  return std::min(std::max(epsilon, violation), cold);
}

absl::Status CostScalingWorkspace::Optimize(int64_t start_epsilon, bool warm) {
  update_threshold_ =
      options_.global_update_frequency > 0
          ? static_cast<uint64_t>(options_.global_update_frequency *
                                  static_cast<double>(node_count_)) +
                1
          : std::numeric_limits<uint64_t>::max();
  bool first = true;
  int64_t epsilon = start_epsilon;
  do {
    epsilon = std::max<int64_t>(1, epsilon / options_.alpha);
    // Price refinement (Goldberg 1997 section 5): if some prices make the
    // current flow epsilon-optimal already, the phase has nothing to do
    // unless excesses remain (a warm start's first phase).
    if (options_.price_refinement && (warm || !first) && PriceRefine(epsilon)) {
      bool balanced = true;
      for (uint32_t v = 0; v < node_count_ && balanced; ++v) {
        balanced = excess_[v] == 0;
      }
      if (balanced) {
        first = false;
        continue;
      }
    }
    FLOWSCHED_RETURN_IF_ERROR(Refine(epsilon));
    FLOWSCHED_RETURN_IF_ERROR(NormalizePrices());
    first = false;
  } while (epsilon > 1);
  return absl::OkStatus();
}

absl::Status CostScalingWorkspace::NormalizePrices() {
  if (node_count_ == 0) return absl::OkStatus();
  const auto [lo, hi] = std::minmax_element(price_.begin(), price_.end());
  const int64_t top = *hi;
  // Unreachable while every lowering checks the floor; kept as the guard of
  // that reasoning.
  if (top - *lo > kPriceFloor) return PriceFloorError();
  for (int64_t& p : price_) p -= top;
  return absl::OkStatus();
}

absl::Status CostScalingWorkspace::Refine(int64_t epsilon) {
  if (options_.stop != nullptr &&
      options_.stop->load(std::memory_order_relaxed)) {
    return absl::CancelledError("cost scaling stopped by its caller");
  }
  // Saturate every residual arc that violates epsilon-optimality; arcs with
  // reduced cost in [-epsilon, 0) may stay, they are merely admissible.
  for (uint32_t u = 0; u < node_count_; ++u) {
    for (uint32_t a = graph_.first_out(u); a < graph_.first_out(u + 1); ++a) {
      const Arc& arc = graph_.arc(a);
      if (arc.residual > 0 && ReducedCost(u, arc) < -epsilon) {
        PushFlow(u, a, arc.residual);
      }
    }
  }
  active_.clear();
  active_head_ = 0;
  for (uint32_t v = 0; v < node_count_; ++v) {
    current_arc_[v] = graph_.first_out(v);
    if (excess_[v] > 0) Activate(v);
  }
  if (active_.empty()) return absl::OkStatus();
  relabels_since_update_ = 0;
  if (options_.global_update_frequency > 0) {
    FLOWSCHED_RETURN_IF_ERROR(GlobalUpdate(epsilon));
  }
  uint32_t until_stop_check = 0;
  while (active_head_ < active_.size()) {
    if (options_.stop != nullptr && ++until_stop_check == 1024) {
      until_stop_check = 0;
      if (options_.stop->load(std::memory_order_relaxed)) {
        return absl::CancelledError("cost scaling stopped by its caller");
      }
    }
    const uint32_t u = active_[active_head_++];
    queued_[u] = 0;
    FLOWSCHED_RETURN_IF_ERROR(Discharge(u, epsilon));
    if (relabels_since_update_ >= update_threshold_) {
      relabels_since_update_ = 0;
      FLOWSCHED_RETURN_IF_ERROR(GlobalUpdate(epsilon));
    }
    // Compact the queue once its consumed prefix dominates.
    if (active_head_ > 4096 && active_head_ * 2 > active_.size()) {
      active_.erase(
          active_.begin(),
          active_.begin() + static_cast<std::ptrdiff_t>(active_head_));
      active_head_ = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status CostScalingWorkspace::Discharge(uint32_t u, int64_t epsilon) {
  // Full discharge (Goldberg's FIFO variant as in CS2): push along admissible
  // arcs (residual, reduced cost < 0) from the current arc on; relabel when
  // none is left. Only a relabel of u changes which of u's arcs are
  // admissible, so arcs before the current arc stay inadmissible.
  const uint32_t end = graph_.first_out(u + 1);
  while (excess_[u] > 0) {
    const uint32_t start = current_arc_[u];
    uint32_t a = start;
    const int64_t price_u = price_[u];
    // The relabel needs the largest price[v] - cost over u's residual arcs.
    // The scan for admissible arcs reads every arc from the current one on,
    // so it keeps that maximum for the inadmissible ones (as LEMON's
    // partial augment-relabel does) and the relabel reads only the arcs
    // before `start`: one pass over u's arcs per relabel instead of two. An
    // arc this scan pushes on is either saturated (no longer residual) or
    // ends the discharge.
    int64_t best = std::numeric_limits<int64_t>::min();
    uint32_t best_arc = kNoIndex;
    for (; a < end; ++a) {
      Arc& arc = graph_.arc(a);
      if (arc.residual == 0 || arc.head == u) continue;
      const int64_t candidate = price_[arc.head] - arc.cost;
      if (price_u >= candidate) {  // reduced cost cost + p[u] - p[v] >= 0
        if (candidate > best) {
          best = candidate;
          best_arc = a;
        }
        continue;
      }
      const uint32_t v = arc.head;
      const int64_t delta = std::min(excess_[u], arc.residual);
      PushFlow(u, a, delta);
      if (excess_[v] > 0) Activate(v);
      if (excess_[u] == 0) break;
    }
    current_arc_[u] = a;
    if (excess_[u] == 0) break;
    if (!Relabel(u, epsilon, start, best, best_arc)) {
      // Impossible after the feasibility check: an excess node always has
      // a residual path to a deficit.
      return absl::InternalError(
          fmt::format("cost_scaling: node {} has excess {} but no residual arc",
                      u, excess_[u]));
    }
    // best >= -kPriceFloor - 2^58 and epsilon <= 2^58: computed safely.
    if (price_[u] < -kPriceFloor) return PriceFloorError();
  }
  return absl::OkStatus();
}

bool CostScalingWorkspace::Relabel(uint32_t u, int64_t epsilon,
                                   uint32_t scanned_from, int64_t best,
                                   uint32_t best_arc) {
  // price[u] = max over residual arcs (price[v] - c) - epsilon: the largest
  // drop that keeps u's arcs epsilon-optimal, after which the maximising arc
  // is admissible (reduced cost -epsilon) and becomes the current arc.
  // Self-loops are ignored: their reduced cost never depends on prices.
  // (best, best_arc) is the maximum over the arcs from scanned_from on; the
  // arcs before it are read here, and on a tie the earlier arc wins.
  for (uint32_t a = graph_.first_out(u); a < scanned_from; ++a) {
    const Arc& arc = graph_.arc(a);
    if (arc.residual == 0 || arc.head == u) continue;
    const int64_t candidate = price_[arc.head] - arc.cost;
    if (candidate > best || (candidate == best && best_arc > a)) {
      best = candidate;
      best_arc = a;
    }
  }
  if (best_arc == kNoIndex) return false;
  price_[u] = best - epsilon;
  current_arc_[u] = best_arc;
  ++relabels_since_update_;
  return true;
}

absl::Status CostScalingWorkspace::GlobalUpdate(int64_t epsilon) {
  // One function of 114 lines on purpose: a hot pass whose bucket lists,
  // overflow heap and settle loop share the rank bounds and the lambdas
  // that move nodes between buckets.
  //
  // Goldberg's global price update ("set relabel"): a bucket-based Dijkstra
  // backwards from the deficit nodes where an arc (v, u) has length
  // floor(rc(v, u) / epsilon) + 1 >= 0 in units of epsilon; every node's
  // price then drops by epsilon * its distance. This keeps epsilon-
  // optimality and makes every excess node's shortest way to a deficit
  // admissible. It stops once all excess nodes are settled; the rest get
  // the current level, which is still a valid (capped) labelling.
  // Ranks up to alpha * n (LEMON's bound for one cold phase) live in
  // buckets; larger ones, which warm starts at small epsilon need (a new
  // task may have to drop its price by S * cost), go to a binary heap that
  // is only consulted after the buckets, so the order stays Dijkstra's.
  const auto cap = static_cast<uint32_t>(std::min<int64_t>(
      int64_t{node_count_} * options_.alpha, int64_t{1} << 28));
  // A rank this large lowers any price (<= 0) below the floor, so ranks
  // saturate there: level + step stays below 2^62 without overflow.
  const int64_t rank_limit = kPriceFloor / epsilon + 1;
  if (bucket_first_.size() < size_t{cap} + 1) {
    bucket_first_.assign(size_t{cap} + 1, kNoIndex);
  }
  bucket_next_.resize(node_count_);
  bucket_prev_.resize(node_count_);
  rank_.assign(node_count_, kUnranked);
  settled_.assign(node_count_, 0);
  overflow_.clear();
  const auto heap_order = std::greater<std::pair<int64_t, uint32_t>>();
  uint32_t top_bucket = 0;  // highest bucket used, for the reset below
  auto insert = [this, &top_bucket](uint32_t v, uint32_t r) {
    top_bucket = std::max(top_bucket, r);
    bucket_prev_[v] = kNoIndex;
    bucket_next_[v] = bucket_first_[r];
    if (bucket_first_[r] != kNoIndex) bucket_prev_[bucket_first_[r]] = v;
    bucket_first_[r] = v;
  };
  auto remove = [this](uint32_t v, uint32_t r) {
    if (bucket_prev_[v] != kNoIndex) {
      bucket_next_[bucket_prev_[v]] = bucket_next_[v];
    } else {
      bucket_first_[r] = bucket_next_[v];
    }
    if (bucket_next_[v] != kNoIndex)
      bucket_prev_[bucket_next_[v]] = bucket_prev_[v];
  };
  size_t excess_left = 0;
  for (uint32_t v = 0; v < node_count_; ++v) {
    if (excess_[v] > 0) ++excess_left;
    if (excess_[v] < 0) {
      rank_[v] = 0;
      insert(v, 0);
    }
  }
  // Settles u at rank `level` and relaxes the arcs into it.
  auto scan = [&](uint32_t u, int64_t level) {
    settled_[u] = 1;
    if (excess_[u] > 0) --excess_left;
    const int64_t price_u = price_[u];
    for (uint32_t a = graph_.first_out(u); a < graph_.first_out(u + 1); ++a) {
      // The mate of u's arc a is the arc v -> u; its reduced cost is
      // -cost(a) + price[v] - price[u].
      const uint32_t v = graph_.arc(a).head;
      // Debug builds (the sanitizer suite) check the copy against the mate:
      // a stale byte would only misprice, which no result shows.
      assert(mate_open_[a] ==
             (graph_.arc(graph_.arc(a).mate).residual > 0 ? 1 : 0));
      if (!mate_open_[a] || settled_[v]) continue;
      const int64_t back_rc = price_[v] - price_u - graph_.arc(a).cost;
      // max(0, floor(rc / epsilon) + 1): 0 for every rc < 0.
      const int64_t r = std::min(
          rank_limit, level + (back_rc < 0 ? 0 : back_rc / epsilon + 1));
      if (r >= rank_[v]) continue;
      if (rank_[v] <= cap) remove(v, static_cast<uint32_t>(rank_[v]));
      rank_[v] = r;
      if (r <= cap) {
        insert(v, static_cast<uint32_t>(r));
      } else {
        overflow_.emplace_back(r, v);
        std::push_heap(overflow_.begin(), overflow_.end(), heap_order);
      }
    }
  };
  int64_t level = 0;
  for (; level <= cap && excess_left > 0; ++level) {
    const auto bucket = static_cast<uint32_t>(level);
    while (bucket_first_[bucket] != kNoIndex && excess_left > 0) {
      const uint32_t u = bucket_first_[bucket];
      remove(u, bucket);
      scan(u, level);
    }
    if (excess_left == 0) break;
  }
  while (excess_left > 0 && !overflow_.empty()) {
    std::pop_heap(overflow_.begin(), overflow_.end(), heap_order);
    const auto [r, u] = overflow_.back();
    overflow_.pop_back();
    if (settled_[u] || r != rank_[u]) continue;  // stale entry
    level = r;
    scan(u, level);
  }
  // Unsettled nodes get the level where the search stopped: every node
  // with a smaller distance is settled, so this is a valid labelling.
  const int64_t stop = level;
  // Clear only the buckets this update used; unsettled nodes may remain.
  std::fill(bucket_first_.begin(), bucket_first_.begin() + top_bucket + 1,
            kNoIndex);
  for (uint32_t v = 0; v < node_count_; ++v) {
    const int64_t r = settled_[v] ? rank_[v] : std::min(stop, rank_[v]);
    if (r >= rank_limit || price_[v] - r * epsilon < -kPriceFloor) {
      return PriceFloorError();
    }
    price_[v] -= r * epsilon;
    current_arc_[v] = graph_.first_out(v);
  }
  return absl::OkStatus();
}

bool CostScalingWorkspace::PriceRefine(int64_t epsilon) {
  // Goldberg's price refinement: look for prices that make the current flow
  // epsilon-optimal without moving flow, i.e. integer d <= 0 with
  // d[v] <= d[u] + floor(rc(u, v) / epsilon) + 1 on every residual arc (d is
  // a shortest distance from a virtual source with 0-length arcs to every
  // node), then price += epsilon * d. Label-correcting (FIFO Bellman-Ford) with
  // a work cap: a negative cycle, or just too much work, means "give up" and
  // the phase runs normally. Prices change only on success.
  distance_.assign(node_count_, 0);
  std::vector<uint32_t> queue;
  std::vector<uint8_t> in_queue(node_count_, 0);
  for (uint32_t u = 0; u < node_count_; ++u) {
    for (uint32_t a = graph_.first_out(u); a < graph_.first_out(u + 1); ++a) {
      const Arc& arc = graph_.arc(a);
      if (arc.residual == 0) continue;
      // floor(rc / epsilon) + 1 < 0 exactly when rc < -epsilon.
      if (ReducedCost(u, arc) < -epsilon) {
        if (arc.head == u) return false;  // a negative self-loop
        if (!in_queue[u]) {
          in_queue[u] = 1;
          queue.push_back(u);
        }
      }
    }
  }
  if (queue.empty()) return true;
  // A negative cycle keeps the labels falling forever; it shows as a cycle
  // of parent pointers, looked for after every node_count_ scans (O(n) each,
  // against at least n arc scans in between). On Quincy networks at 110%
  // load the refinements of the first phases all meet a negative cycle, and
  // without the check each ran into the work cap (~4 m arc scans, ~5 ms of
  // a ~90 ms solve) before giving up.
  parent_.assign(node_count_, kNoIndex);
  size_t scans_until_check = node_count_;
  const size_t work_cap = 4 * graph_.arc_count() + node_count_;
  size_t work = 0;
  // Distances below this would lower some price past the floor: the
  // refinement gives up rather than compute them (it is only a heuristic).
  const int64_t lowest = -(kPriceFloor / epsilon);
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    const uint32_t u = queue[qi];
    in_queue[u] = 0;
    const int64_t du = distance_[u];
    for (uint32_t a = graph_.first_out(u); a < graph_.first_out(u + 1); ++a) {
      const Arc& arc = graph_.arc(a);
      if (arc.residual == 0 || arc.head == u) continue;
      const int64_t rc = ReducedCost(u, arc);
      // A length is >= 1 when rc >= 0: skip the division when that cannot
      // improve the head (most arcs).
      if (rc >= 0 && distance_[arc.head] <= du + 1) continue;
      const int64_t candidate = du + FloorDiv(rc, epsilon) + 1;
      if (candidate < lowest) return false;
      if (candidate < distance_[arc.head]) {
        distance_[arc.head] = candidate;
        parent_[arc.head] = u;
        if (!in_queue[arc.head]) {
          in_queue[arc.head] = 1;
          queue.push_back(arc.head);
        }
      }
    }
    if (--scans_until_check == 0) {
      scans_until_check = node_count_;
      if (ParentsHaveCycle()) return false;
    }
    work += graph_.first_out(u + 1) - graph_.first_out(u) + 1;
    if (work > work_cap) return false;
  }
  for (uint32_t v = 0; v < node_count_; ++v) {
    if (price_[v] + distance_[v] * epsilon < -kPriceFloor) return false;
  }
  for (uint32_t v = 0; v < node_count_; ++v) {
    price_[v] += distance_[v] * epsilon;
  }
  return true;
}

bool CostScalingWorkspace::ParentsHaveCycle() {
  // Walks every parent chain once: a walk that meets a node stamped by
  // itself closed a cycle; one that meets an older walk's node or the
  // virtual source stops. Each node is stamped once, so O(n).
  walk_stamp_.assign(node_count_, kNoIndex);
  for (uint32_t start = 0; start < node_count_; ++start) {
    uint32_t v = start;
    while (v != kNoIndex && walk_stamp_[v] == kNoIndex) {
      walk_stamp_[v] = start;
      v = parent_[v];
    }
    if (v != kNoIndex && walk_stamp_[v] == start) return true;
  }
  return false;
}

absl::Status CostScalingWorkspace::ExactPotentials() {
  // The flow is 1-optimal for costs scaled by S = n + 1, so every residual
  // cycle (at most n arcs) costs more than -n / (n + 1) > -1 in original
  // units, i.e. >= 0: the flow is optimal and the residual network has no
  // negative cycle. Exact potentials are then shortest-path labels with the
  // original costs; starting from floor(price / S), which is off by at most
  // about one unit per arc, label correcting (FIFO Bellman-Ford) converges
  // in few passes.
  std::vector<int64_t>& label = distance_;
  label.resize(node_count_);
  for (uint32_t v = 0; v < node_count_; ++v) {
    label[v] = FloorDiv(price_[v], scale_);
  }
  std::vector<uint32_t> queue;
  std::vector<uint8_t> in_queue(node_count_, 1);
  queue.reserve(node_count_);
  for (uint32_t v = 0; v < node_count_; ++v) queue.push_back(v);
  // Bellman-Ford's bound; only a bug could reach it.
  const Int128 work_cap =
      (static_cast<Int128>(node_count_) + 1) *
      (static_cast<Int128>(graph_.arc_count()) + node_count_);
  Int128 work = 0;
  size_t qi = 0;
  while (qi < queue.size()) {
    const uint32_t u = queue[qi++];
    in_queue[u] = 0;
    const int64_t lu = label[u];
    for (uint32_t a = graph_.first_out(u); a < graph_.first_out(u + 1); ++a) {
      const Arc& arc = graph_.arc(a);
      if (arc.residual == 0) continue;
      // label[v] <= label[u] + c means c + label[u] - label[v] >= 0.
      const int64_t candidate = lu + arc.cost / scale_;
      if (candidate < label[arc.head]) {
        label[arc.head] = candidate;
        if (!in_queue[arc.head]) {
          in_queue[arc.head] = 1;
          queue.push_back(arc.head);
        }
      }
    }
    work += graph_.first_out(u + 1) - graph_.first_out(u) + 1;
    if (work > work_cap) {
      return absl::InternalError(
          "cost_scaling: residual network has a negative cycle at the end");
    }
    if (qi > (size_t{1} << 20) && qi * 2 > queue.size()) {
      queue.erase(queue.begin(),
                  queue.begin() + static_cast<std::ptrdiff_t>(qi));
      qi = 0;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<McmfSolution> CostScalingWorkspace::ExtractSolution() {
  FLOWSCHED_RETURN_IF_ERROR(ExactPotentials());
  FLOWSCHED_ASSIGN_OR_RETURN(
      McmfSolution solution, SolutionFromResiduals(problem_, [this](size_t i) {
        return graph_.arc(graph_.forward_arc(i)).residual;
      }));
  solution.potentials.resize(node_count_);
  for (uint32_t v = 0; v < node_count_; ++v) {
    solution.potentials[v] = -distance_[v];
  }
  return solution;
}

absl::StatusOr<McmfSolution> Finish(CostScalingWorkspace& workspace,
                                    int64_t start_epsilon, bool warm,
                                    std::string_view name) {
  McmfSolution solution;
  const Feasibility feasibility =
      CheckFeasibility(workspace.problem(), workspace.options().stop);
  if (feasibility == Feasibility::kStopped) {
    return absl::CancelledError("cost scaling stopped by its caller");
  }
  if (feasibility == Feasibility::kInfeasible) {
    solution.outcome = McmfOutcome::kInfeasible;
  } else {
    FLOWSCHED_RETURN_IF_ERROR(workspace.Optimize(start_epsilon, warm));
    FLOWSCHED_ASSIGN_OR_RETURN(solution, workspace.ExtractSolution());
  }
  solution.algorithm = std::string(name);
  return solution;
}

}  // namespace

absl::StatusOr<McmfSolution> CostScaling::Solve(const McmfProblem& problem) {
  FLOWSCHED_RETURN_IF_ERROR(ValidateProblem(problem));
  if (options_.alpha < 2) {
    return absl::InvalidArgumentError("cost_scaling: alpha must be >= 2");
  }
  CostScalingWorkspace workspace(problem, options_);
  FLOWSCHED_RETURN_IF_ERROR(workspace.Init());
  return Finish(workspace, workspace.ColdEpsilon(), /*warm=*/false, name());
}

absl::StatusOr<McmfSolution> CostScaling::SolveFrom(
    const McmfProblem& problem, const std::vector<int64_t>& flow,
    const std::vector<int64_t>& potentials) {
  if (flow.size() != problem.arcs.size() ||
      potentials.size() != problem.node_count) {
    return Solve(problem);
  }
  FLOWSCHED_RETURN_IF_ERROR(ValidateProblem(problem));
  if (options_.alpha < 2) {
    return absl::InvalidArgumentError("cost_scaling: alpha must be >= 2");
  }
  CostScalingWorkspace workspace(problem, options_);
  FLOWSCHED_RETURN_IF_ERROR(workspace.Init());
  workspace.SetFlow(flow);
  workspace.SetPotentials(potentials);
  // Phases run at start / alpha, start / alpha^2, ..., 1: a start that is
  // already 1-optimal (only supplies changed, say) runs one phase at 1.
  const int64_t start = workspace.WarmEpsilon();
  return Finish(workspace, start, /*warm=*/true, name());
}

}  // namespace flowsched::solver
