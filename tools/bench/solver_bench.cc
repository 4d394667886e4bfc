#include "tools/bench/solver_bench.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "services/common/percentile.h"
#include "services/common/status_macros.h"
#include "services/solver/cost_scaling.h"
#include "services/solver/dimacs.h"
#include "services/solver/flow_checker.h"
#include "services/solver/incremental_solver.h"
#include "services/solver/portfolio.h"
#include "services/solver/relaxation.h"
#include "services/solver/solver_registry.h"
#include "tools/bench/lemon_runners.h"

namespace flowsched::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

// ---------------------------------------------------------------- cases

BenchCase StaticCase(NetworkShape shape, uint32_t machines,
                     double utilisation) {
  BenchCase c;
  c.kind = "static";
  c.shape.shape = shape;
  c.shape.machines = machines;
  c.shape.utilisation = utilisation;
  c.name = fmt::format("{}-m{}-u{}", ShapeName(shape), machines,
                       std::lround(utilisation * 100));
  return c;
}

BenchCase ContendedCase(uint32_t machines, uint32_t new_job_tasks) {
  BenchCase c;
  c.kind = "contended";
  c.shape = {.shape = NetworkShape::kLoadSpreading,
             .machines = machines,
             .utilisation = 0.97,
             .running_fraction = 1.0,
             .new_job_tasks = new_job_tasks};
  c.name = fmt::format("contended-ls-m{}-j{}", machines, new_job_tasks);
  return c;
}

BenchCase IncrementalCase(NetworkShape shape, uint32_t machines,
                          uint32_t rounds,
                          IncrementalOptions::StartModel starts =
                              IncrementalOptions::StartModel::kFollowOptimum) {
  BenchCase c;
  c.kind = "incremental";
  c.shape.shape = shape;
  c.shape.machines = machines;
  c.shape.utilisation = 0.9;
  c.rounds = rounds;
  // 1% of the live tasks change per round: the incremental target
  // (12,500 machines, ~150k tasks, 1% churn). The generator's default is a
  // uniform 0.5-2%.
  c.incremental.min_change = 0.01;
  c.incremental.max_change = 0.01;
  c.incremental.starts = starts;
  // Tasks start where the last optimum placed them, as in the product;
  // "-random-starts" moves each start's unit to a random free slot (the
  // generator's stress model, IncrementalOptions::StartModel).
  c.name =
      fmt::format("incr-{}-m{}-r{}-c1{}", ShapeName(shape), machines, rounds,
                  starts == IncrementalOptions::StartModel::kRandomFreeSlot
                      ? "-random-starts"
                      : "");
  return c;
}

// ------------------------------------------------------------ solving

struct Sample {
  double total_ms = 0;  // problem in, cost out (LEMON: incl. graph build)
  double core_ms = 0;   // LEMON: run() only; flowsched: == total_ms
  bool optimal = false;
  int64_t cost = 0;
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Error string on failure (solver error or failed certificate).
  virtual std::optional<std::string> Solve(const solver::McmfProblem& problem,
                                           Sample& sample) = 0;
  // Sequences only: what the next Solve's problem changed (stable indices).
  virtual void Changed(const RoundChanges& /*changes*/) {}
};

// Outcome and cost of a timed solve into `sample`, after the optimality
// certificate; the error text on failure.
std::optional<std::string> CheckedSample(
    const solver::McmfProblem& problem,
    const absl::StatusOr<solver::McmfSolution>& solution, Sample& sample) {
  if (!solution.ok()) return solution.status().ToString();
  sample.optimal = solution->outcome == solver::McmfOutcome::kOptimal;
  sample.cost = solution->total_cost;
  if (sample.optimal) {
    if (absl::Status check = solver::CheckOptimalFlow(problem, *solution);
        !check.ok()) {
      return "CheckOptimalFlow: " + check.ToString();
    }
  }
  return std::nullopt;
}

class FlowschedRunner final : public Runner {
 public:
  explicit FlowschedRunner(std::unique_ptr<solver::McmfSolver> solver)
      : solver_(std::move(solver)) {}
  std::optional<std::string> Solve(const solver::McmfProblem& problem,
                                   Sample& sample) override {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<solver::McmfSolution> solution = solver_->Solve(problem);
    sample.total_ms = sample.core_ms = MsSince(start);
    return CheckedSample(problem, solution, sample);
  }

 private:
  std::unique_ptr<solver::McmfSolver> solver_;
};

