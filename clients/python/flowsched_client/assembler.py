"""The consumer contract of the placements topic, without Kafka.

RoundAssembler takes decoded PlacementRecords with their (partition, offset)
and hands out whole rounds that a consumer may act on. It is the logic behind
PlacementSubscriber, kept free of I/O so it can be tested with synthetic
records. The rules (README.md "A real Kafka cluster", services/graph_manager
round_collector.*, services/solver_worker/README.md):

- An answer is the records of one (round_id, graph_epoch, worker epoch). It is
  complete when a RoundComplete marker arrived from every partition (the
  marker's `partition` equals the partition it was read from and all agree
  on `partition_count`) and each partition holds exactly the
  `partition_decisions` its marker announces (distinct idempotency keys;
  a repeated record of the same key is a duplicate, counted once), summing
  to `total_decisions`. An answer whose counts do not match is dropped (the
  graph manager drops it too and re-cuts the round).
- Solver fencing: an answer counts only if its worker epoch equals the
  solver epoch the round was addressed to (`RoundComplete.solver_epoch`, 0
  means unaddressed), and equals the current solver epoch: the epoch of the
  latest ResyncRequest read (the graph manager makes the asking worker
  current), or, before any, the worker of the first answer accepted. A
  ResyncRequest drops pending answers of other workers, like the graph
  manager's collector.
- Graph manager fencing: a round is delivered only if its round id is above
  every round delivered before and its graph epoch is not below theirs (round
  ids grow across graph manager epochs; a round cut by a deposed instance
  after its successor's rounds is ignored).
- Deduplication: a decision whose idempotency key was delivered before is
  never delivered again; records of rounds at or below the last delivered one
  are counted as duplicates (or late) and dropped.
- Optional ledger confirmation (`confirm_with_ledger`): the graph manager's
  ledger (ledger topic, LedgerRecord.RoundApplied) says which decisions of a
  round it applied and which it rejected as stale. In this mode a complete
  answer is delivered only once its RoundApplied is known, with the applied
  decisions in `decisions` (the graph manager's copies, which name the
  accelerator devices it assigned) and the rejected ones in `stale`; the ledger, not
  the fencing heuristics above, then decides whether the round counts.
- Optional stale reports (`report_stale(ledger_floor)`, placements-only mode):
  rounds are still delivered at once; the ledger is read as in the ledger
  mode, and each RoundApplied that rejects decisions becomes a StaleReport,
  handed out only after its round was committed (next_stale_report /
  commit_stale_report). Kept meanwhile: only the RoundApplied records that
  reject a decision and whose round is not delivered yet.

Offsets: pending (not yet delivered) answers hold the offsets of their
records; held_offsets() gives, per partition, the lowest offset still needed,
so a consumer commits below it and a restart reads the pending answer again.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Optional

from .protos import ledger_pb2, placements_pb2

PlacementDecision = placements_pb2.PlacementDecision
RoundComplete = placements_pb2.RoundComplete


@dataclasses.dataclass
class Round:
    """One round's decisions, delivered once."""
    round_id: int
    graph_epoch: int
    solver_epoch: int  # the worker epoch of the answer
    decisions: list  # PlacementDecision, in (partition, offset) order
    summary: RoundComplete  # partition 0's marker (cost, solve time, counts)
    # Ledger mode: (PlacementDecision, stale_reason) the graph manager
    # rejected; never in `decisions`. Always empty otherwise.
    stale: list = dataclasses.field(default_factory=list)
    confirmed_by_ledger: bool = False


@dataclasses.dataclass
class StaleReport:
    """The decisions the graph manager rejected as stale in one round it
    applied (its RoundApplied), reported after the round was delivered."""
    round_id: int
    graph_epoch: int
    # (PlacementDecision, stale_reason): the graph manager's copies; the
    # idempotency_key names each. Never empty.
    stale: list


@dataclasses.dataclass
class _Answer:
    key: tuple  # (round_id, graph_epoch, worker_epoch)
    partition_count: int = 0
    # partition -> OrderedDict idempotency_key -> (offset, decision)
    decisions: dict = dataclasses.field(default_factory=dict)
    markers: dict = dataclasses.field(default_factory=dict)  # partition -> RoundComplete
    offsets: dict = dataclasses.field(default_factory=dict)  # partition -> lowest offset
    complete: bool = False

    def hold(self, partition: int, offset: int) -> None:
        low = self.offsets.get(partition)
        if low is None or offset < low:
            self.offsets[partition] = offset


