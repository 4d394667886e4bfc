#include "services/graph_manager/round_tracker.h"

#include <algorithm>

namespace flowsched::graph_manager {

void RoundTracker::Restore(const v1::GraphManagerMeta& meta) {
  cut_.Restore(meta.events_since_cut(), meta.cut_pending());
  in_flight_.reset();
  if (meta.in_flight_round_id() != 0) {
    in_flight_ =
        InFlightRound{.id = RoundId(meta.in_flight_round_id()),
                      .epoch = GraphEpoch(meta.in_flight_graph_epoch())};
  }
}

void RoundTracker::StoreIn(v1::GraphManagerMeta& meta) const {
  meta.set_events_since_cut(cut_.events_since_cut());
  meta.set_cut_pending(cut_.cut_pending());
  meta.set_in_flight_round_id(in_flight_ ? in_flight_->id.value() : 0);
  meta.set_in_flight_graph_epoch(in_flight_ ? in_flight_->epoch.value() : 0);
}

bool RoundTracker::CutDue(bool changes_pending, int64_t now_steady_us) const {
  return cut_.RoundDue(need_snapshot_ || changes_pending,
                       in_flight_.has_value()) &&
         now_steady_us >= next_publish_steady_us_;
}

void RoundTracker::Cut(RoundId id, GraphEpoch epoch,
                       int64_t started_steady_us) {
  in_flight_ = InFlightRound{.id = id,
                             .epoch = epoch,
                             .started_steady_us = started_steady_us,
                             .sent_steady_us = started_steady_us};
  cut_.OnCut();
}

void RoundTracker::OnPublished(bool ok, int64_t now_steady_us) {
  if (in_flight_) in_flight_->sent_steady_us = now_steady_us;
  if (ok) {
    need_snapshot_ = false;
    publish_backoff_ms_ = 100;
    return;
  }
  // The solver may have some parts or none; a snapshot is safe either way.
  need_snapshot_ = true;
  next_publish_steady_us_ = now_steady_us + int64_t{publish_backoff_ms_} * 1000;
  publish_backoff_ms_ = std::min(publish_backoff_ms_ * 2, 5000);
}

void RoundTracker::HoldPlacementOffset(int32_t partition, int64_t offset) {
  if (in_flight_)
    in_flight_->held_placement_offsets.try_emplace(partition, offset);
}

bool RoundTracker::TimedOut(int64_t now_steady_us, int timeout_ms) const {
  return in_flight_ && now_steady_us - in_flight_->sent_steady_us >=
                           int64_t{timeout_ms} * 1000;
}

void RoundTracker::OnApplied(bool changed_state) {
  in_flight_.reset();
  cut_.OnRoundApplied(changed_state);
}

void RoundTracker::Abandon() {
  if (in_flight_) {
    in_flight_.reset();
    cut_.OnRoundAbandoned();
  }
  need_snapshot_ = true;
}

void RoundTracker::OnStart(int64_t now_steady_us) {
  sync_us_since_cut_ = 0;
  if (!in_flight_) return;
  in_flight_->started_steady_us = now_steady_us;
  in_flight_->sent_steady_us = now_steady_us;
  in_flight_->held_placement_offsets.clear();
}

int64_t RoundTracker::TakeSyncMicros() {
  const int64_t micros = sync_us_since_cut_;
  sync_us_since_cut_ = 0;
  return micros;
}

}  // namespace flowsched::graph_manager