// flowsched's incremental solver as the solver worker runs it: the first
// round is a cold start by cost scaling whose flow is installed; later
// rounds apply only the changed nodes and arcs (problem indices are the
// stable node ids and arc handles) and repair. The time covers applying
// the changes and solving; the certificate check runs after, untimed,
// on the exported problem, like the other runners' checks.
class IncrementalRunner final : public Runner {
 public:
  std::optional<std::string> Solve(const solver::McmfProblem& problem,
                                   Sample& sample) override {
    const Clock::time_point start = Clock::now();
    if (absl::Status s = Load(problem); !s.ok()) return s.ToString();
    absl::StatusOr<solver::McmfSolution> solution;
    if (!warm_) {
      solver::CostScaling cold;
      solution = cold.Solve(problem);
      if (!solution.ok()) return solution.status().ToString();
      if (solution->outcome == solver::McmfOutcome::kOptimal) {
        if (absl::Status s =
                solver_.InstallSolution(solution->flow, solution->potentials);
            !s.ok()) {
          return s.ToString();
        }
        warm_ = true;
      }
      sample.total_ms = sample.core_ms = MsSince(start);
      sample.optimal = solution->outcome == solver::McmfOutcome::kOptimal;
      sample.cost = solution->total_cost;
      return std::nullopt;
    }
    auto result = solver_.Solve();
    sample.total_ms = sample.core_ms = MsSince(start);
    if (!result.ok()) return result.status().ToString();
    sample.optimal = result->outcome == solver::McmfOutcome::kOptimal;
    sample.cost = result->total_cost;
    if (sample.optimal) {
      solver::McmfProblem exported;
      solver::McmfSolution exported_solution;
      std::vector<uint32_t> handles;
      solver_.Export(exported, exported_solution, handles);
      if (absl::Status check =
              solver::CheckOptimalFlow(exported, exported_solution);
          !check.ok()) {
        return "CheckOptimalFlow: " + check.ToString();
      }
    }
    return std::nullopt;
  }
  void Changed(const RoundChanges& changes) override { pending_ = changes; }

 private:
  absl::Status Load(const solver::McmfProblem& problem) {
    if (!loaded_) {
      // The whole network, node ids and arc handles as the problem's
      // indices (what the rounds' changes name).
      FLOWSCHED_RETURN_IF_ERROR(solver_.Load(problem));
      loaded_ = true;
      return absl::OkStatus();
    }
    for (uint32_t v : pending_.changed_nodes) {
      if (absl::Status s = solver_.SetSupply(v, problem.supply[v]); !s.ok()) {
        return s;
      }
    }
    for (uint32_t a : pending_.changed_arcs) {
      const solver::McmfArc& arc = problem.arcs[a];
      if (absl::Status s =
              solver_.SetArc(a, arc.src, arc.dst, arc.capacity, arc.cost);
          !s.ok()) {
        return s;
      }
    }
    pending_ = {};
    return absl::OkStatus();
  }

  solver::IncrementalSolver solver_;
  RoundChanges pending_;
  bool loaded_ = false;
  bool warm_ = false;
};

// A from-scratch solver resumed from the previous round's optimum (problem
// indices are stable across a sequence's rounds); round 0, and a round
// after one that was not optimal, solve cold.
class WarmStartRunner : public Runner {
 public:
  std::optional<std::string> Solve(const solver::McmfProblem& problem,
                                   Sample& sample) final {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<solver::McmfSolution> solution =
        last_.outcome == solver::McmfOutcome::kOptimal
            ? SolveFrom(problem, last_)
            : SolveCold(problem);
    sample.total_ms = sample.core_ms = MsSince(start);
    std::optional<std::string> failure =
        CheckedSample(problem, solution, sample);
    if (!failure) last_ = std::move(*solution);
    return failure;
  }

 protected:
  virtual absl::StatusOr<solver::McmfSolution> SolveFrom(
      const solver::McmfProblem& problem, const solver::McmfSolution& last) = 0;
  virtual absl::StatusOr<solver::McmfSolution> SolveCold(
      const solver::McmfProblem& problem) = 0;

 private:
  solver::McmfSolution last_;
};

// Firmament's incremental portfolio (Portfolio::SolveFrom).
class WarmPortfolioRunner final : public WarmStartRunner {
 protected:
  absl::StatusOr<solver::McmfSolution> SolveFrom(
      const solver::McmfProblem& problem,
      const solver::McmfSolution& last) override {
    return solver::Portfolio().SolveFrom(problem, last.flow, last.potentials);
  }
  absl::StatusOr<solver::McmfSolution> SolveCold(
      const solver::McmfProblem& problem) override {
    return solver::Portfolio().Solve(problem);
  }
};

// Relaxation alone (Relaxation::SolveFrom).
class WarmRelaxationRunner final : public WarmStartRunner {
 protected:
  absl::StatusOr<solver::McmfSolution> SolveFrom(
      const solver::McmfProblem& problem,
      const solver::McmfSolution& last) override {
    return solver::Relaxation().SolveFrom(problem,
                                          {last.flow, last.potentials});
  }
  absl::StatusOr<solver::McmfSolution> SolveCold(
      const solver::McmfProblem& problem) override {
    return solver::Relaxation().Solve(problem);
  }
};

