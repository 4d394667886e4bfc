#pragma once

// When the graph manager cuts a solver round. Three modes:
// - clock (no option set): a round is due whenever the network changed
//   and no round is in flight; events are always consumed;
// - every N events (`every_events` > 0) and/or at ticks (`at_ticks`): a
//   round is due after every N events applied and/or at each Tick event,
//   and again at once after a round whose decisions changed the state or
//   a round that was abandoned (timed out, dropped by a resync request);
//   events are not consumed while a round is due or in flight. Then the
//   state after any prefix of the log is the same in every run, crashed or
//   not ("deterministic" mode).
//
// The policy keeps only the cut's own durable state (events since the
// last cut, cut pending; the graph manager stores both in its meta); the
// caller says whether a round is in flight and whether the network changed.
// Replaying the same calls gives the same cuts, so a ledger replay restores
// that state by feeding it the same events and rounds.
//
// Thread-safety: none. Domain only (no Kafka, no RocksDB).

#include <cstdint>

namespace flowsched::core {

struct CutOptions {
  // > 0: a cut after every this many events applied.
  uint64_t every_events = 0;
  // A cut at each Tick event.
  bool at_ticks = false;
};

class CutPolicy {
 public:
  explicit CutPolicy(CutOptions options) : options_(options) {}

  // Rounds follow the log (either option set), not the clock.
  [[nodiscard]] bool deterministic() const {
    return options_.every_events > 0 || options_.at_ticks;
  }

  // The durable state, as stored (a restart resumes counting).
  void Restore(uint64_t events_since_cut, bool cut_pending);
  [[nodiscard]] uint64_t events_since_cut() const { return events_since_cut_; }
  [[nodiscard]] bool cut_pending() const { return cut_pending_; }

  // One event was applied (`tick`: it was a Tick). Returns true when it
  // made a cut due (then the count starts again). Clock mode: false, and
  // nothing is counted.
  bool OnEvent(bool tick);
  // The round in flight was applied. Deterministic modes: one that changed
  // the state (`changed_state`) is followed by another at once, at the
  // same place in the log; otherwise events flow again.
  void OnRoundApplied(bool changed_state);
  // The round in flight was abandoned (timed out, dropped by a resync
  // request, or cut by an earlier instance and not applied). Deterministic
  // modes: the same cut is made again at once (nothing was consumed since),
  // so rounds keep their places in the log.
  void OnRoundAbandoned();
  // A round was cut: no cut is pending any more.
  void OnCut() { cut_pending_ = false; }

  // Whether a round should be cut now. `network_changed`: the network
  // changed since the last round, or the next round must be a snapshot.
  [[nodiscard]] bool RoundDue(bool network_changed, bool in_flight) const;
  // Whether events must not be consumed now (deterministic modes, while a
  // cut is due or a round is in flight).
  [[nodiscard]] bool ShouldPauseEvents(bool in_flight) const {
    return deterministic() && (cut_pending_ || in_flight);
  }

 private:
  CutOptions options_;
  uint64_t events_since_cut_ = 0;
  bool cut_pending_ = false;
};

}  // namespace flowsched::core
