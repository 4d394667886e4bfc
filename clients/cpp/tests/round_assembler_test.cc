// RoundAssembler on synthetic placement records: complete rounds only,
// solver and graph epoch fencing, duplicates, held offsets, ledger
// confirmation and stale reports.

#include "clients/cpp/round_assembler.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/placement_subscriber.h"
#include "gtest/gtest.h"

namespace flowsched::client {
namespace {

v1::PlacementRecord Decision(uint64_t round, uint64_t worker, uint64_t task,
                             uint64_t graph_epoch = 1) {
  v1::PlacementRecord r;
  auto* d = r.mutable_decision();
  d->set_round_id(round);
  d->set_epoch(worker);
  d->set_graph_epoch(graph_epoch);
  d->set_job_id(1);
  d->set_task_id(task);
  d->set_machine_id(7);
  d->set_action(v1::ACTION_PLACE);
  d->set_idempotency_key(absl::StrCat("k", round, "/", worker, "/", task));
  return r;
}

v1::PlacementRecord Marker(uint64_t round, uint64_t worker, uint32_t partition,
                           uint32_t in_partition, uint32_t total,
                           uint64_t addressed = 0, uint64_t graph_epoch = 1) {
  v1::PlacementRecord r;
  auto* m = r.mutable_round_complete();
  m->set_round_id(round);
  m->set_epoch(worker);
  m->set_graph_epoch(graph_epoch);
  m->set_partition(partition);
  m->set_partition_decisions(in_partition);
  m->set_total_decisions(total);
  m->set_partition_count(2);
  m->set_solver_epoch(addressed);
  return r;
}

v1::PlacementRecord Resync(uint64_t epoch) {
  v1::PlacementRecord r;
  r.mutable_resync_request()->set_epoch(epoch);
  return r;
}

TEST(RoundAssemblerTest, DeliversOnlyWhenEveryPartitionsMarkerArrived) {
  RoundAssembler a(2);
  auto d1 = Decision(1, 5, 1), d2 = Decision(1, 5, 2), d3 = Decision(1, 5, 3);
  auto m0 = Marker(1, 5, 0, 2, 3, 5), m1 = Marker(1, 5, 1, 1, 3, 5);
  a.Add(0, 10, &d1);
  a.Add(0, 11, &d2);
  a.Add(0, 12, &m0);
  a.Add(1, 20, &d3);
  EXPECT_FALSE(a.NextRound().has_value());
  EXPECT_EQ(a.HeldOffsets(), (std::map<int32_t, int64_t>{{0, 10}, {1, 20}}));
  a.Add(1, 21, &m1);
  std::optional<Round> round = a.NextRound();
  ASSERT_TRUE(round.has_value());
  EXPECT_EQ(round->round_id, 1u);
  EXPECT_EQ(round->solver_epoch, 5u);
  ASSERT_EQ(round->decisions.size(), 3u);
  EXPECT_EQ(round->decisions[2].task_id(), 3u);
  // Not committed: offered again.
  ASSERT_TRUE(a.NextRound().has_value());
  a.Commit(*round);
  EXPECT_FALSE(a.NextRound().has_value());
  EXPECT_TRUE(a.HeldOffsets().empty());
  EXPECT_EQ(a.stats().rounds_delivered, 1u);
  EXPECT_EQ(a.stats().decisions_delivered, 3u);
  // The same round read again (a restart before the commit) is a repeat.
  a.Add(0, 10, &d1);
  a.Add(0, 12, &m0);
  a.Add(1, 21, &m1);
  EXPECT_FALSE(a.NextRound().has_value());
}

TEST(RoundAssemblerTest, DropsAnswerWhoseCountsDoNotMatch) {
  RoundAssembler a(2);
  auto d1 = Decision(1, 5, 1);
  auto m0 = Marker(1, 5, 0, 2, 2), m1 = Marker(1, 5, 1, 0, 2);
  a.Add(0, 0, &d1);
  a.Add(0, 1, &d1);  // a repeated record counts once
  a.Add(0, 2, &m0);
  a.Add(1, 0, &m1);
  EXPECT_FALSE(a.NextRound().has_value());
  EXPECT_EQ(a.stats().dropped_answers, 1u);
  EXPECT_EQ(a.stats().duplicate_records, 1u);
}

TEST(RoundAssemblerTest, ResyncMakesTheAskingWorkerCurrent) {
  RoundAssembler a(2);
  auto old_d = Decision(2, 5, 1), new_d = Decision(2, 6, 1);
  a.Add(0, 0, &old_d);
  auto resync = Resync(6);
  a.Add(0, 1, &resync);
  EXPECT_EQ(a.current_solver_epoch(), 6u);
  EXPECT_EQ(a.stats().dropped_answers, 1u);
  // The old worker's answer completing later is fenced at delivery.
  auto o0 = Marker(3, 5, 0, 0, 0), o1 = Marker(3, 5, 1, 0, 0);
  a.Add(0, 2, &o0);
  a.Add(1, 0, &o1);
  EXPECT_FALSE(a.NextRound().has_value());
  auto n0 = Marker(2, 6, 0, 1, 1, 6), n1 = Marker(2, 6, 1, 0, 1, 6);
  a.Add(0, 3, &new_d);
  a.Add(0, 4, &n0);
  a.Add(1, 1, &n1);
  std::optional<Round> round = a.NextRound();
  ASSERT_TRUE(round.has_value());
  EXPECT_EQ(round->solver_epoch, 6u);
  EXPECT_EQ(round->decisions.size(), 1u);
}

TEST(RoundAssemblerTest, FencesAnswerFromWorkerNotAddressed) {
  RoundAssembler a(2);
  auto m0 = Marker(1, 5, 0, 0, 0, /*addressed=*/4);
  a.Add(0, 0, &m0);
  auto m1 = Marker(1, 5, 1, 0, 0, 4);
  a.Add(1, 0, &m1);
  EXPECT_FALSE(a.NextRound().has_value());
  EXPECT_GE(a.stats().fenced_records, 2u);
}

TEST(RoundAssemblerTest, DropsDeliveredKeysAndOlderGraphEpochs) {
  RoundAssembler a(2);
  auto d = Decision(1, 5, 1, /*graph_epoch=*/3);
  auto m0 = Marker(1, 5, 0, 1, 1, 5, 3), m1 = Marker(1, 5, 1, 0, 1, 5, 3);
  a.Add(0, 0, &d);
  a.Add(0, 1, &m0);
  a.Add(1, 0, &m1);
  auto first = a.NextRound();
  ASSERT_TRUE(first.has_value());
  a.Commit(*first);
  // Round 2 of an older graph epoch (a deposed graph manager): fenced.
  auto z0 = Marker(2, 5, 0, 0, 0, 5, 2), z1 = Marker(2, 5, 1, 0, 0, 5, 2);
  a.Add(0, 2, &z0);
  a.Add(1, 1, &z1);
  EXPECT_FALSE(a.NextRound().has_value());
  // Round 3 repeating round 1's decision key: the key is not delivered again.
  v1::PlacementRecord again = d;
  again.mutable_decision()->set_round_id(3);
  auto d2 = Decision(3, 5, 2, 3);
  auto r0 = Marker(3, 5, 0, 1, 1, 5, 3), r1 = Marker(3, 5, 1, 0, 1, 5, 3);
  a.Add(0, 3, &again);
  a.Add(0, 4, &d2);
  a.Add(0, 5, &r0);
  a.Add(1, 2, &r1);
  auto third = a.NextRound();
  ASSERT_TRUE(third.has_value());
  ASSERT_EQ(third->decisions.size(), 1u);
  EXPECT_EQ(third->decisions[0].task_id(), 2u);
}

TEST(RoundAssemblerTest, IgnoresUndecodableAndMalformedRecords) {
  RoundAssembler a(2);
  a.Add(0, 0, nullptr);
  auto wrong = Marker(1, 5, 1, 0, 0);  // names partition 1, read on 0
  a.Add(0, 1, &wrong);
  EXPECT_EQ(a.stats().ignored_records, 2u);
  EXPECT_FALSE(a.NextRound().has_value());
}

v1::LedgerRecord Applied(uint64_t seq, uint64_t round, uint64_t graph_epoch,
                         const v1::PlacementRecord& applied,
                         const v1::PlacementRecord& stale) {
  v1::LedgerRecord record;
  record.set_seq(seq);
  record.set_epoch(graph_epoch);
  auto* r = record.add_steps()->mutable_round();
  r->set_round_id(round);
  r->set_graph_epoch(graph_epoch);
  auto* a = r->add_decisions();
  *a->mutable_decision() = applied.decision();
  a->set_applied(true);
  auto* s = r->add_decisions();
  *s->mutable_decision() = stale.decision();
  s->set_stale_reason("machine full");
  return record;
}

TEST(RoundAssemblerTest, LedgerModeDeliversOnlyWhatTheGraphManagerApplied) {
  RoundAssembler a(2, /*confirm_with_ledger=*/true);
  auto d1 = Decision(1, 5, 1), d2 = Decision(1, 5, 2);
  auto m0 = Marker(1, 5, 0, 1, 2, 5), m1 = Marker(1, 5, 1, 1, 2, 5);
  a.Add(0, 0, &d1);
  a.Add(1, 0, &d2);
  a.Add(0, 1, &m0);
  a.Add(1, 1, &m1);
  EXPECT_FALSE(a.NextRound().has_value());  // complete, not yet applied
  EXPECT_EQ(a.HeldOffsets(), (std::map<int32_t, int64_t>{{0, 0}, {1, 0}}));
  a.AddLedger(Applied(1, 1, 1, d1, d2));
  std::optional<Round> round = a.NextRound();
  ASSERT_TRUE(round.has_value());
  EXPECT_TRUE(round->confirmed_by_ledger);
  ASSERT_EQ(round->decisions.size(), 1u);
  EXPECT_EQ(round->decisions[0].task_id(), 1u);
  ASSERT_EQ(round->stale.size(), 1u);
  EXPECT_EQ(round->stale[0].first.task_id(), 2u);
  EXPECT_EQ(round->stale[0].second, "machine full");
  a.Commit(*round);
  EXPECT_EQ(a.stats().stale_decisions, 1u);
  EXPECT_TRUE(a.HeldOffsets().empty());
}

TEST(RoundAssemblerTest, LedgerModeDropsAnswerTheLedgerDoesNotName) {
  RoundAssembler a(2, /*confirm_with_ledger=*/true);
  auto d1 = Decision(1, 5, 1), other = Decision(1, 6, 1);
  auto m0 = Marker(1, 5, 0, 1, 1), m1 = Marker(1, 5, 1, 0, 1);
  a.Add(0, 0, &d1);
  a.Add(0, 1, &m0);
  a.Add(1, 0, &m1);
  // The graph manager applied worker 6's answer to round 1, not worker 5's.
  a.AddLedger(Applied(1, 1, 1, other, other));
  EXPECT_FALSE(a.NextRound().has_value());
  EXPECT_EQ(a.stats().dropped_answers, 1u);
}

// Stale reports (placements-only mode with ReportStale).

// Feeds round `round` of worker 5: `decisions` on partition 0, none on 1.
void FeedRound(RoundAssembler& a, uint64_t round,
               const std::vector<v1::PlacementRecord>& decisions) {
  const auto n = static_cast<uint32_t>(decisions.size());
  const auto base = static_cast<int64_t>(round * 10);
  for (size_t i = 0; i < decisions.size(); ++i) {
    a.Add(0, base + static_cast<int64_t>(i), &decisions[i]);
  }
  auto m0 = Marker(round, 5, 0, n, n, 5), m1 = Marker(round, 5, 1, 0, n, 5);
  a.Add(0, base + n, &m0);
  a.Add(1, base, &m1);
}

// Delivers (and commits) the next round, which must be `round`.
void DeliverRound(RoundAssembler& a, uint64_t round) {
  std::optional<Round> r = a.NextRound();
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->round_id, round);
  EXPECT_TRUE(r->stale.empty());
  EXPECT_FALSE(r->confirmed_by_ledger);
  a.Commit(*r);
}

v1::LedgerRecord AllApplied(uint64_t seq, uint64_t round,
                            const v1::PlacementRecord& d) {
  v1::LedgerRecord record = Applied(seq, round, 1, d, d);
  record.mutable_steps(0)->mutable_round()->mutable_decisions(1)->set_applied(
      true);
  record.mutable_steps(0)
      ->mutable_round()
      ->mutable_decisions(1)
      ->clear_stale_reason();
  return record;
}

v1::LedgerRecord Claim(uint64_t seq, uint64_t epoch) {
  v1::LedgerRecord record;
  record.set_seq(seq);
  record.set_epoch(epoch);
  record.mutable_claim()->set_epoch(epoch);
  return record;
}

TEST(StaleReportTest, ReportsARejectedDecisionAfterItsRoundWasDelivered) {
  RoundAssembler a(2);
  ASSERT_TRUE(a.ReportStale(0).ok());
  auto d1 = Decision(1, 5, 1), d2 = Decision(1, 5, 2);
  a.AddLedger(Claim(1, 1), 0);
  FeedRound(a, 1, {d1, d2});
  // Delivered at once, without waiting for the ledger.
  DeliverRound(a, 1);
  EXPECT_FALSE(a.NextStaleReport().has_value());
  EXPECT_EQ(a.LedgerCommitOffset(), 1);
  a.AddLedger(Applied(2, 1, 1, d1, d2), 1);
  std::optional<StaleReport> report = a.NextStaleReport();
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->round_id, 1u);
  EXPECT_EQ(report->graph_epoch, 1u);
  ASSERT_EQ(report->stale.size(), 1u);
  EXPECT_EQ(report->stale[0].first.task_id(), 2u);
  EXPECT_EQ(report->stale[0].first.idempotency_key(),
            d2.decision().idempotency_key());
  EXPECT_EQ(report->stale[0].second, "machine full");
  // Not committed: offered again, and the ledger offset held below it.
  EXPECT_TRUE(a.NextStaleReport().has_value());
  EXPECT_EQ(a.LedgerCommitOffset(), 1);
  a.CommitStaleReport();
  EXPECT_FALSE(a.NextStaleReport().has_value());
  EXPECT_EQ(a.LedgerCommitOffset(), 2);
  EXPECT_EQ(a.stats().stale_reports, 1u);
  EXPECT_EQ(a.stats().stale_decisions, 1u);
  EXPECT_EQ(a.stats().decisions_delivered, 2u);
}