class LemonRunner final : public Runner {
 public:
  explicit LemonRunner(LemonAlgorithm algorithm) : algorithm_(algorithm) {}
  std::optional<std::string> Solve(const solver::McmfProblem& problem,
                                   Sample& sample) override {
    const LemonRun run = SolveWithLemon(problem, algorithm_);
    if (run.unbounded) return std::string("LEMON reports UNBOUNDED");
    sample.total_ms = run.total_ms;
    sample.core_ms = run.run_ms;
    sample.optimal = run.optimal;
    sample.cost = run.cost;
    return std::nullopt;
  }

 private:
  LemonAlgorithm algorithm_;
};

std::unique_ptr<Runner> MakeRunner(const std::string& algorithm, bool sequence,
                                   std::string& error) {
  if (algorithm == kLemonNetworkSimplex) {
    return std::make_unique<LemonRunner>(LemonAlgorithm::kNetworkSimplex);
  }
  if (algorithm == kLemonCostScaling) {
    return std::make_unique<LemonRunner>(LemonAlgorithm::kCostScaling);
  }
  // On a single network "incremental" is the registry's from-scratch
  // solver (solver::ScratchIncremental); on a sequence it repairs.
  if (algorithm == kIncremental && sequence) {
    return std::make_unique<IncrementalRunner>();
  }
  if (algorithm == kWarmPortfolio) {
    return std::make_unique<WarmPortfolioRunner>();
  }
  if (algorithm == kWarmRelaxation) {
    return std::make_unique<WarmRelaxationRunner>();
  }
  absl::StatusOr<std::unique_ptr<solver::McmfSolver>> solver =
      solver::MakeSolver(algorithm);
  if (!solver.ok()) {
    error = solver.status().ToString();
    return nullptr;
  }
  return std::make_unique<FlowschedRunner>(std::move(*solver));
}

bool IsSequenceOnly(const std::string& algorithm) {
  return algorithm == kWarmPortfolio || algorithm == kWarmRelaxation;
}

bool IsLemon(const std::string& algorithm) {
  return algorithm == kLemonNetworkSimplex || algorithm == kLemonCostScaling;
}

// ------------------------------------------------------ child process

int64_t ProcStatusKb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) {
      return std::strtoll(line.c_str() + prefix.size(), nullptr, 10);
    }
  }
  return -1;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// Runs in the forked child; reports over `fd`, one line per event:
//   s <total_ms> <core_ms> <optimal 0|1> <cost>   one solve
//   c <nodes> <arcs> <arrivals> <completions> <starts> <failed>
//                                                 one incremental round
//   e <message>                                   failure, stops the child
//   m <baseline_kb> <peak_kb>                     memory at the end
// The peak is VmHWM after resetting it at start (/proc/self/clear_refs 5),
// so it is this algorithm's own peak, problem included; baseline is the
// RSS before solving (mostly the shared problem).
void ChildMain(int fd, const BenchCase& bench_case,
               const std::string& algorithm, const solver::McmfProblem& problem,
               ClusterNetwork* sequence, int repeat) {
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
  }
  const int64_t baseline_kb = ProcStatusKb("VmRSS");
  std::string error;
  std::unique_ptr<Runner> runner =
      MakeRunner(algorithm, sequence != nullptr, error);
  auto emit_error = [fd](const std::string& message) {
    WriteAll(fd, "e " + OneLine(message) + "\n");
  };
  auto emit_sample = [fd](const Sample& s) {
    WriteAll(fd, fmt::format("s {:.4f} {:.4f} {} {}\n", s.total_ms, s.core_ms,
                             s.optimal ? 1 : 0, s.cost));
  };
  if (runner == nullptr) {
    emit_error(error);
  } else if (sequence == nullptr) {
    for (int r = 0; r < repeat; ++r) {
      Sample sample;
      if (std::optional<std::string> failure = runner->Solve(problem, sample)) {
        emit_error(*failure);
        break;
      }
      emit_sample(sample);
    }
  } else {
    // One runner (one solver instance) for the whole sequence, so a
    // stateful incremental solver can reuse its previous solution.
    for (uint32_t round = 0; round <= bench_case.rounds; ++round) {
      if (round > 0) {
        const RoundChanges changes = sequence->NextRound();
        runner->Changed(changes);
        WriteAll(fd, fmt::format("c {} {} {} {} {} {}\n",
                                 changes.changed_nodes.size(),
                                 changes.changed_arcs.size(), changes.arrivals,
                                 changes.completions, changes.starts,
                                 changes.failed_machine >= 0 ? 1 : 0));
      }
      Sample sample;
      if (std::optional<std::string> failure =
              runner->Solve(sequence->problem(), sample)) {
        emit_error(fmt::format("round {}: {}", round, *failure));
        break;
      }
      emit_sample(sample);
    }
  }
  runner.reset();
  WriteAll(fd, fmt::format("m {} {}\n", baseline_kb, ProcStatusKb("VmHWM")));
}

