#include "tools/sim/change_pipeline.h"

#include <utility>

namespace flowsched::sim {

ChangePipeline::ChangePipeline(flow::FlowNetwork& network,
                               core::RoundSolver& round_solver, size_t chunk)
    : network_(network), round_solver_(round_solver) {
  // Changes recorded before (a policy switch) are still in the network's
  // log, ahead of this round's: they go first, in the first chunk or in
  // the rest Finish applies.
  network_.set_change_sink(
      chunk, [this](std::vector<flow::GraphChange> c) { Hand(std::move(c)); });
}

ChangePipeline::~ChangePipeline() {
  if (finished_) return;
  // The round failed before Finish: stop the thread without applying what
  // it has not reached (the caller gives up on the round and the replica).
  network_.set_change_sink(1, nullptr);
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      chunks_.clear();
      closed_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
}

absl::Status ChangePipeline::Finish() {
  finished_ = true;
  network_.set_change_sink(1, nullptr);
  std::vector<flow::GraphChange> rest = network_.TakeChanges();
  if (thread_.joinable()) {
    Hand(std::move(rest));
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    ready_.notify_one();
    thread_.join();
  } else if (status_.ok()) {
    status_ = ApplyAll(rest);
  }
  return status_;
}

void ChangePipeline::Hand(std::vector<flow::GraphChange> changes) {
  if (changes.empty()) return;
  if (!thread_.joinable()) thread_ = std::thread([this] { ApplyChunks(); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    chunks_.push_back(std::move(changes));
  }
  ready_.notify_one();
}

void ChangePipeline::ApplyChunks() {
  for (;;) {
    std::vector<flow::GraphChange> chunk;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return closed_ || !chunks_.empty(); });
      if (chunks_.empty()) return;  // closed and drained
      chunk = std::move(chunks_.front());
      chunks_.pop_front();
    }
    if (status_.ok()) status_ = ApplyAll(chunk);
  }
}

absl::Status ChangePipeline::ApplyAll(
    const std::vector<flow::GraphChange>& changes) {
  for (const flow::GraphChange& change : changes) {
    if (absl::Status s = round_solver_.Apply(change); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace flowsched::sim