@dataclasses.dataclass
class Stats:
    records: int = 0
    rounds_delivered: int = 0
    decisions_delivered: int = 0
    stale_decisions: int = 0  # rejected by the graph manager (round.stale, or reported)
    stale_reports: int = 0  # StaleReports committed
    fenced_records: int = 0  # other solver epoch, not addressed, old graph epoch
    duplicate_records: int = 0  # same idempotency key / round already delivered
    dropped_answers: int = 0  # counts did not match, or superseded before completion
    ignored_records: int = 0  # malformed markers, undecodable bytes
    resync_requests: int = 0


class RoundAssembler:
    def __init__(self, partition_count: int, confirm_with_ledger: bool = False,
                 remember_rounds: int = 10_000):
        self.partition_count = partition_count
        self.confirm_with_ledger = confirm_with_ledger
        self.remember_rounds = remember_rounds
        self.stats = Stats()
        self.current_solver_epoch = 0
        self.last_round_id = 0
        self.last_graph_epoch = 0
        self._answers: dict[tuple, _Answer] = {}
        self._fenced_answers: set[tuple] = set()
        self._ready: list[_Answer] = []  # complete, accepted, waiting for delivery
        self._delivered: dict[str, int] = {}  # idempotency key -> round
        # round -> (graph epoch, keys), in delivery (= round id) order
        self._delivered_rounds: OrderedDict[int, tuple] = OrderedDict()
        self._ledger = LedgerRounds() if confirm_with_ledger else None
        self.reporting_stale = False
        self._ledger_floor = 0
        self._ledger_position = -1  # next ledger offset, -1 before any
        self._first_round_id = 0  # the first round this instance delivered
        self._stale_reports: list[tuple] = []  # (StaleReport, ledger offset)

    # Input ---------------------------------------------------------------

    def add(self, partition: int, offset: int, record) -> None:
        """Feeds one record read at (partition, offset) of the placements
        topic; `record` is a PlacementRecord, or None if it did not decode."""
        self.stats.records += 1
        if record is None:
            self.stats.ignored_records += 1
            return
        kind = record.WhichOneof("record")
        if kind == "resync_request":
            self._on_resync(record.resync_request.epoch)
            return
        if kind not in ("decision", "round_complete"):
            self.stats.ignored_records += 1
            return
        body = getattr(record, kind)
        key = (body.round_id, body.graph_epoch, body.epoch)
        if key in self._fenced_answers:
            self.stats.fenced_records += 1
            return
        if kind == "decision" and body.idempotency_key in self._delivered:
            self.stats.duplicate_records += 1
            return
        if body.round_id <= self.last_round_id:
            # A repeat of a delivered round, or an answer too late to count.
            self.stats.duplicate_records += 1
            return
        # Solver and graph epochs are judged when the answer is complete, not
        # here: partitions are read in no particular order, so the
        # ResyncRequest (partition 0) that makes a new worker current may be
        # read after that worker's first decisions on other partitions.
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = _Answer(key=key)
        if answer.complete:
            # Complete already (waiting for delivery or the ledger): a repeat.
            self.stats.duplicate_records += 1
            return
        if kind == "decision":
            per = answer.decisions.setdefault(partition, OrderedDict())
            if body.idempotency_key in per:
                self.stats.duplicate_records += 1
                return
            per[body.idempotency_key] = (offset, body)
            answer.hold(partition, offset)
            return
        self._on_marker(answer, partition, offset, body)

    def report_stale(self, ledger_floor: int = 0) -> None:
        """Placements-only mode: also report what the graph manager rejects.
        RoundApplied records completing below `ledger_floor` (a ledger offset:
        what an earlier subscriber of the group settled) are not reported.
        Call before feeding records. ValueError with confirm_with_ledger (its
        rounds carry `stale` already)."""
        if self.confirm_with_ledger:
            raise ValueError("stale reports are for the placements-only mode; with "
                             "confirm_with_ledger rounds carry their stale decisions")
        self.reporting_stale = True
        self._ledger_floor = max(ledger_floor, 0)
        self._ledger = LedgerRounds(only_stale=True, floor=self._ledger_floor)

    def add_ledger(self, record, offset: int = -1) -> None:
        """Feeds one LedgerRecord read from the ledger topic at `offset` (-1:
        not known), in offset order from the topic's beginning (ledger mode or
        report_stale)."""
        if self._ledger is None:
            return
        self._ledger.add(record, offset)
        if offset >= 0:
            self._ledger_position = max(self._ledger_position, offset + 1)
        if self.confirm_with_ledger:
            if self.last_round_id:  # history: never delivered
                self._ledger.forget_through(self.last_round_id)
        else:
            self._settle_stale()

    def _delivered_here(self, round_id: int, graph_epoch: int) -> bool:
        hit = self._delivered_rounds.get(round_id)
        return hit is not None and hit[0] == graph_epoch

    def _settle_stale(self) -> None:
        # Kept: RoundApplied records that reject a decision, above the floor
        # and not fenced. A round above the last delivered one waits (its
        # answer may still complete: the topics are read in no set order).
        if not self._first_round_id:
            return
        for (round_id, graph_epoch), (_, offset, applied) in sorted(self._ledger.rounds.items()):
            if round_id > self.last_round_id:
                break
            self._ledger.erase(round_id, graph_epoch)
            # Below the first round delivered here: an earlier subscriber of
            # the group may have delivered it (at least once). Otherwise only
            # a round delivered here; one skipped (fenced, dropped) was not
            # acted on.
            if round_id >= self._first_round_id and not self._delivered_here(round_id,
                                                                              graph_epoch):
                continue
            stale = [(d.decision, d.stale_reason) for d in applied.decisions if not d.applied]
            self._stale_reports.append((StaleReport(round_id, graph_epoch, stale), offset))

    def next_stale_report(self) -> Optional[StaleReport]:
        """report_stale: the next report, after the commit of its round (or,
        once this instance delivered a round, at once for a round below the
        first it delivered: an earlier subscriber of the group may have
        delivered it). It stays pending until commit_stale_report()."""
        return self._stale_reports[0][0] if self._stale_reports else None

    def commit_stale_report(self) -> None:
        if self._stale_reports:
            report, _ = self._stale_reports.pop(0)
            self.stats.stale_reports += 1
            self.stats.stale_decisions += len(report.stale)

    def ledger_commit_offset(self) -> Optional[int]:
        """report_stale: how far the group's ledger offset may be committed
        (every RoundApplied below it reported or settled); None before any
        record with an offset was read."""
        if not self.reporting_stale or self._ledger_position < 0:
            return None
        offset = self._ledger_position
        for _, at, _ in self._ledger.rounds.values():
            if at >= 0:
                offset = min(offset, at)
        for _, at in self._stale_reports:
            if at >= 0:
                offset = min(offset, at)
        return max(offset, self._ledger_floor)

    def _on_resync(self, epoch: int) -> None:
        self.stats.resync_requests += 1
        self.current_solver_epoch = epoch
        if self.confirm_with_ledger:
            return
        for key in [k for k, a in self._answers.items() if k[2] != epoch]:
            answer = self._answers.pop(key)
            if answer.complete:
                self._ready.remove(answer)
            self.stats.dropped_answers += 1

    def _on_marker(self, answer: _Answer, partition: int, offset: int, marker) -> None:
        if partition in answer.markers:
            self.stats.duplicate_records += 1
            return
        if marker.partition != partition or marker.partition_count != self.partition_count:
            self.stats.ignored_records += 1  # malformed: not this partition's marker
            return
        if marker.solver_epoch != 0 and marker.epoch != marker.solver_epoch:
            # Answered by a worker the round was not addressed to.
            self._fence(answer.key)
            return
        answer.markers[partition] = marker
        answer.hold(partition, offset)
        if len(answer.markers) < self.partition_count:
            return
        total = 0
        for p, m in answer.markers.items():
            got = len(answer.decisions.get(p, ()))
            total += got
            if got != m.partition_decisions or m.total_decisions != marker.total_decisions:
                self._drop(answer.key)
                return
        if total != marker.total_decisions:
            self._drop(answer.key)
            return
        answer.complete = True
        self._ready.append(answer)

    def _fence(self, key: tuple) -> None:
        answer = self._answers.pop(key, None)
        if answer is not None:
            self.stats.fenced_records += (
                sum(len(d) for d in answer.decisions.values()) + len(answer.markers) + 1)
            if answer.complete:
                self._ready.remove(answer)
        self._fenced_answers.add(key)

    def _drop(self, key: tuple) -> None:
        self._answers.pop(key, None)
        self._fenced_answers.add(key)
        self.stats.dropped_answers += 1

    # Output --------------------------------------------------------------

    def next_round(self) -> Optional[Round]:
        """The next round to deliver, or None. Call commit(round) once the
        consumer acted on it; until then it stays pending (and is returned
        again)."""
        for answer in list(self._ready):
            round_id, graph_epoch, worker = answer.key
            if round_id <= self.last_round_id:
                self._ready.remove(answer)
                self._answers.pop(answer.key, None)
                self.stats.dropped_answers += 1
                continue
            decisions = [d for p in sorted(answer.decisions)
                         for _, d in answer.decisions[p].values()]
            summary = answer.markers[0] if 0 in answer.markers else next(iter(answer.markers.values()))
            if self.confirm_with_ledger:
                applied = self._ledger.find(round_id, graph_epoch)
                if applied is None:
                    continue  # not (yet) applied by the graph manager
                outcome = {d.decision.idempotency_key: d for d in applied.decisions
                           if d.decision.epoch == worker}
                if len(outcome) != len(applied.decisions) or (set(outcome) !=
                                                              {d.idempotency_key for d in decisions}):
                    # The ledger names another answer of this round.
                    self._ready.remove(answer)
                    self._drop(answer.key)
                    continue
                stale = [(d, outcome[d.idempotency_key].stale_reason) for d in decisions
                         if not outcome[d.idempotency_key].applied]
                # The graph manager's applied copies: they name the
                # accelerator devices it assigned (device_indices).
                decisions = [outcome[d.idempotency_key].decision for d in decisions
                             if outcome[d.idempotency_key].applied]
                return Round(round_id, graph_epoch, worker, decisions, summary, stale, True)
            if graph_epoch < self.last_graph_epoch or (
                    self.current_solver_epoch and worker != self.current_solver_epoch):
                self._fence(answer.key)  # also takes it off _ready
                continue
            fresh = [d for d in decisions if d.idempotency_key not in self._delivered]
            self.stats.duplicate_records += len(decisions) - len(fresh)
            return Round(round_id, graph_epoch, worker, fresh, summary)
        return None

    def commit(self, round_: Round) -> None:
        """The consumer acted on `round_`: it is delivered, never again."""
        key = (round_.round_id, round_.graph_epoch, round_.solver_epoch)
        answer = self._answers.pop(key)
        self._ready.remove(answer)
        self.last_round_id = round_.round_id
        self.last_graph_epoch = max(self.last_graph_epoch, round_.graph_epoch)
        if not self.current_solver_epoch and round_.summary.solver_epoch:
            self.current_solver_epoch = round_.solver_epoch
        keys = [d.idempotency_key for d in round_.decisions]
        keys += [d.idempotency_key for d, _ in round_.stale]
        for k in keys:
            self._delivered[k] = round_.round_id
        self._delivered_rounds[round_.round_id] = (round_.graph_epoch, keys)
        while len(self._delivered_rounds) > self.remember_rounds:
            _, (_, old) = self._delivered_rounds.popitem(last=False)
            for k in old:
                self._delivered.pop(k, None)
        self.stats.rounds_delivered += 1
        self.stats.decisions_delivered += len(round_.decisions)
        self.stats.stale_decisions += len(round_.stale)
        # Rounds up to this one are settled: the graph manager cuts round
        # R+1 only after R was applied or abandoned, so a pending answer of
        # an older round is one that will never count.
        for k in [k for k in self._answers if k[0] <= round_.round_id]:
            del self._answers[k]
            self.stats.dropped_answers += 1
        self._ready = [a for a in self._ready if a.key[0] > round_.round_id]
        self._fenced_answers = {k for k in self._fenced_answers if k[0] > round_.round_id}
        if not self._first_round_id:
            self._first_round_id = round_.round_id
        if self.confirm_with_ledger:
            self._ledger.forget_through(round_.round_id)
        elif self.reporting_stale:
            self._settle_stale()

    def held_offsets(self) -> dict[int, int]:
        """partition -> the lowest offset a pending answer still needs."""
        held: dict[int, int] = {}
        for answer in self._answers.values():
            for p, off in answer.offsets.items():
                if p not in held or off < held[p]:
                    held[p] = off
        return held

    def pending_rounds(self) -> list[tuple]:
        return sorted(self._answers)