TEST(StaleReportTest, NoReportWhenNothingIsStale) {
  RoundAssembler a(2);
  ASSERT_TRUE(a.ReportStale(0).ok());
  auto d1 = Decision(1, 5, 1);
  FeedRound(a, 1, {d1});
  DeliverRound(a, 1);
  a.AddLedger(AllApplied(1, 1, d1), 0);
  auto d2 = Decision(2, 5, 1);
  FeedRound(a, 2, {d2});
  DeliverRound(a, 2);
  a.AddLedger(AllApplied(2, 2, d2), 1);
  EXPECT_FALSE(a.NextStaleReport().has_value());
  EXPECT_EQ(a.LedgerCommitOffset(), 2);
  EXPECT_EQ(a.stats().stale_reports, 0u);
}

TEST(StaleReportTest, RoundAppliedBeforeTheAnswerCompletesWaitsForDelivery) {
  RoundAssembler a(2);
  ASSERT_TRUE(a.ReportStale(0).ok());
  auto d1 = Decision(3, 5, 1), d2 = Decision(3, 5, 2);
  // The ledger is read ahead of the placements (another partition).
  a.AddLedger(Applied(1, 3, 1, d1, d2), 0);
  EXPECT_FALSE(a.NextStaleReport().has_value());
  EXPECT_EQ(a.LedgerCommitOffset(), 0);  // held for the undelivered round
  a.Add(0, 30, &d1);
  a.Add(0, 31, &d2);
  EXPECT_FALSE(a.NextStaleReport().has_value());
  auto m0 = Marker(3, 5, 0, 2, 2, 5), m1 = Marker(3, 5, 1, 0, 2, 5);
  a.Add(0, 32, &m0);
  a.Add(1, 30, &m1);
  std::optional<Round> round = a.NextRound();
  ASSERT_TRUE(round.has_value());
  ASSERT_EQ(round->decisions.size(), 2u);         // both: delivered at once
  EXPECT_FALSE(a.NextStaleReport().has_value());  // not before the commit
  a.Commit(*round);
  std::optional<StaleReport> report = a.NextStaleReport();
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->round_id, 3u);
  ASSERT_EQ(report->stale.size(), 1u);
  EXPECT_EQ(report->stale[0].first.task_id(), 2u);
}

