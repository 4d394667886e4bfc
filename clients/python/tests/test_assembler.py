"""Unit tests of the consumer contract (RoundAssembler, LedgerRounds, stale
reports) and of the publisher's local validation: synthetic records, no
broker."""

import unittest
from types import SimpleNamespace

from confluent_kafka import KafkaError, KafkaException

from flowsched_client import (InvalidEventError, LedgerRounds, PlacementSubscriber,
                              RoundAssembler, event_key, events_pb2, ledger_pb2,
                              placements_pb2, validate_event)
from flowsched_client.publisher import EventPublisher

P = 2  # partitions
W, W2 = 1001, 2002  # worker epochs
G = 7  # graph epoch


def decision(round_id, task, machine, worker=W, graph=G):
    r = placements_pb2.PlacementRecord()
    d = r.decision
    d.round_id, d.epoch, d.graph_epoch = round_id, worker, graph
    d.task_id, d.machine_id, d.job_id = task, machine, 1
    d.action = placements_pb2.ACTION_PLACE
    d.idempotency_key = f"r{round_id}/t{task}"
    return r


def marker(round_id, partition, count, total, worker=W, graph=G, addressed=None):
    r = placements_pb2.PlacementRecord()
    m = r.round_complete
    m.round_id, m.epoch, m.graph_epoch = round_id, worker, graph
    m.solver_epoch = worker if addressed is None else addressed
    m.partition, m.partition_count = partition, P
    m.partition_decisions, m.total_decisions = count, total
    return r


def resync(worker):
    r = placements_pb2.PlacementRecord()
    r.resync_request.epoch = worker
    return r


class Feed:
    """Appends records to partitions with increasing offsets."""

    def __init__(self, assembler):
        self.a = assembler
        self.next = {p: 0 for p in range(P)}

    def __call__(self, partition, record):
        offset = self.next[partition]
        self.next[partition] += 1
        self.a.add(partition, offset, record)
        return offset


def round_records(round_id, worker=W, graph=G, addressed=None):
    """Round with tasks 1 (machine 2 -> p0), 2 (machine 3 -> p1), 3 (machine 4 -> p0)."""
    return [(0, decision(round_id, 1, 2, worker, graph)),
            (1, decision(round_id, 2, 3, worker, graph)),
            (0, decision(round_id, 3, 4, worker, graph)),
            (0, marker(round_id, 0, 2, 3, worker, graph, addressed)),
            (1, marker(round_id, 1, 1, 3, worker, graph, addressed))]


def deliver_all(a):
    out = []
    while (r := a.next_round()) is not None:
        a.commit(r)
        out.append(r)
    return out