class LedgerRounds:
    """The ledger topic as the rounds the graph manager applied.

    Mirrors LedgerHistory and LedgerAssembler (services/graph_manager/
    state_rebuilder.*, ledger_parts.*): records split in slices are put
    together again, the first record of each seq is kept, and an EpochClaim
    of epoch E at seq N supersedes every record of an older epoch at seq >= N,
    whenever it arrives. Must read the ledger from its beginning (the claims
    that fence are anywhere in it). Keeps one seq -> epoch entry per record
    (for fencing) and the RoundApplied steps until forgotten; with
    `only_stale`, only those that reject a decision. Records completing below
    the ledger offset `floor` count for fencing, their rounds are not kept."""

    def __init__(self, only_stale: bool = False, floor: int = -1):
        self.only_stale = only_stale
        self.floor = floor
        self._claims: dict[int, int] = {}  # epoch -> seq of its claim
        self._seqs: dict[int, int] = {}  # seq -> epoch of the record kept
        # (round, graph_epoch) -> (seq, ledger offset where it completed, RoundApplied)
        self.rounds: dict[tuple, tuple] = {}
        self._partial: dict[tuple, dict] = {}
        self._assembled: set[tuple] = set()
        self.ignored = 0

    def add(self, record, offset: int = -1) -> None:
        if record.part_count > 1:
            record = self._assemble(record)
            if record is None:
                return
        seq, epoch = record.seq, record.epoch
        if seq == 0 or any(e > epoch and seq >= s for e, s in self._claims.items()):
            self.ignored += 1
            return
        if record.HasField("claim"):
            old = self._claims.get(epoch)
            self._claims[epoch] = seq if old is None else min(old, seq)
            superseded = {s for s, e in self._seqs.items() if e < epoch and s >= seq}
            for key in [k for k, (s, _, _) in self.rounds.items() if s in superseded]:
                del self.rounds[key]
            for s in superseded:
                del self._seqs[s]
                self.ignored += 1
        if seq in self._seqs:
            self.ignored += 1  # re-published duplicate, or a fenced competitor
            return
        self._seqs[seq] = epoch
        if 0 <= offset < self.floor:
            return
        for step in record.steps:
            if step.WhichOneof("step") == "round":
                r = step.round
                if self.only_stale and all(d.applied for d in r.decisions):
                    continue
                self.rounds[(r.round_id, r.graph_epoch)] = (seq, offset, r)

    def _assemble(self, record):
        if record.part >= record.part_count:
            self.ignored += 1
            return None
        key = (record.seq, record.epoch)
        if key in self._assembled:
            return None
        slices = self._partial.setdefault(key, {"count": record.part_count, "parts": {}})
        if slices["count"] != record.part_count:
            self.ignored += 1
            return None
        slices["parts"][record.part] = record.part_bytes
        if len(slices["parts"]) < slices["count"]:
            return None
        del self._partial[key]
        self._assembled.add(key)
        whole = ledger_pb2.LedgerRecord()
        try:
            whole.ParseFromString(b"".join(slices["parts"][i] for i in sorted(slices["parts"])))
        except Exception:  # noqa: BLE001 - a broken slice set is skipped
            self.ignored += 1
            return None
        return whole

    def find(self, round_id: int, graph_epoch: int):
        hit = self.rounds.get((round_id, graph_epoch))
        return hit[2] if hit else None

    def erase(self, round_id: int, graph_epoch: int) -> None:
        self.rounds.pop((round_id, graph_epoch), None)

    def forget_through(self, round_id: int) -> None:
        for key in [k for k in self.rounds if k[0] <= round_id]:
            del self.rounds[key]