struct AlgorithmResult {
  std::string algorithm;
  std::string status = "ok";  // ok, skipped, n/a, error, crash, mismatch
  std::string note;
  std::vector<Sample> samples;
  std::vector<std::vector<int64_t>> round_changes;
  double baseline_mb = 0;
  double peak_mb = 0;
  double wall_s = 0;
};

AlgorithmResult RunInChild(const BenchCase& bench_case,
                           const std::string& algorithm,
                           const solver::McmfProblem& problem,
                           ClusterNetwork* sequence, int repeat,
                           double max_seconds) {
  AlgorithmResult result;
  result.algorithm = algorithm;
  int fds[2];
  if (pipe(fds) != 0) {
    result.status = "error";
    result.note = "pipe failed";
    return result;
  }
  std::fflush(nullptr);
  const Clock::time_point start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    result.status = "error";
    result.note = "fork failed";
    close(fds[0]);
    close(fds[1]);
    return result;
  }
  if (pid == 0) {
    close(fds[0]);
    ChildMain(fds[1], bench_case, algorithm, problem, sequence, repeat);
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string buffer;
  bool timed_out = false;
  char chunk[4096];
  // The budget is per solve: the child reports after every solve (and
  // before every incremental round), so silence longer than max_seconds
  // means one solve overran.
  Clock::time_point last_report = start;
  while (true) {
    int timeout_ms = -1;
    if (max_seconds > 0) {
      const double left = max_seconds * 1000.0 - MsSince(last_report);
      if (left <= 0) {
        timed_out = true;
        break;
      }
      timeout_ms = static_cast<int>(std::min(left, 1e9)) + 1;
    }
    pollfd pfd{.fd = fds[0], .events = POLLIN, .revents = 0};
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // re-checks the deadline
    const ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    last_report = Clock::now();
  }
  if (timed_out) kill(pid, SIGKILL);  // our own child only
  close(fds[0]);
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  result.wall_s = MsSince(start) / 1000.0;

  std::istringstream lines(buffer);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() < 2) continue;
    std::istringstream fields(line.substr(2));
    switch (line[0]) {
      case 's': {
        Sample s;
        int optimal = 0;
        fields >> s.total_ms >> s.core_ms >> optimal >> s.cost;
        s.optimal = optimal != 0;
        result.samples.push_back(s);
        break;
      }
      case 'c': {
        std::vector<int64_t> values(6, 0);
        for (int64_t& v : values) fields >> v;
        result.round_changes.push_back(values);
        break;
      }
      case 'e':
        result.status = "error";
        result.note = line.substr(2);
        break;
      case 'm': {
        int64_t baseline = 0, peak = 0;
        fields >> baseline >> peak;
        result.baseline_mb = static_cast<double>(baseline) / 1024.0;
        result.peak_mb = static_cast<double>(peak) / 1024.0;
        break;
      }
      default:
        break;
    }
  }
  if (timed_out) {
    result.status = "skipped";
    result.note = fmt::format(
        "a solve took over --max-seconds {:g} ({} "
        "solves done before)",
        max_seconds, result.samples.size());
  } else if (result.status == "ok" &&
             (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0)) {
    result.status = "crash";
    result.note =
        WIFSIGNALED(wait_status)
            ? fmt::format("killed by signal {}", WTERMSIG(wait_status))
            : fmt::format("exit code {}", WEXITSTATUS(wait_status));
  }
  return result;
}

// ------------------------------------------------------------- stats

struct Stats {
  double median = std::nan("");
  double min = std::nan("");
  double core_median = std::nan("");
  // Incremental: round 0 alone, then rounds 1..R.
  double cold = std::nan("");
  double p50 = std::nan(""), p90 = std::nan(""), p99 = std::nan("");
  double max = std::nan("");
};

Stats ComputeStats(const AlgorithmResult& r, bool incremental) {
  Stats stats;
  std::vector<double> totals, cores;
  for (size_t i = 0; i < r.samples.size(); ++i) {
    if (incremental && i == 0) {
      stats.cold = r.samples[0].total_ms;
      continue;
    }
    totals.push_back(r.samples[i].total_ms);
    cores.push_back(r.samples[i].core_ms);
  }
  if (totals.empty()) return stats;
  stats.median = Percentile(totals, 0.50);
  stats.core_median = Percentile(cores, 0.50);
  stats.min = *std::min_element(totals.begin(), totals.end());
  stats.p50 = stats.median;
  stats.p90 = Percentile(totals, 0.90);
  stats.p99 = Percentile(totals, 0.99);
  stats.max = *std::max_element(totals.begin(), totals.end());
  return stats;
}

std::string Ms(double value) {
  if (std::isnan(value)) return "-";
  return value >= 100 ? fmt::format("{:.0f}", value)
                      : fmt::format("{:.2f}", value);
}

std::string Ratio(double value) {
  if (std::isnan(value) || std::isinf(value)) return "-";
  return fmt::format("{:.2f}x", value);
}

std::string CsvNum(double value) {
  return std::isnan(value) || std::isinf(value) ? ""
                                                : fmt::format("{:.4f}", value);
}

