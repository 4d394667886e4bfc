"""PlacementSubscriber: the placements consumer contract behind one callback.

    def act(round):            # flowsched_client.Round
        for d in round.decisions:
            start(d.task_id, d.machine_id)   # idempotent on d.idempotency_key

    with PlacementSubscriber("127.0.0.1:9092", group="binder", on_round=act) as sub:
        sub.run(stop=lambda: False)

What it does (the rules are in assembler.py):
- reads every partition of the placements topic with assign() (no group
  rebalancing: a round spans all partitions, so one subscriber must see them
  all); the consumer group only stores its offsets;
- starts from the group's committed offsets, or, without any, from the
  beginning (`start="earliest"`) or the end (`start="latest"`);
- groups decisions by round, fences other solver and graph manager epochs,
  drops duplicates, and calls `on_round` once per complete round, in round
  order;
- commits offsets synchronously only after `on_round` returned, and never
  past a record of a round it has not delivered yet (a partly read round is
  read again after a restart). If `on_round` raises, nothing is committed,
  the exception propagates, and the same round is offered again by the next
  poll (or, after a restart, by the next subscriber of the group);
- with `confirm_with_ledger=True` also reads the ledger topic (from its
  beginning, every start) and delivers a round only after the graph manager
  applied it, without the decisions it rejected as stale (in `round.stale`);
- with `on_stale=callable` (placements-only mode; not with
  confirm_with_ledger) rounds are still delivered at once, the ledger is read
  as in that mode, and `on_stale(report)` (a StaleReport) is called for each
  round the graph manager applied with rejected decisions, after that
  round's `on_round` (README.md, "Stale reports").

Delivery is exactly once per group while the subscriber runs and across
clean restarts (close()); a crash between `on_round` returning and the
commit delivers that round again to the next subscriber: act idempotently on
the idempotency key if that matters.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Optional

from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError,
                             KafkaException, TopicPartition)
from google.protobuf.message import DecodeError

from .assembler import Round, RoundAssembler, StaleReport
from .protos import ledger_pb2, placements_pb2


class PlacementSubscriber:
    def __init__(self, brokers: str, group: str, on_round: Callable[[Round], None], *,
                 topic_prefix: str = "flowsched.", start: str = "earliest",
                 confirm_with_ledger: bool = False,
                 on_stale: Optional[Callable[[StaleReport], None]] = None,
                 legacy_broker: bool = False,
                 kafka: Mapping[str, str] | None = None, metadata_timeout: float = 10.0):
        if start not in ("earliest", "latest"):
            raise ValueError("start must be 'earliest' or 'latest'")
        if on_stale is not None and confirm_with_ledger:
            raise ValueError("on_stale is for the placements-only mode: with "
                             "confirm_with_ledger every round already comes with its "
                             "stale decisions (round.stale)")
        self.topic = topic_prefix + "placements"
        self.ledger_topic = topic_prefix + "ledger"
        self.on_round = on_round
        self.on_stale = on_stale
        self._read_ledger = confirm_with_ledger or on_stale is not None
        self._ledger_committed = -1  # on_stale: the group's ledger offset
        conf = {
            "bootstrap.servers": brokers,
            "group.id": group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": start,
            "session.timeout.ms": 6000,
        }
        if legacy_broker:
            conf.update({"api.version.request": False,
                         "broker.version.fallback": "0.9.0.1"})
        conf.update(kafka or {})
        self._consumer = Consumer(conf)
        self._closed = False
        try:
            metadata = self._consumer.list_topics(self.topic, timeout=metadata_timeout)
            topic_md = metadata.topics.get(self.topic)
            if topic_md is None or topic_md.error is not None or not topic_md.partitions:
                raise KafkaException(
                    f"topic {self.topic} not found: {getattr(topic_md, 'error', None)}")
            self.partitions = sorted(topic_md.partitions)
            self.assembler = RoundAssembler(len(self.partitions), confirm_with_ledger)
            wanted = [TopicPartition(self.topic, p) for p in self.partitions]
            if on_stale is not None:  # how far an earlier subscriber reported
                wanted.append(TopicPartition(self.ledger_topic, 0))
            committed = self._fetch_committed(wanted, metadata_timeout)
            if on_stale is not None:
                # By topic, not position: the reply's order is the broker's.
                ledger_tp = next(tp for tp in committed if tp.topic == self.ledger_topic)
                committed = [tp for tp in committed if tp.topic == self.topic]
                group_known = any(tp.offset >= 0 for tp in committed)
                floor = 0  # a new group reading from the beginning: all
                if ledger_tp.offset >= 0:
                    floor = self._ledger_committed = ledger_tp.offset
                elif not group_known and start == "latest":
                    # A new group acting on rounds from now on: older rounds
                    # are not its to report.
                    _, floor = self._consumer.get_watermark_offsets(
                        TopicPartition(self.ledger_topic, 0), timeout=metadata_timeout)
                # else: a group that never reported: at least once, from the start
                self.assembler.report_stale(floor)
            # partition -> next offset to read, once known
            self._position: dict[int, int] = {}
            # partition -> offset committed by this instance (or found committed)
            self._committed: dict[int, int] = {}
            assignment = []
            for tp in committed:
                if tp.error is not None:
                    raise KafkaException(tp.error)
                if tp.offset >= 0:
                    self._position[tp.partition] = tp.offset
                    self._committed[tp.partition] = tp.offset
                    assignment.append(TopicPartition(self.topic, tp.partition, tp.offset))
                else:
                    assignment.append(TopicPartition(
                        self.topic, tp.partition,
                        OFFSET_BEGINNING if start == "earliest" else OFFSET_END))
            if self._read_ledger:
                assignment.append(TopicPartition(self.ledger_topic, 0, OFFSET_BEGINNING))
            self._consumer.assign(assignment)
        except Exception:
            self._consumer.close()
            raise

    _COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR,
                           KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                           KafkaError.COORDINATOR_NOT_AVAILABLE)

    def _fetch_committed(self, wanted, timeout):
        """The group's committed offsets of `wanted`. A coordinator that is
        moving or still loading (Kafka 0.9 answers NOT_COORDINATOR for a
        while after a group's first use) is asked again until `timeout`
        seconds passed; any other error, or one left then, raises: a
        partition read as "nothing committed" would be read from the wrong
        place."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                left = max(0.001, deadline - time.monotonic())
                committed = self._consumer.committed(wanted, timeout=left)
                error = next((tp.error for tp in committed if tp.error is not None), None)
            except KafkaException as e:
                error, committed = e.args[0], None
            if error is None:
                return committed
            if error.code() not in self._COORDINATOR_MOVING or time.monotonic() >= deadline:
                raise KafkaException(error)
            time.sleep(0.1)

    @property
    def stats(self):
        return self.assembler.stats

    def poll(self, timeout: float = 1.0, max_records: int = 500) -> int:
        """Reads what arrives within `timeout` seconds, delivers every round
        that became complete, commits after each. Returns the number of rounds
        delivered."""
        messages = self._consumer.consume(num_messages=max_records, timeout=timeout)
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                if err.fatal():
                    raise KafkaException(err)
                continue  # transient: librdkafka retries by itself
            if msg.topic() == self.ledger_topic:
                record = ledger_pb2.LedgerRecord()
                try:
                    record.ParseFromString(msg.value())
                except DecodeError:
                    continue
                self.assembler.add_ledger(record, msg.offset())
                continue
            record = placements_pb2.PlacementRecord()
            try:
                record.ParseFromString(msg.value() or b"")
            except DecodeError:
                record = None
            self.assembler.add(msg.partition(), msg.offset(), record)
            self._position[msg.partition()] = msg.offset() + 1
        return self._deliver()

    def _deliver(self) -> int:
        delivered = 0
        while True:
            # Reports first: each is for a round already delivered.
            report = self.assembler.next_stale_report()
            if report is not None:
                self.on_stale(report)  # raises: offered again, ledger offset held
                self.assembler.commit_stale_report()
                self.commit()
                continue
            round_ = self.assembler.next_round()
            if round_ is None:
                break
            self.on_round(round_)  # raises: nothing committed, offered again
            self.assembler.commit(round_)
            self.commit()
            delivered += 1
        return delivered

    def commit(self) -> None:
        """Commits, per partition, the position read so far, but never past a
        record that a round not yet delivered still needs; with on_stale also
        the ledger offset below which every RoundApplied was reported (or was
        not this group's to report)."""
        held = self.assembler.held_offsets()
        offsets = []
        for p, position in self._position.items():
            offset = min(position, held.get(p, position))
            if self._committed.get(p) != offset:
                offsets.append(TopicPartition(self.topic, p, offset))
        ledger = self.assembler.ledger_commit_offset()
        if ledger is not None and ledger != self._ledger_committed:
            offsets.append(TopicPartition(self.ledger_topic, 0, ledger))
        if offsets:
            self._consumer.commit(offsets=offsets, asynchronous=False)
            for tp in offsets:
                if tp.topic == self.topic:
                    self._committed[tp.partition] = tp.offset
            if ledger is not None:
                self._ledger_committed = ledger

    def run(self, stop: Callable[[], bool] = lambda: False,
            timeout: Optional[float] = None, poll_timeout: float = 0.5) -> int:
        """Polls until stop() is true or `timeout` seconds passed. Returns the
        rounds delivered."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delivered = 0
        while not stop() and (deadline is None or time.monotonic() < deadline):
            delivered += self.poll(poll_timeout)
        return delivered

    def close(self) -> None:
        """Commits what is settled (see commit()) and leaves."""
        if self._closed:
            return
        self._closed = True
        try:
            self.commit()
        finally:
            self._consumer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
