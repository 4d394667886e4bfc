#pragma once

// Applies a policy network's recorded changes to the solver worker's side
// (core::RoundSolver) on a second thread while the policy is still
// recording them: the simulator runs both sides in one process, and a
// round that rebuilds much of the network (the time-0 population: millions
// of arcs) would otherwise sync and then mirror one after the other. The
// thread starts only once a round has recorded a full chunk, so small
// rounds apply inline as before. Changes reach the RoundSolver in the
// order they were recorded.
//
// Usage, once per round:
//   ChangePipeline pipe(network, round_solver, chunk);   // installs the sink
//   ... policy sync and refresh (may hand chunks to the thread) ...
//   absl::Status applied = pipe.Finish();  // applies the rest, joins
//
// Thread-safety: the RoundSolver must not be used by anyone else until
// Finish returns; the network only by the thread that records.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "services/core/round_solver.h"
#include "services/flow/flow_network.h"

namespace flowsched::sim {

class ChangePipeline {
 public:
  // Hands `network`'s recorded changes (those before this call first) to
  // `round_solver`, a chunk at a time once `chunk` are recorded.
  ChangePipeline(flow::FlowNetwork& network, core::RoundSolver& round_solver,
                 size_t chunk);
  ChangePipeline(const ChangePipeline&) = delete;
  ChangePipeline& operator=(const ChangePipeline&) = delete;
  // Without Finish (a round given up): removes the sink and stops the
  // thread after the chunk it is applying; the replica then lacks some
  // recorded changes and must be rebuilt (RoundSolver::Reset).
  ~ChangePipeline();

  // Removes the sink, applies the changes recorded since the last chunk,
  // and waits for the thread. The first failed Apply's status (later
  // changes are not applied), else OK.
  absl::Status Finish();

 private:
  void Hand(std::vector<flow::GraphChange> changes);
  void ApplyChunks();
  absl::Status ApplyAll(const std::vector<flow::GraphChange>& changes);

  flow::FlowNetwork& network_;
  core::RoundSolver& round_solver_;
  bool finished_ = false;
  std::thread thread_;  // started at the first chunk
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::vector<flow::GraphChange>> chunks_;  // guarded by mu_
  bool closed_ = false;                                // guarded by mu_
  absl::Status status_;  // written by whoever applies; read after the join
};

}  // namespace flowsched::sim