std::string CsvText(std::string text) {
  std::replace(text.begin(), text.end(), ',', ';');
  std::replace(text.begin(), text.end(), '"', '\'');
  return text;
}

double PeakRssMb(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

struct SummaryRow {
  std::string name;
  std::string kind;
  uint32_t nodes = 0;
  size_t arcs = 0;
  std::map<std::string, double> ms;  // median or round p50
  std::map<std::string, std::string> status;
  double ratio = std::nan("");
  double peak_mb = 0;
};

// Over the random family's cases: per flowsched algorithm, its time over
// the fastest LEMON's on the same network (median, p90, worst and where),
// and how often it was not slower. A case without a LEMON time, or where
// the algorithm did not finish, counts as unmeasured.
void PrintRatioDistribution(const std::vector<SummaryRow>& summary,
                            const std::vector<std::string>& algorithms,
                            std::ostream& out) {
  size_t random_cases = 0;
  for (const SummaryRow& row : summary) random_cases += row.kind == "random";
  if (random_cases == 0) return;
  out << fmt::format(
      "\n== ratio to the best LEMON over {} random networks (algorithm ms / "
      "min(lemon_ns, lemon_cs) ms; below 1 is faster)\n",
      random_cases);
  out << fmt::format("   {:<26} {:>8} {:>8} {:>8} {:>8} {:>7} {:>10}  {}\n",
                     "algorithm", "measured", "median", "p90", "worst", "<=1.0",
                     "unfinished", "worst case");
  for (const std::string& algorithm : algorithms) {
    if (IsLemon(algorithm)) continue;
    std::vector<double> ratios;
    size_t unfinished = 0;
    double worst = 0;
    std::string worst_case;
    for (const SummaryRow& row : summary) {
      if (row.kind != "random") continue;
      double best_lemon = std::nan("");
      for (const char* lemon : {kLemonNetworkSimplex, kLemonCostScaling}) {
        if (row.status.at(lemon) != "ok") continue;
        const double t = row.ms.at(lemon);
        if (std::isnan(best_lemon) || t < best_lemon) best_lemon = t;
      }
      if (row.status.at(algorithm) != "ok" || std::isnan(best_lemon)) {
        ++unfinished;
        continue;
      }
      const double ratio = row.ms.at(algorithm) / best_lemon;
      ratios.push_back(ratio);
      if (ratio > worst) {
        worst = ratio;
        worst_case = row.name;
      }
    }
    const auto wins = static_cast<size_t>(std::count_if(
        ratios.begin(), ratios.end(), [](double r) { return r <= 1.0; }));
    out << fmt::format("   {:<26} {:>8} {:>8} {:>8} {:>8} {:>7} {:>10}  {}\n",
                       algorithm, ratios.size(), Ratio(Percentile(ratios, 0.5)),
                       Ratio(Percentile(ratios, 0.9)),
                       ratios.empty() ? "-" : Ratio(worst), wins, unfinished,
                       worst_case);
  }
}

// --write-dimacs: each generated case's network as DIR/<case>.min, the
// shape in the comment. 0, or 2 if a file cannot be written.
int WriteCases(const std::vector<BenchCase>& cases, const std::string& dir,
               std::ostream& out, std::ostream& progress) {
  for (const BenchCase& c : cases) {
    if (!c.dimacs_path.empty()) continue;
    const std::string path = dir + "/" + c.name + ".min";
    std::ofstream file(path);
    const ClusterShape& s = c.shape;
    const absl::Status written =
        file ? solver::WriteDimacs(
                   ClusterNetwork(s, c.incremental).problem(), file,
                   fmt::format("flowsched bench solver case {}: {} shape, {} "
                               "machines, {} slots each, load {:.3f}, seed {}",
                               c.name, ShapeName(s.shape), s.machines,
                               s.slots_per_machine, s.utilisation, s.seed))
             : absl::NotFoundError("cannot open the file");
    if (!written.ok()) {
      progress << fmt::format("bench solver: {}: {}\n", path,
                              std::string(written.message()));
      return 2;
    }
    out << path << "\n";
  }
  return 0;
}

}  // namespace

absl::Status CheckAlgorithmNames(const std::vector<std::string>& algorithms) {
  const std::vector<std::string> known = solver::SolverNames();
  for (const std::string& algorithm : algorithms) {
    if (IsSequenceOnly(algorithm)) continue;
    if (std::find(known.begin(), known.end(), algorithm) != known.end()) {
      continue;
    }
    return absl::InvalidArgumentError(fmt::format(
        "unknown algorithm '{}'; known: {}, {}, {} (LEMON always runs)",
        algorithm, fmt::join(known, ", "), kWarmPortfolio, kWarmRelaxation));
  }
  return absl::OkStatus();
}

