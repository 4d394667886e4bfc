#include "tools/flowsched/summary.h"

#include "fmt/format.h"
#include "fmt/ostream.h"

namespace flowsched::tools {
namespace {

std::string TimingLine(const v1::Timings& t) {
  if (t.count() == 0) return "none yet";
  return fmt::format(
      "p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms, mean {:.2f} ms", t.p50_ms(),
      t.p99_ms(), t.max_ms(), t.mean_ms());
}

}  // namespace

void PrintSummary(const v1::GraphManagerStatus& s, std::ostream& out) {
  if (s.role() == "standby") {
    // --ha: another graph manager holds the leader lease.
    fmt::print(out,
               "graph manager pid {} is standby (waiting for the leader "
               "lease; the active one reports in its own data directory)\n",
               s.pid());
    return;
  }
  fmt::print(out, "flowsched summary (graph manager epoch {}, policy {})\n",
             s.epoch(), s.policy());
  fmt::print(out, "  machines          {:>10}   ({} task slots)\n",
             s.machines(), s.total_slots());
  fmt::print(out, "  tasks submitted   {:>10}\n", s.tasks_submitted());
  fmt::print(out, "  tasks in cluster  {:>10}   (jobs: {})\n", s.tasks(),
             s.jobs());
  fmt::print(out, "    placed          {:>10}\n", s.tasks_running());
  fmt::print(out, "    waiting         {:>10}\n", s.tasks_waiting());
  fmt::print(out,
             "  events applied    {:>10}   (rejected to dead letters: {})\n",
             s.events_applied(), s.events_rejected());
  fmt::print(out,
             "  solver rounds     {:>10}   (published this run: {}, "
             "snapshots: {}, timed out: {})\n",
             s.rounds_completed(), s.rounds_published(),
             s.snapshots_published(), s.rounds_timed_out());
  fmt::print(out, "    solve time      {}\n", TimingLine(s.solve()));
  fmt::print(out, "    round trip      {}\n", TimingLine(s.round_trip()));
  fmt::print(out, "  decisions applied {:>10}   (stale, rejected: {})\n",
             s.decisions_applied(), s.decisions_stale());
  fmt::print(out,
             "  solver epoch      {:>10}   (results fenced: {}, duplicates: "
             "{})\n",
             s.solver_epoch(), s.results_fenced(), s.results_duplicate());
  fmt::print(out, "  flow network      {:>10} nodes, {} arcs\n",
             s.network_nodes(), s.network_arcs());
}

}  // namespace flowsched::tools