TEST(StaleReportTest, FencedLedgerRecordsReportNothing) {
  RoundAssembler a(2);
  ASSERT_TRUE(a.ReportStale(0).ok());
  a.AddLedger(Claim(1, 1), 0);
  a.AddLedger(Claim(2, 2), 1);
  auto d1 = Decision(1, 5, 1), d2 = Decision(1, 5, 2);
  FeedRound(a, 1, {d1, d2});
  DeliverRound(a, 1);
  // A zombie of epoch 1 writing after epoch 2 claimed seq 2.
  a.AddLedger(Applied(3, 1, 1, d1, d2), 2);
  EXPECT_FALSE(a.NextStaleReport().has_value());
  // Retroactively: epoch 2's record of round 2, kept while the round is not
  // delivered, then superseded by epoch 3's claim at its seq.
  auto d3 = Decision(2, 5, 3), d4 = Decision(2, 5, 4);
  a.AddLedger(Applied(4, 2, 2, d3, d4), 3);
  EXPECT_EQ(a.LedgerCommitOffset(), 3);
  a.AddLedger(Claim(4, 3), 4);
  EXPECT_EQ(a.LedgerCommitOffset(), 5);
  auto r2d3 = Decision(2, 5, 3, 2), r2d4 = Decision(2, 5, 4, 2);
  a.Add(0, 20, &r2d3);
  a.Add(0, 21, &r2d4);
  auto m0 = Marker(2, 5, 0, 2, 2, 5, 2), m1 = Marker(2, 5, 1, 0, 2, 5, 2);
  a.Add(0, 22, &m0);
  a.Add(1, 20, &m1);
  DeliverRound(a, 2);
  EXPECT_FALSE(a.NextStaleReport().has_value());
  EXPECT_EQ(a.stats().stale_reports, 0u);
}