std::vector<BenchCase> StandardCases(bool quick) {
  std::vector<BenchCase> cases;
  const std::vector<uint32_t> sizes =
      quick ? std::vector<uint32_t>{100}
            : std::vector<uint32_t>{1250, 5000, 12500};
  const std::vector<double> loads = {0.5, 0.9, 0.97, 1.1};
  for (const NetworkShape shape :
       {NetworkShape::kQuincy, NetworkShape::kLoadSpreading}) {
    for (const uint32_t machines : sizes) {
      for (const double load : loads) {
        cases.push_back(StaticCase(shape, machines, load));
      }
    }
  }
  cases.push_back(quick ? ContendedCase(100, 400) : ContendedCase(12500, 5000));
  if (quick) {
    cases.push_back(IncrementalCase(NetworkShape::kQuincy, 100, 5));
    cases.push_back(IncrementalCase(NetworkShape::kLoadSpreading, 100, 5));
  } else {
    cases.push_back(IncrementalCase(NetworkShape::kQuincy, 1250, 20));
    cases.push_back(IncrementalCase(NetworkShape::kQuincy, 12500, 20));
    cases.push_back(IncrementalCase(NetworkShape::kLoadSpreading, 1250, 20));
    cases.push_back(IncrementalCase(NetworkShape::kLoadSpreading, 12500, 20));
    cases.push_back(
        IncrementalCase(NetworkShape::kQuincy, 1250, 20,
                        IncrementalOptions::StartModel::kRandomFreeSlot));
    cases.push_back(
        IncrementalCase(NetworkShape::kLoadSpreading, 12500, 20,
                        IncrementalOptions::StartModel::kRandomFreeSlot));
  }
  return cases;
}