class RoundAssemblerTest(unittest.TestCase):
    def test_complete_round_delivered_once(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        for p, rec in round_records(5)[:-1]:
            feed(p, rec)
        self.assertIsNone(a.next_round(), "partition 1's marker is missing")
        self.assertEqual(a.held_offsets(), {0: 0, 1: 0})
        feed(*round_records(5)[-1])
        rounds = deliver_all(a)
        self.assertEqual(len(rounds), 1)
        self.assertEqual(sorted(d.task_id for d in rounds[0].decisions), [1, 2, 3])
        self.assertEqual(a.held_offsets(), {})
        # The whole answer again (a re-publication, a seek back): nothing.
        for p, rec in round_records(5):
            feed(p, rec)
        self.assertEqual(deliver_all(a), [])
        self.assertEqual(a.stats.duplicate_records, 5)

    def test_duplicate_decision_inside_an_answer_counts_once(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        recs = round_records(5)
        recs.insert(1, recs[0])  # task 1's decision twice in partition 0
        for p, rec in recs:
            feed(p, rec)
        (r,) = deliver_all(a)
        self.assertEqual(len(r.decisions), 3)
        self.assertEqual(a.stats.duplicate_records, 1)

    def test_count_mismatch_drops_the_answer(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        for p, rec in round_records(5)[1:]:  # task 1's decision lost
            feed(p, rec)
        self.assertEqual(deliver_all(a), [])
        self.assertEqual(a.stats.dropped_answers, 1)
        self.assertEqual(a.held_offsets(), {})

    def test_unaddressed_worker_is_fenced(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        for p, rec in round_records(5, worker=W2, addressed=W):
            feed(p, rec)
        self.assertEqual(deliver_all(a), [])
        self.assertGreater(a.stats.fenced_records, 0)
        # The addressed worker's answer of the same round still counts.
        for p, rec in round_records(5):
            feed(p, rec)
        self.assertEqual([r.solver_epoch for r in deliver_all(a)], [W])

    def test_resync_makes_a_worker_current(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        for p, rec in round_records(5):
            feed(p, rec)
        self.assertEqual(len(deliver_all(a)), 1)
        self.assertEqual(a.current_solver_epoch, W)
        # W2 takes over; its first decision (partition 1) is read before its
        # ResyncRequest on partition 0: it must still count.
        feed(1, decision(6, 2, 3, worker=W2))
        feed(0, resync(W2))
        # A late answer of the old worker to round 6 is fenced.
        for p, rec in round_records(6, worker=W):
            feed(p, rec)
        for p, rec in round_records(6, worker=W2):
            if rec.WhichOneof("record") == "decision" and rec.decision.task_id == 2:
                continue  # read above
            feed(p, rec)
        rounds = deliver_all(a)
        self.assertEqual([(r.round_id, r.solver_epoch) for r in rounds], [(6, W2)])
        self.assertEqual(len(rounds[0].decisions), 3)

    def test_older_graph_epoch_after_a_newer_one_is_fenced(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        for p, rec in round_records(5, graph=G + 1):
            feed(p, rec)
        deliver_all(a)
        for p, rec in round_records(6, graph=G):
            feed(p, rec)
        self.assertEqual(deliver_all(a), [])
        self.assertGreater(a.stats.fenced_records, 0)

    def test_round_stays_pending_until_committed(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        for p, rec in round_records(5):
            feed(p, rec)
        first = a.next_round()
        again = a.next_round()  # the callback raised: not committed
        self.assertEqual(first.round_id, again.round_id)
        self.assertEqual(a.held_offsets(), {0: 0, 1: 0})
        a.commit(again)
        self.assertIsNone(a.next_round())

    def test_a_later_round_settles_an_incomplete_older_one(self):
        a = RoundAssembler(P)
        feed = Feed(a)
        for p, rec in round_records(5)[:3]:  # the worker died mid-round
            feed(p, rec)
        for p, rec in round_records(6):
            feed(p, rec)
        self.assertEqual([r.round_id for r in deliver_all(a)], [6])
        self.assertEqual(a.held_offsets(), {})


def ledger_round(seq, epoch, round_id, stale_tasks=(), worker=W, graph=G):
    rec = ledger_pb2.LedgerRecord(seq=seq, epoch=epoch)
    applied = rec.steps.add().round
    applied.round_id, applied.graph_epoch = round_id, graph
    for _, r in round_records(round_id, worker, graph):
        if r.WhichOneof("record") != "decision":
            continue
        d = applied.decisions.add()
        d.decision.CopyFrom(r.decision)
        d.applied = r.decision.task_id not in stale_tasks
        d.stale_reason = "" if d.applied else "task finished"
    return rec


def claim(seq, epoch):
    rec = ledger_pb2.LedgerRecord(seq=seq, epoch=epoch)
    rec.claim.epoch = epoch
    return rec


class LedgerModeTest(unittest.TestCase):
    def test_waits_for_the_ledger_and_separates_stale(self):
        a = RoundAssembler(P, confirm_with_ledger=True)
        feed = Feed(a)
        for p, rec in round_records(5):
            feed(p, rec)
        self.assertIsNone(a.next_round())
        self.assertEqual(a.held_offsets(), {0: 0, 1: 0})
        a.add_ledger(claim(1, G))
        a.add_ledger(ledger_round(2, G, 5, stale_tasks=(3,)))
        (r,) = deliver_all(a)
        self.assertTrue(r.confirmed_by_ledger)
        self.assertEqual(sorted(d.task_id for d in r.decisions), [1, 2])
        self.assertEqual([(d.task_id, why) for d, why in r.stale], [(3, "task finished")])

    def test_claim_fences_a_deposed_epoch(self):
        ledger = LedgerRounds()
        ledger.add(claim(1, G))
        ledger.add(ledger_round(5, G, 5))  # a zombie's record ...
        ledger.add(claim(5, G + 1))  # ... superseded by a claim at its seq
        self.assertIsNone(ledger.find(5, G))
        ledger.add(ledger_round(6, G, 6))  # arrives after the claim
        self.assertIsNone(ledger.find(6, G))
        ledger.add(ledger_round(6, G + 1, 6, graph=G + 1))
        self.assertIsNotNone(ledger.find(6, G + 1))
        ledger.add(ledger_round(6, G + 1, 7, graph=G + 1))  # seq 6 again: dup
        self.assertIsNone(ledger.find(7, G + 1))

    def test_sliced_record_is_assembled(self):
        whole = ledger_round(3, G, 5).SerializeToString()
        ledger = LedgerRounds()
        cut = len(whole) // 2
        for i, part in enumerate((whole[:cut], whole[cut:])):
            ledger.add(ledger_pb2.LedgerRecord(seq=3, epoch=G, part=i, part_count=2,
                                               part_bytes=part))
            self.assertEqual(ledger.find(5, G) is not None, i == 1)


class StaleReportTest(unittest.TestCase):
    """Placements-only mode with report_stale: rounds at once, then reports."""

    def assembler(self, floor=0):
        a = RoundAssembler(P)
        a.report_stale(floor)
        return a, Feed(a)

    def deliver(self, a, feed, round_id):
        for p, rec in round_records(round_id):
            feed(p, rec)
        (r,) = deliver_all(a)
        self.assertEqual(r.round_id, round_id)
        self.assertEqual(len(r.decisions), 3)  # at once, stale ones included
        self.assertFalse(r.confirmed_by_ledger)

    def test_stale_decision_reported_after_its_round_was_delivered(self):
        a, feed = self.assembler()
        a.add_ledger(claim(1, G), 0)
        self.deliver(a, feed, 5)
        self.assertIsNone(a.next_stale_report())
        self.assertEqual(a.ledger_commit_offset(), 1)
        a.add_ledger(ledger_round(2, G, 5, stale_tasks=(3,)), 1)
        report = a.next_stale_report()
        self.assertEqual((report.round_id, report.graph_epoch), (5, G))
        self.assertEqual([(d.task_id, d.idempotency_key, why) for d, why in report.stale],
                         [(3, "r5/t3", "task finished")])
        # Not committed: offered again, and the ledger offset held below it.
        self.assertIs(a.next_stale_report(), report)
        self.assertEqual(a.ledger_commit_offset(), 1)
        a.commit_stale_report()
        self.assertIsNone(a.next_stale_report())
        self.assertEqual(a.ledger_commit_offset(), 2)
        self.assertEqual((a.stats.stale_reports, a.stats.stale_decisions), (1, 1))

    def test_no_report_when_nothing_is_stale(self):
        a, feed = self.assembler()
        self.deliver(a, feed, 5)
        a.add_ledger(ledger_round(1, G, 5), 0)
        self.deliver(a, feed, 6)
        a.add_ledger(ledger_round(2, G, 6), 1)
        self.assertIsNone(a.next_stale_report())
        self.assertEqual(a.ledger_commit_offset(), 2)
        self.assertEqual(a.stats.stale_reports, 0)

    def test_round_applied_before_the_answer_completes_waits_for_delivery(self):
        a, feed = self.assembler()
        a.add_ledger(ledger_round(1, G, 5, stale_tasks=(1, 2)), 0)  # ledger read ahead
        self.assertIsNone(a.next_stale_report())
        self.assertEqual(a.ledger_commit_offset(), 0)  # held for the round
        records = round_records(5)
        for p, rec in records[:-1]:
            feed(p, rec)
        self.assertIsNone(a.next_stale_report())
        feed(*records[-1])
        r = a.next_round()
        self.assertEqual(len(r.decisions), 3)
        self.assertIsNone(a.next_stale_report())  # not before the commit
        a.commit(r)
        report = a.next_stale_report()
        self.assertEqual(sorted(d.task_id for d, _ in report.stale), [1, 2])

    def test_fenced_ledger_records_report_nothing(self):
        a, feed = self.assembler()
        a.add_ledger(claim(1, G), 0)
        a.add_ledger(claim(2, G + 1), 1)
        self.deliver(a, feed, 5)
        # A zombie of epoch G writing after epoch G+1 claimed seq 2.
        a.add_ledger(ledger_round(3, G, 5, stale_tasks=(1,)), 2)
        self.assertIsNone(a.next_stale_report())
        # Retroactively: epoch G+1's record of round 6, kept while the round
        # is not delivered, then superseded by epoch G+2's claim at its seq.
        a.add_ledger(ledger_round(4, G + 1, 6, stale_tasks=(1,), graph=G + 1), 3)
        self.assertEqual(a.ledger_commit_offset(), 3)
        a.add_ledger(claim(4, G + 2), 4)
        self.assertEqual(a.ledger_commit_offset(), 5)
        for p, rec in round_records(6, graph=G + 1):
            feed(p, rec)
        self.assertEqual([r.round_id for r in deliver_all(a)], [6])
        self.assertIsNone(a.next_stale_report())
        self.assertEqual(a.stats.stale_reports, 0)

    def test_across_a_restart_from_the_groups_ledger_offset(self):
        a, feed = self.assembler(floor=5)  # an earlier subscriber committed 5
        a.add_ledger(ledger_round(1, G, 1, stale_tasks=(1,)), 2)  # reported before
        # Round 3 delivered by the earlier subscriber, which stopped before
        # reporting; round 5 never delivered by the group (fenced).
        a.add_ledger(ledger_round(2, G, 3, stale_tasks=(1,)), 6)
        a.add_ledger(ledger_round(3, G, 5, stale_tasks=(1,)), 7)
        self.assertEqual(a.ledger_commit_offset(), 6)
        self.assertIsNone(a.next_stale_report())  # nothing delivered yet
        self.deliver(a, feed, 4)  # the first round this subscriber delivers
        self.assertEqual(a.next_stale_report().round_id, 3)  # at least once
        a.commit_stale_report()
        self.assertIsNone(a.next_stale_report())  # 5 still pending
        self.assertEqual(a.ledger_commit_offset(), 7)
        self.deliver(a, feed, 6)  # round 5 skipped here: not this group's
        self.assertIsNone(a.next_stale_report())
        self.assertEqual(a.ledger_commit_offset(), 8)

    def test_refused_with_ledger_confirmation(self):
        with self.assertRaisesRegex(ValueError, "confirm_with_ledger"):
            RoundAssembler(P, confirm_with_ledger=True).report_stale(0)
        with self.assertRaisesRegex(ValueError, "on_stale"):  # before connecting
            PlacementSubscriber("127.0.0.1:1", group="g", on_round=lambda r: None,
                                confirm_with_ledger=True, on_stale=lambda s: None)


class CommittedOffsetsTest(unittest.TestCase):
    """The group's committed offsets: a coordinator still moving (Kafka 0.9
    answers NOT_COORDINATOR for a while) is asked again; other errors are
    raised, never read as "nothing committed"."""

    class Consumer:
        def __init__(self, replies):
            self.replies, self.calls = list(replies), 0

        def committed(self, wanted, timeout):
            self.calls += 1
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            return reply

    @staticmethod
    def subscriber(consumer):
        sub = PlacementSubscriber.__new__(PlacementSubscriber)
        sub._consumer = consumer
        return sub

    @staticmethod
    def tp(offset, error=None):
        return SimpleNamespace(topic="placements", partition=0, offset=offset,
                               error=None if error is None else KafkaError(error))

    def test_moving_coordinator_is_asked_again(self):
        consumer = self.Consumer([
            [self.tp(-1001, KafkaError.NOT_COORDINATOR)],
            KafkaException(KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)),
            [self.tp(42)]])
        got = self.subscriber(consumer)._fetch_committed(["tp"], timeout=5.0)
        self.assertEqual([tp.offset for tp in got], [42])
        self.assertEqual(consumer.calls, 3)

    def test_other_errors_raise(self):
        consumer = self.Consumer([[self.tp(-1001, KafkaError.TOPIC_AUTHORIZATION_FAILED)]])
        with self.assertRaises(KafkaException):
            self.subscriber(consumer)._fetch_committed(["tp"], timeout=5.0)
        self.assertEqual(consumer.calls, 1)

    def test_gives_up_at_the_timeout(self):
        consumer = self.Consumer([[self.tp(-1001, KafkaError.NOT_COORDINATOR)]] * 50)
        with self.assertRaises(KafkaException):
            self.subscriber(consumer)._fetch_committed(["tp"], timeout=0.25)
        self.assertLess(consumer.calls, 10)


class PublisherValidationTest(unittest.TestCase):
    def machine(self, **fields):
        e = events_pb2.ClusterEvent()
        e.machine_added.machine_id = fields.pop("machine_id", 1)
        e.machine_added.task_slots = fields.pop("task_slots", 4)
        for k, v in fields.items():
            setattr(e.machine_added.capacity, k, v)
        return e

    def test_rejects_obvious_errors(self):
        bad = [
            (self.machine(machine_id=0), "machine_id must not be 0"),
            (self.machine(task_slots=0), "task_slots = 0"),
            (self.machine(cpu_millis=-5), "cpu_millis = -5"),
            (events_pb2.ClusterEvent(), "no event"),
        ]
        job = events_pb2.ClusterEvent()
        job.job_submitted.job_id = 1
        job.job_submitted.tasks.add(task_id=1)
        job.job_submitted.tasks.add(task_id=1)
        bad.append((job, "lists task 1 twice"))
        job0 = events_pb2.ClusterEvent()
        job0.job_submitted.job_id = 0
        bad.append((job0, "job_id must not be 0"))
        neg = events_pb2.ClusterEvent()
        neg.job_submitted.job_id = 2
        neg.job_submitted.tasks.add(task_id=3).request.memory_bytes = -1
        bad.append((neg, "memory_bytes = -1"))
        reserved = events_pb2.ClusterEvent()
        reserved.job_submitted.job_id = 3
        reserved.job_submitted.tasks.add(task_id=4).request.scalars["cpu"] = 1
        bad.append((reserved, "reserved"))
        gpus = self.machine(machine_id=5)
        gpus.machine_added.accelerators.add(count=40, model="a10")
        gpus.machine_added.accelerators.add(count=40, model="t4")
        bad.append((gpus, "at least 80 devices"))
        task0 = events_pb2.ClusterEvent()
        task0.task_finished.job_id = 1
        bad.append((task0, "task_id must not be 0"))
        for event, message in bad:
            with self.subTest(message=message):
                with self.assertRaisesRegex(InvalidEventError, message):
                    validate_event(event)

    def test_publisher_refuses_before_sending(self):
        class Recorder:
            def __init__(self):
                self.produced = []

            def produce(self, topic, **kwargs):
                self.produced.append((topic, kwargs))

            def poll(self, timeout):
                return 0

        pub = EventPublisher("127.0.0.1:9", kafka={"log_level": 0})
        pub._producer = Recorder()  # nothing may reach it
        with self.assertRaises(InvalidEventError):
            pub.submit_job(1, [dict(task_id=1, cpu_millis=-1)])
        with self.assertRaises(InvalidEventError):
            pub.add_machine(0, task_slots=1)
        # Impossible accelerator asks, as the graph manager's decoder has them.
        for ask, message in [(dict(models=[], count=1), "present but empty"),
                             (dict(milli=1000), "not below 1000"),
                             (dict(count=-1), "negative"),
                             (dict(count=1, models=["a10"], preferred_models=["t4"]),
                              "not among the acceptable models"),
                             (dict(count=1, preferred_models=["a10", "a10"]),
                              "listed twice"),
                             (dict(count=1, preferred_models=[""]), "empty model")]:
            with self.subTest(ask=ask):
                with self.assertRaisesRegex(InvalidEventError, message):
                    pub.submit_job(1, [dict(task_id=1, accelerator=ask)])
        self.assertEqual(pub._producer.produced, [])
        spec = pub.task_spec(2, accelerator=dict(count=1, preferred_models=["a10"]))
        self.assertEqual(list(spec.accelerator.preferred_models), ["a10"])
        pub.add_machine(3, task_slots=2, cpu_millis=1000)
        pub.set_policy("cpu-memory")
        (topic, first), (_, second) = pub._producer.produced
        self.assertEqual((topic, first["key"]), ("flowsched.events", "machine/3"))
        self.assertNotIn("partition", first)  # murmur2 by key
        self.assertEqual(second["partition"], 0)

    def test_keys(self):
        self.assertEqual(event_key(self.machine(machine_id=9)), "machine/9")
        e = events_pb2.ClusterEvent()
        e.task_killed.job_id, e.task_killed.task_id = 4, 5
        self.assertEqual(event_key(e), "job/4")


if __name__ == "__main__":
    unittest.main()
