#pragma once

// The graph manager's rounds as one state: when the next round is due
// (core::CutPolicy), what it must carry (a snapshot or a delta) and when it
// may be published (backoff after a failed publication), and the round in
// flight (InFlightRound). Every transition is a method here; GraphManager
// calls them where the events happen, and StoreIn() maps the durable part
// to the stored GraphManagerMeta.
//
// States: idle (no round in flight; a cut is due when the policy says so
// and no backoff runs) -> Cut() -> in flight -> OnApplied() or Abandon()
// -> idle. A round stays in flight from its cut (stored before any part is
// published) until its answer is applied or it is abandoned, also when
// publishing it failed: parts may have reached the solver.
//
// Thread-safety: none (GraphManager's loop owns it).

#include <cstdint>
#include <map>
#include <optional>

#include "flowsched/v1/state.pb.h"
#include "services/common/strong_id.h"
#include "services/core/cut_policy.h"

namespace flowsched::graph_manager {

struct InFlightRound {
  RoundId id;
  // The graph manager epoch that cut it (an earlier instance's after a
  // restart).
  GraphEpoch epoch;
  // Steady clock (SteadyMicros): when its cut began (the round's duration)
  // and when it was published or, after a restart, restored (its timeout
  // and round trip count from there).
  int64_t started_steady_us = 0;
  int64_t sent_steady_us = 0;
  // Placements partition -> offset of the first record read there since
  // the cut. The parts collected so far live only in memory, so the stored
  // offset must not pass them until the round is applied (the full offsets
  // commit in the same batch) or abandoned: a restart reads them again and
  // still completes the round, instead of waiting for the round timeout.
  // Empty after a restart.
  std::map<int32_t, int64_t> held_placement_offsets;
};

class RoundTracker {
 public:
  explicit RoundTracker(core::CutOptions cut) : cut_(cut) {}

  // The durable part from and to the stored meta: the cut policy's state
  // (events_since_cut, cut_pending) and the round in flight
  // (in_flight_round_id and in_flight_graph_epoch, both 0 when none).
  // Fields unrelated to rounds are left alone.
  void Restore(const v1::GraphManagerMeta& meta);
  void StoreIn(v1::GraphManagerMeta& meta) const;

  [[nodiscard]] const core::CutPolicy& cut_policy() const { return cut_; }
  // The round in flight; null when none is.
  [[nodiscard]] const InFlightRound* in_flight() const {
    return in_flight_ ? &*in_flight_ : nullptr;
  }
  // The next round must be a snapshot (true after a start).
  [[nodiscard]] bool need_snapshot() const { return need_snapshot_; }

  // One event was applied (`tick`: a Tick event); true when it made a cut
  // due (core::CutPolicy::OnEvent).
  bool OnEvent(bool tick) { return cut_.OnEvent(tick); }
  // Events must not be consumed now (deterministic modes: a cut is due or
  // a round in flight).
  [[nodiscard]] bool EventsPaused() const {
    return cut_.ShouldPauseEvents(in_flight_.has_value());
  }
  // A round should be cut now: the policy says one is due
  // (`changes_pending`: network changes wait for a round) and no backoff
  // after a failed publication runs.
  [[nodiscard]] bool CutDue(bool changes_pending, int64_t now_steady_us) const;

  // Round `id` was cut by `epoch` (the cut began at `started_steady_us`):
  // it is in flight from now on, as a snapshot if need_snapshot(). Replaces
  // any round in flight: a ledger replay sees no timeouts, only cuts.
  void Cut(RoundId id, GraphEpoch epoch, int64_t started_steady_us);
  // Publishing the round in flight ended (`ok`: every part produced and
  // flushed). OK: the next round is a delta, and the backoff starts again
  // at 100 ms. Failed: the next round is a snapshot, and none is published
  // before the backoff passed (100 ms, doubling up to 5 s). Either way the
  // round stays in flight, sent now.
  void OnPublished(bool ok, int64_t now_steady_us);
  // The backoff in effect after the last failed publication.
  [[nodiscard]] int publish_backoff_ms() const { return publish_backoff_ms_; }
  // A placements record was read at `offset` of `partition` while the
  // round is in flight: the first one per partition is held. No-op when
  // no round is in flight.
  void HoldPlacementOffset(int32_t partition, int64_t offset);
  // The round in flight waited `timeout_ms` or more since it was sent.
  [[nodiscard]] bool TimedOut(int64_t now_steady_us, int timeout_ms) const;

  // The round in flight was applied (`changed_state`: a decision applied);
  // it is no longer in flight and its held offsets are released. A ledger
  // replay may apply a round the store did not have in flight; then only
  // the policy hears of it.
  void OnApplied(bool changed_state);
  // The round in flight is abandoned: it timed out, a resync request
  // dropped it, or an earlier instance cut it and the ledger shows no
  // answer. Its held offsets are released, the next round is a snapshot,
  // and in deterministic modes it is cut again at once. Without a round in
  // flight, only the snapshot.
  void Abandon();
  // The next round must be a snapshot (a policy switch).
  void RequireSnapshot() { need_snapshot_ = true; }
  // After a start: the round restored in flight, if any, is waited for
  // from `now_steady_us` (its timeout, duration and round trip), and the
  // syncs so far (a catch-up's) belong to no round.
  void OnStart(int64_t now_steady_us);

  // Time the policy spent syncing the network since the last published
  // round (the round's sync phase). Take returns it and starts again.
  void AddSyncMicros(int64_t micros) { sync_us_since_cut_ += micros; }
  int64_t TakeSyncMicros();

 private:
  core::CutPolicy cut_;
  std::optional<InFlightRound> in_flight_;
  bool need_snapshot_ = true;
  // After a failed publication, no new one before this time.
  int64_t next_publish_steady_us_ = 0;
  int publish_backoff_ms_ = 100;
  int64_t sync_us_since_cut_ = 0;
};

}  // namespace flowsched::graph_manager