TEST(StaleReportTest, AcrossARestartFromTheGroupsLedgerOffset) {
  // An earlier subscriber of the group committed ledger offset 5.
  RoundAssembler a(2);
  ASSERT_TRUE(a.ReportStale(5).ok());
  auto d1 = Decision(1, 5, 1), d2 = Decision(1, 5, 2);
  a.AddLedger(Applied(1, 1, 1, d1, d2), 2);  // reported before: below 5
  auto d3 = Decision(3, 5, 1), d4 = Decision(3, 5, 2);
  // Round 3 was delivered by the earlier subscriber, which stopped before
  // reporting it; round 5 was never delivered by the group (fenced).
  a.AddLedger(Applied(2, 3, 1, d3, d4), 6);
  auto d5 = Decision(5, 5, 1), d6 = Decision(5, 5, 2);
  a.AddLedger(Applied(3, 5, 1, d5, d6), 7);
  EXPECT_EQ(a.LedgerCommitOffset(), 6);
  EXPECT_FALSE(a.NextStaleReport().has_value());  // nothing delivered yet
  FeedRound(a, 4, {Decision(4, 5, 1)});
  DeliverRound(a, 4);  // the first round this subscriber delivers
  std::optional<StaleReport> report = a.NextStaleReport();
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->round_id, 3u);  // at least once: maybe acted on
  a.CommitStaleReport();
  EXPECT_FALSE(a.NextStaleReport().has_value());  // 5 still pending
  EXPECT_EQ(a.LedgerCommitOffset(), 7);
  FeedRound(a, 6, {Decision(6, 5, 1)});
  DeliverRound(a, 6);  // round 5 skipped here: not this group's
  EXPECT_FALSE(a.NextStaleReport().has_value());
  EXPECT_EQ(a.LedgerCommitOffset(), 8);
}

TEST(StaleReportTest, RefusedWithLedgerConfirmation) {
  RoundAssembler a(2, /*confirm_with_ledger=*/true);
  absl::Status status = a.ReportStale(0);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("confirm_with_ledger"), std::string::npos);
}

TEST(StaleReportTest, SubscriberRefusesOnStaleWithLedgerConfirmation) {
  SubscriberOptions options;
  options.kafka.brokers = "127.0.0.1:1";  // never contacted
  options.group = "g";
  options.confirm_with_ledger = true;
  options.on_stale = [](const StaleReport&) { return absl::OkStatus(); };
  auto sub = PlacementSubscriber::Create(
      options, [](const Round&) { return absl::OkStatus(); });
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(sub.status().message().find("on_stale"), std::string::npos);
}

}  // namespace
}  // namespace flowsched::client