int RunSolverBench(const BenchOptions& options, std::ostream& out,
                   std::ostream& progress) {
  std::vector<BenchCase> cases;
  for (const std::string& path : options.dimacs_files) {
    BenchCase c;
    c.name = path.substr(path.find_last_of('/') + 1);
    c.kind = "dimacs";
    c.dimacs_path = path;
    cases.push_back(c);
  }
  for (const BenchCase& c :
       options.cases.empty() ? StandardCases(options.quick) : options.cases) {
    if (!options.dimacs_files.empty()) break;
    bool selected = options.case_filters.empty();
    for (const std::string& filter : options.case_filters) {
      if (c.name.find(filter) != std::string::npos) selected = true;
    }
    if (selected) cases.push_back(c);
  }
  if (cases.empty()) {
    progress << "bench solver: no case matches --cases\n";
    return 2;
  }
  if (!options.write_dimacs_dir.empty()) {
    return WriteCases(cases, options.write_dimacs_dir, out, progress);
  }
  std::vector<std::string> algorithms = options.algorithms;
  algorithms.push_back(kLemonNetworkSimplex);
  algorithms.push_back(kLemonCostScaling);
  std::ofstream csv;
  if (!options.csv_path.empty()) {
    csv.open(options.csv_path);
    if (!csv) {
      progress << "bench solver: cannot write " << options.csv_path << "\n";
      return 2;
    }
    csv << "case,kind,shape,machines,slots_per_machine,utilisation,tasks,"
           "nodes,arcs,algorithm,status,solves,median_ms,min_ms,"
           "median_core_ms,cost,ratio_to_best_lemon,rounds,cold_ms,p50_ms,"
           "p90_ms,p99_ms,max_ms,speedup_vs_best_lemon_p50,peak_rss_mb,"
           "extra_rss_mb,mean_changed_arcs_per_round,note\n";
  }
  int exit_code = 0;
  std::vector<SummaryRow> summary;
  const Clock::time_point bench_start = Clock::now();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const BenchCase& bench_case = cases[ci];
    const bool incremental = bench_case.rounds > 0;
    progress << fmt::format(
                    "[{}/{}] {}: {}...", ci + 1, cases.size(), bench_case.name,
                    bench_case.dimacs_path.empty() ? "generating" : "reading")
             << std::flush;
    const Clock::time_point gen_start = Clock::now();
    std::optional<ClusterNetwork> network;
    solver::McmfProblem file_problem;
    if (bench_case.dimacs_path.empty()) {
      network.emplace(bench_case.shape, bench_case.incremental);
    } else {
      std::ifstream in(bench_case.dimacs_path);
      absl::StatusOr<solver::DimacsProblem> parsed =
          in ? solver::ParseDimacs(in)
             : absl::NotFoundError("cannot open the file");
      if (!parsed.ok()) {
        progress << fmt::format(" {}: {}\n", bench_case.dimacs_path,
                                std::string(parsed.status().message()));
        return 2;
      }
      file_problem = std::move(parsed->problem);
    }
    const solver::McmfProblem& problem =
        network ? network->problem() : file_problem;
    progress << fmt::format(" {} nodes, {} arcs in {:.1f} s\n",
                            problem.node_count, problem.arcs.size(),
                            MsSince(gen_start) / 1000.0);
    std::vector<AlgorithmResult> results;
    for (const std::string& algorithm : algorithms) {
      if (IsSequenceOnly(algorithm) && !incremental) {
        // These runners resume from the previous round; on a single
        // network they would only repeat a cold solver.
        AlgorithmResult skipped;
        skipped.algorithm = algorithm;
        skipped.status = "n/a";
        results.push_back(skipped);
        continue;
      }
      progress << fmt::format("[{}/{}] {}: {} ...", ci + 1, cases.size(),
                              bench_case.name, algorithm)
               << std::flush;
      results.push_back(RunInChild(bench_case, algorithm, problem,
                                   incremental ? &*network : nullptr,
                                   options.repeat, options.max_seconds));
      const AlgorithmResult& r = results.back();
      progress << fmt::format(" {} in {:.1f} s{}\n", r.status, r.wall_s,
                              r.note.empty() ? "" : " (" + r.note + ")");
    }
    // Cross-check: every completed solve must agree with LEMON
    // NetworkSimplex on outcome and cost, solve by solve (round by round).
    const AlgorithmResult* reference = nullptr;
    for (const char* name : {kLemonNetworkSimplex, kLemonCostScaling}) {
      for (const AlgorithmResult& r : results) {
        if (reference == nullptr && r.algorithm == name && r.status == "ok") {
          reference = &r;
        }
      }
    }
    for (AlgorithmResult& r : results) {
      if (r.status == "error" || r.status == "crash") {
        if (!IsLemon(r.algorithm) || r.status == "crash") exit_code = 1;
        continue;
      }
      if (reference == nullptr || &r == reference) continue;
      for (size_t i = 0; i < r.samples.size(); ++i) {
        const size_t j = incremental ? i : 0;
        if (j >= reference->samples.size()) break;
        const Sample& ref = reference->samples[j];
        if (r.samples[i].optimal != ref.optimal ||
            (ref.optimal && r.samples[i].cost != ref.cost)) {
          r.status = "mismatch";
          r.note = fmt::format("{} {}: cost {} vs lemon_ns {}",
                               incremental ? "round" : "solve", i,
                               r.samples[i].cost, ref.cost);
          r.note += " (reference " + reference->algorithm + ")";
          exit_code = 1;
          break;
        }
      }
    }
    if (reference == nullptr) {
      progress << "  warning: no LEMON result to check costs against\n";
    }

    // Stats and the per-case table.
    std::vector<Stats> stats;
    double best_lemon = std::nan("");
    double best_flowsched = std::nan("");
    for (const AlgorithmResult& r : results) {
      stats.push_back(ComputeStats(r, incremental));
      const double t = incremental ? stats.back().p50 : stats.back().median;
      if (r.status != "ok" || std::isnan(t)) continue;
      double& best = IsLemon(r.algorithm) ? best_lemon : best_flowsched;
      if (std::isnan(best) || t < best) best = t;
    }
    double mean_changed_arcs = std::nan("");
    for (const AlgorithmResult& r : results) {
      if (!r.round_changes.empty()) {
        double sum = 0;
        for (const auto& c : r.round_changes) sum += static_cast<double>(c[1]);
        mean_changed_arcs = sum / static_cast<double>(r.round_changes.size());
        break;
      }
    }
    const double problem_mb =
        static_cast<double>(problem.arcs.size() * sizeof(solver::McmfArc) +
                            problem.supply.size() * sizeof(int64_t)) /
        (1024.0 * 1024.0);
    out << fmt::format(
        "\n== {}: {} nodes, {} arcs, {} tasks ({} running); problem {:.1f} "
        "MB\n",
        bench_case.name, problem.node_count, problem.arcs.size(),
        network ? network->live_tasks() : 0,
        network ? network->running_tasks() : 0, problem_mb);
    if (bench_case.kind == "random") {
      const ClusterShape& shape = bench_case.shape;
      const std::string preferences =
          shape.shape == NetworkShape::kQuincy
              ? fmt::format("{}-{} preference arcs per task, ",
                            shape.min_preferences, shape.max_preferences)
              : std::string();
      out << fmt::format(
          "   shape: {} slots per machine, {} machines per rack, {:.0f}% "
          "running, jobs {} around {} tasks, {}costs x{}, seed {}\n",
          shape.slots_per_machine, shape.machines_per_rack,
          shape.running_fraction * 100, JobSizesName(shape.job_sizes),
          shape.mean_tasks_per_job, preferences, shape.cost_scale, shape.seed);
    }
    if (incremental) {
      out << fmt::format(
          "   {} rounds, mean {:.0f} changed arcs per round; per-round ms over "
          "rounds 1..{} (round 0 = cold)\n",
          bench_case.rounds, mean_changed_arcs, bench_case.rounds);
      out << fmt::format(
          "   {:<26} {:<8} {:>9} {:>9} {:>9} {:>9} {:>9} "
          "{:>10} {:>9}\n",
          "algorithm", "status", "cold_ms", "p50_ms", "p90_ms", "p99_ms",
          "max_ms", "speed-up", "peak_MB");
    } else {
      out << fmt::format(
          "   {:<26} {:<8} {:>10} {:>10} {:>10} {:>6} {:>10} "
          "{:>9} {:>9}\n",
          "algorithm", "status", "median_ms", "min_ms", "run_ms", "solves",
          "vs_lemon", "peak_MB", "extra_MB");
    }
    SummaryRow row{.name = bench_case.name,
                   .kind = bench_case.kind,
                   .nodes = problem.node_count,
                   .arcs = problem.arcs.size()};
    row.ratio = best_flowsched / best_lemon;
    for (size_t i = 0; i < results.size(); ++i) {
      const AlgorithmResult& r = results[i];
      const Stats& s = stats[i];
      const bool lemon = IsLemon(r.algorithm);
      const std::string label =
          lemon ? r.algorithm + " (scratch)" : r.algorithm;
      row.ms[r.algorithm] = incremental ? s.p50 : s.median;
      row.status[r.algorithm] = r.status;
      row.peak_mb = std::max(row.peak_mb, r.peak_mb);
      const double vs_lemon = lemon ? std::nan("") : s.median / best_lemon;
      const double speedup = best_lemon / s.p50;
      if (incremental) {
        out << fmt::format(
            "   {:<26} {:<8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9.1f}\n",
            incremental && lemon ? label : r.algorithm, r.status, Ms(s.cold),
            Ms(s.p50), Ms(s.p90), Ms(s.p99), Ms(s.max),
            lemon ? "-" : Ratio(speedup), r.peak_mb);
      } else {
        out << fmt::format(
            "   {:<26} {:<8} {:>10} {:>10} {:>10} {:>6} {:>10} {:>9.1f} "
            "{:>9.1f}\n",
            r.algorithm, r.status, Ms(s.median), Ms(s.min),
            lemon ? Ms(s.core_median) : "", r.samples.size(), Ratio(vs_lemon),
            r.peak_mb, r.peak_mb - r.baseline_mb);
      }
      if (!r.note.empty()) out << "      note: " << r.note << "\n";
      if (csv.is_open()) {
        const int64_t cost = r.samples.empty() ? 0 : r.samples.back().cost;
        // shape,machines,slots_per_machine,utilisation,tasks: unknown for
        // a network read from a file.
        const std::string shape_columns =
            network ? fmt::format(
                          "{},{},{},{},{}", ShapeName(bench_case.shape.shape),
                          bench_case.shape.machines,
                          bench_case.shape.slots_per_machine,
                          bench_case.shape.utilisation, network->live_tasks())
                    : std::string(",,,,");
        csv << fmt::format(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
            "{},{},{},{:.1f},{:.1f},{},{}\n",
            bench_case.name, bench_case.kind, shape_columns, problem.node_count,
            problem.arcs.size(), r.algorithm, r.status, r.samples.size(),
            CsvNum(s.median), CsvNum(s.min), CsvNum(s.core_median),
            r.samples.empty() ? "" : std::to_string(cost),
            lemon ? "" : CsvNum(incremental ? s.p50 / best_lemon : vs_lemon),
            bench_case.rounds, CsvNum(s.cold), CsvNum(s.p50), CsvNum(s.p90),
            CsvNum(s.p99), CsvNum(s.max),
            incremental && !lemon ? CsvNum(speedup) : "", r.peak_mb,
            r.peak_mb - r.baseline_mb, CsvNum(mean_changed_arcs),
            CsvText(r.note));
        csv.flush();
      }
    }
    summary.push_back(row);
  }

  // The summary: one line per case.
  out << "\n== summary (ms: median over repeats; incremental: per-round p50; "
         "LEMON includes building its graph)\n";
  std::string header =
      fmt::format("   {:<30} {:>8} {:>9}", "case", "nodes", "arcs");
  for (const std::string& a : algorithms) header += fmt::format(" {:>12}", a);
  header += fmt::format(" {:>11} {:>8}\n", "best/lemon", "peak_MB");
  out << header;
  for (const SummaryRow& row : summary) {
    std::string line =
        fmt::format("   {:<30} {:>8} {:>9}", row.name, row.nodes, row.arcs);
    for (const std::string& a : algorithms) {
      const std::string status = row.status.at(a);
      line +=
          fmt::format(" {:>12}", status == "ok" ? Ms(row.ms.at(a)) : status);
    }
    line += fmt::format(" {:>11} {:>8.0f}\n", Ratio(row.ratio), row.peak_mb);
    out << line;
  }
  PrintRatioDistribution(summary, algorithms, out);
  out << fmt::format(
      "\n   peak RSS: harness {:.0f} MB, largest child {:.0f} MB; total {:.0f} "
      "s\n",
      PeakRssMb(RUSAGE_SELF), PeakRssMb(RUSAGE_CHILDREN),
      MsSince(bench_start) / 1000.0);
  out.flush();
  return exit_code;
}

}  // namespace flowsched::bench
