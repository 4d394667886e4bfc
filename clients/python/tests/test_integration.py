"""Outside-client integration test (issue #31, issue #34 item 5).

Starts the embedded broker, the graph manager and the solver worker as
processes on 127.0.0.1 (`flowsched up` in a temp data dir), publishes machines
and jobs with EventPublisher (confluent-kafka + protoc classes, not the C++
CLI) and checks from the consumer's side, with PlacementSubscriber:

- every submitted task is placed exactly once (capacity allows all of them);
- no machine holds more tasks than its slots, or more CPU/memory than its
  capacity, after any round;
- rounds are delivered once per consumer group across subscriber restarts:
  after a callback that raised (nothing committed, the round comes again),
  a clean close, and a close in the middle of a partly read round;
- injected fenced records (an answer from an unaddressed worker epoch, a
  round of an older graph epoch) and duplicates (a copy of a delivered
  decision) are not delivered;
- what the placements-only subscriber acted on equals what the graph manager
  applied according to the ledger (a ledger-confirmed subscriber).

StaleReportIntegrationTest: with `on_stale`, decisions that really went stale
(solver paused, machines removed meanwhile) are reported after their round's
delivery, the same ones a ledger-confirmed subscriber gets in round.stale.

Gang checks (issue #32) live in GangTest: gangs of whole and fractional GPUs
are placed whole or not at all, with the marker on every decision.

GPU checks (issue #31) live in GpuDeviceTest: no device over-committed, whole
devices exclusive, and every task still waiting once rounds settle fits
nowhere, read from the ledger's applied decisions (which name the devices).

Environment: FLOWSCHED_BINARY (the flowsched executable), and for the
protoc classes FLOWSCHED_PROTO_GEN_DIR / FLOWSCHED_PROTO_DIR (see
flowsched_client/protos.py). With FLOWSCHED_KAFKA09_SCRIPT (deploy/kafka09.sh)
every deployment runs on its own real Kafka 0.9.0.1 broker instead of the
embedded one, and every client uses `legacy_broker=True`. Every wait is bounded; processes are stopped
(`flowsched down`, then SIGKILL by pid) also when a test fails.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from confluent_kafka import Producer

from flowsched_client import EventPublisher, PlacementSubscriber, events_pb2, placements_pb2

FLOWSCHED = os.environ.get("FLOWSCHED_BINARY", "flowsched")
PARTITIONS = 4  # flowsched.placements
WAIT_S = 30  # upper bound of any single wait
KAFKA09_SCRIPT = os.environ.get("FLOWSCHED_KAFKA09_SCRIPT", "")
LEGACY = bool(KAFKA09_SCRIPT)  # the clients' Kafka 0.9 settings
LEGACY_CONF = {"api.version.request": False, "broker.version.fallback": "0.9.0.1"}
GIB = 1 << 30
ACTION = placements_pb2.Action


class Deployment:
    """`flowsched up` in a temp data dir (on Kafka 0.9 with
    FLOWSCHED_KAFKA09_SCRIPT); stop() always cleans up."""

    def __init__(self, policy: str):
        self.dir = Path(tempfile.mkdtemp(prefix="flowsched-pyclient-"))
        self.policy = policy
        self.brokers = ""
        self.broker_flags = []

    def start(self) -> None:
        if KAFKA09_SCRIPT:
            started = subprocess.run([KAFKA09_SCRIPT, "start", str(self.dir / "kafka09")],
                                     check=True, timeout=120, capture_output=True, text=True)
            self.brokers = started.stdout.strip()
            self.broker_flags = ["--brokers", self.brokers, "--legacy-broker"]
        subprocess.run([FLOWSCHED, "up", "--data-dir", str(self.dir), "--policy", self.policy]
                       + self.broker_flags,
                       check=True, timeout=WAIT_S, capture_output=True, text=True)
        if not KAFKA09_SCRIPT:
            self.brokers = (self.dir / "bootstrap").read_text().strip()
        for address in self.brokers.split(","):
            host = address.rsplit(":", 1)[0]
            if host != "127.0.0.1":
                raise AssertionError(f"the broker is not on loopback: {self.brokers}")

    def pids(self) -> list[int]:
        out = []
        for f in (self.dir / "pids").glob("*.pid"):
            try:
                out.append(int(f.read_text().strip()))
            except (OSError, ValueError):
                pass
        return out

    def stop(self) -> None:
        pids = self.pids()
        try:
            subprocess.run([FLOWSCHED, "down", "--data-dir", str(self.dir)] + self.broker_flags,
                           timeout=WAIT_S, capture_output=True)
        except subprocess.TimeoutExpired:
            pass
        for pid in pids:  # only the processes this deployment started
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if KAFKA09_SCRIPT:
            subprocess.run([KAFKA09_SCRIPT, "stop", str(self.dir / "kafka09")],
                           timeout=WAIT_S, capture_output=True)
        if os.environ.get("FLOWSCHED_KEEP_DATA"):
            print(f"data dir kept: {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self) -> str:
        text = []
        for f in sorted((self.dir / "logs").glob("*.log")):
            lines = f.read_text(errors="replace").splitlines()[-15:]
            text.append(f"--- {f.name}\n" + "\n".join(lines))
        return "\n".join(text)


class ClusterModel:
    """What the consumer acts on: task -> machine, checked after each round."""

    def __init__(self):
        self.machines = {}  # id -> dict(slots, cpu, mem)
        self.tasks = {}  # id -> dict(cpu, mem)
        self.where = {}  # task -> machine
        self.places = collections.Counter()  # task -> PLACE decisions acted on
        self.rounds = []  # (round_id, group-local instance name)
        self.keys = collections.Counter()

    def apply(self, test: unittest.TestCase, round_) -> None:
        for d in round_.decisions:
            self.keys[d.idempotency_key] += 1
            test.assertIn(d.task_id, self.tasks, f"decision for an unknown task: {d}")
            if d.action == ACTION.ACTION_PLACE:
                test.assertNotIn(d.task_id, self.where, f"task placed twice: {d}")
                self.where[d.task_id] = d.machine_id
                self.places[d.task_id] += 1
            elif d.action == ACTION.ACTION_PREEMPT:
                test.assertEqual(self.where.pop(d.task_id, None), d.previous_machine_id)
            elif d.action == ACTION.ACTION_MIGRATE:
                test.assertEqual(self.where.get(d.task_id), d.previous_machine_id)
                self.where[d.task_id] = d.machine_id
        self.check_capacity(test, round_.round_id)

    def check_capacity(self, test: unittest.TestCase, round_id: int) -> None:
        load = collections.defaultdict(lambda: [0, 0, 0])
        for task, machine in self.where.items():
            test.assertIn(machine, self.machines, f"task {task} on unknown machine {machine}")
            load[machine][0] += 1
            load[machine][1] += self.tasks[task]["cpu"]
            load[machine][2] += self.tasks[task]["mem"]
        for machine, (n, cpu, mem) in load.items():
            cap = self.machines[machine]
            test.assertLessEqual(n, cap["slots"], f"round {round_id}: machine {machine} slots")
            test.assertLessEqual(cpu, cap["cpu"], f"round {round_id}: machine {machine} CPU")
            test.assertLessEqual(mem, cap["mem"], f"round {round_id}: machine {machine} memory")


def wait_until(subscriber: PlacementSubscriber, done, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; "
                                 f"stats {subscriber.stats}")
        subscriber.poll(0.2)


def poll_until_quiet(test: unittest.TestCase, subscriber: PlacementSubscriber, progress,
                     quiet_s: float = 3.0) -> None:
    """Polls until progress() has not changed for quiet_s (bounded by WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    quiet_since, seen = time.monotonic(), -1
    while time.monotonic() - quiet_since < quiet_s:
        test.assertLess(time.monotonic(), deadline,
                        f"rounds did not settle; stats {subscriber.stats}")
        subscriber.poll(0.2)
        if progress() != seen:
            seen, quiet_since = progress(), time.monotonic()


class PlacementContractTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deployment = Deployment("cpu-memory")
        cls.addClassCleanup(cls.deployment.stop)
        cls.deployment.start()
        cls.brokers = cls.deployment.brokers

    def setUp(self):
        self.subscribers = []

    def tearDown(self):
        for s in self.subscribers:
            try:
                s.close()
            except Exception:  # noqa: BLE001 - cleanup only
                pass

    def subscriber(self, group, on_round, **kwargs) -> PlacementSubscriber:
        s = PlacementSubscriber(self.brokers, group, on_round, legacy_broker=LEGACY, **kwargs)
        self.subscribers.append(s)
        return s

    def close(self, s: PlacementSubscriber) -> None:
        s.close()
        self.subscribers.remove(s)

    def publish_workload(self, pub: EventPublisher, model: ClusterModel, wave: int):
        if wave == 1:
            # Eight large machines (32 slots) and two small ones whose CPU,
            # not slots, is the limit (8 slots, 2 cores: 1 to 4 tasks).
            for m in range(1, 11):
                big = m <= 8
                cap = dict(slots=4 if big else 8, cpu=8000 if big else 2000,
                           mem=(16 if big else 4) * GIB)
                model.machines[m] = cap
                pub.add_machine(m, rack=f"r{m % 2}", task_slots=cap["slots"],
                                cpu_millis=cap["cpu"], memory_bytes=cap["mem"])
            jobs = range(1, 5)
            per_job = 5
        else:
            jobs = range(5, 8)
            per_job = 4
        for job in jobs:
            tasks = []
            for i in range(per_job):
                task = job * 100 + i + 1
                cpu = 500 + 250 * ((task * 7) % 5)  # 500..1500
                mem = GIB // 2 + (GIB // 4) * ((task * 3) % 5)  # 0.5..1.5 GiB
                model.tasks[task] = dict(cpu=cpu, mem=mem, job=job)
                tasks.append(dict(task_id=task, cpu_millis=cpu, memory_bytes=mem))
            pub.submit_job(job, tasks, name=f"job-{job}")
        pub.flush(WAIT_S)

    def inject_junk(self, model: ClusterModel, last) -> None:
        """Records no consumer may act on, straight into the placements topic:
        a copy of a delivered decision, a complete answer from a worker the
        round was not addressed to, and a round cut by an older graph epoch.
        The graph manager reads them too and must ignore them as well."""
        producer = Producer({"bootstrap.servers": self.brokers, "log_level": 0,
                             **(LEGACY_CONF if LEGACY else {})})
        copy = placements_pb2.PlacementRecord()
        copy.decision.CopyFrom(last.decisions[0])
        producer.produce("flowsched.placements", copy.SerializeToString(),
                         key=f"machine/{copy.decision.machine_id}",
                         partition=copy.decision.machine_id % PARTITIONS)
        victim = max(model.tasks)  # a real task: acting on junk would double-place it

        def answer(round_id, worker, graph, addressed):
            machine = 2
            d = placements_pb2.PlacementRecord()
            dd = d.decision
            dd.round_id, dd.epoch, dd.graph_epoch = round_id, worker, graph
            dd.job_id, dd.task_id = model.tasks[victim]["job"], victim
            dd.machine_id, dd.action = machine, ACTION.ACTION_PLACE
            dd.idempotency_key = f"r{round_id}/t{victim}"
            producer.produce("flowsched.placements", d.SerializeToString(),
                             key=f"machine/{machine}", partition=machine % PARTITIONS)
            for p in range(PARTITIONS):
                r = placements_pb2.PlacementRecord()
                m = r.round_complete
                m.round_id, m.epoch, m.graph_epoch, m.solver_epoch = (
                    round_id, worker, graph, addressed)
                m.partition, m.partition_count = p, PARTITIONS
                m.partition_decisions = int(p == machine % PARTITIONS)
                m.total_decisions = 1
                producer.produce("flowsched.placements", r.SerializeToString(),
                                 key="round-complete", partition=p)

        # Answered by worker 12345 although the round names the real worker.
        answer(last.round_id + 1, 12345, last.graph_epoch, last.solver_epoch)
        # The real worker answering a round of an older graph manager epoch.
        answer(last.round_id + 500, last.solver_epoch, last.graph_epoch - 1,
               last.solver_epoch)
        self.assertEqual(producer.flush(WAIT_S), 0)

    def test_placements_contract(self):
        model = ClusterModel()
        acted_rounds = []  # round ids the binder group acted on, in order
        pub = EventPublisher(self.brokers, source="pyclient-test", legacy_broker=LEGACY)
        self.publish_workload(pub, model, 1)
        wave1 = set(model.tasks)

        def act(instance):
            def on_round(r):
                model.apply(self, r)
                acted_rounds.append(r.round_id)
            return on_round

        # 1. The callback fails on the first round with decisions: nothing
        #    is committed and the next subscriber of the group gets it again.
        failed = []

        def fail_once(r):
            if r.decisions and not failed:
                failed.append(r.round_id)
                raise RuntimeError("binder crashed before acting")
            act("s1")(r)

        s1 = self.subscriber("binder", fail_once)
        with self.assertRaisesRegex(RuntimeError, "binder crashed"):
            wait_until(s1, lambda: False, "the first round with decisions")
        self.close(s1)
        self.assertEqual(len(failed), 1)
        self.assertNotIn(failed[0], acted_rounds)

        # 2. A new subscriber gets the failed round again, then the rest of
        #    wave 1; a clean close commits.
        s2 = self.subscriber("binder", act("s2"))
        wait_until(s2, lambda: wave1 <= set(model.where), "wave 1 placed")
        self.assertIn(failed[0], acted_rounds)
        self.close(s2)

        # 3. Wave 2; a ledger-confirmed observer (its own group) follows the
        #    graph manager's applied decisions from the beginning.
        self.publish_workload(pub, model, 2)
        applied = {}
        stale = []
        observer_rounds = []

        def observe(r):
            observer_rounds.append(r.round_id)
            stale.extend(r.stale)
            for d in r.decisions:
                if d.action == ACTION.ACTION_PREEMPT:
                    applied.pop(d.task_id, None)
                else:
                    applied[d.task_id] = d.machine_id

        observer = self.subscriber("observer", observe, confirm_with_ledger=True)
        wait_until(observer, lambda: set(model.tasks) <= set(applied),
                   "the ledger to show every task applied")
        last_real = None

        # 4. Junk after the real rounds; then the binder reads one record at
        #    a time and stops in the middle of a round.
        def remember(r):
            nonlocal last_real
            act("s3")(r)
            if r.decisions:
                last_real = r

        s3 = self.subscriber("binder", remember)
        deadline = time.monotonic() + WAIT_S
        while not s3.assembler.held_offsets():  # complete rounds are delivered at once
            self.assertLess(time.monotonic(), deadline, "no partial round to stop in")
            s3.poll(0.2, max_records=1)
        held = dict(s3.assembler.held_offsets())
        self.assertTrue(held, "stopped without a partly read round")
        positions = dict(s3._position)
        self.close(s3)
        self.assertTrue(any(held[p] < positions[p] for p in held),
                        f"the partial round's records were read (held {held}, "
                        f"positions {positions})")

        # 5. The next subscriber reads the partial round again and delivers
        #    it once; then the junk, which it must not deliver.
        def remember4(r):
            nonlocal last_real
            act("s4")(r)
            if r.decisions:
                last_real = r

        s4 = self.subscriber("binder", remember4)
        wait_until(s4, lambda: set(model.tasks) <= set(model.where), "wave 2 placed")
        self.assertIsNotNone(last_real)
        self.inject_junk(model, last_real)
        deadline = time.monotonic() + WAIT_S
        while s4.stats.fenced_records < 2 or s4.stats.duplicate_records < 1:
            self.assertLess(time.monotonic(), deadline,
                            f"junk not seen as fenced/duplicate: {s4.stats}")
            s4.poll(0.2)
        s4.poll(0.5)
        junk_stats = s4.stats
        self.close(s4)

        # 6. A further subscriber of the group re-delivers nothing.
        s5 = self.subscriber("binder", act("s5"))
        before = len(acted_rounds)
        s5.run(timeout=1.5, poll_timeout=0.2)
        again = [r for r in acted_rounds[before:] if r in acted_rounds[:before]]
        self.assertEqual(again, [], "rounds delivered twice")
        self.close(s5)

        # Consumer-side assertions over the whole run.
        self.assertEqual(len(acted_rounds), len(set(acted_rounds)), acted_rounds)
        self.assertEqual(acted_rounds, sorted(acted_rounds))
        twice = [k for k, n in model.keys.items() if n != 1]
        self.assertEqual(twice, [], "idempotency keys acted on more than once")
        self.assertEqual(set(model.where), set(model.tasks), "every task placed")
        self.assertEqual({t: n for t, n in model.places.items() if n != 1}, {},
                         "tasks placed more than once")
        model.check_capacity(self, acted_rounds[-1])
        # What the binder acted on is what the graph manager applied.
        observer.poll(0.5)
        self.assertEqual(applied, model.where)
        self.assertEqual(stale, [])
        self.assertEqual(len(observer_rounds), len(set(observer_rounds)))
        self.assertGreaterEqual(junk_stats.fenced_records, 2)
        self.assertGreaterEqual(junk_stats.duplicate_records, 1)
        # The graph manager ignored the junk too.
        status = subprocess.run(
            [FLOWSCHED, "status", "--data-dir", str(self.deployment.dir), "--json"],
            capture_output=True, text=True, timeout=WAIT_S)
        self.assertIn('"tasks_waiting":"0"', status.stdout.replace(" ", ""), status.stdout)


class StaleReportIntegrationTest(unittest.TestCase):
    """on_stale against the real services, with a decision that really goes
    stale: the solver worker is paused (SIGSTOP) while a round placing a job
    is in flight, both machines are removed, and the worker resumes; its
    answer places tasks on machines that are gone, which the graph manager
    rejects. A placements-only subscriber with on_stale gets the round at
    once and, after it, a report of exactly those decisions (the ones a
    ledger-confirmed subscriber gets in round.stale)."""

    def status(self, deployment: Deployment) -> dict:
        try:
            return json.loads((deployment.dir / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def wait_status(self, deployment: Deployment, done, what: str, timeout: float = 10):
        deadline = time.monotonic() + timeout
        while True:
            s = self.status(deployment)
            if s and done(s):
                return s
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; status {s}\n"
                                     + deployment.logs())
            time.sleep(0.05)

    def test_stale_decisions_reported_after_delivery(self):
        deployment = Deployment("cpu-memory")
        self.addCleanup(deployment.stop)
        deployment.start()
        pub = EventPublisher(deployment.brokers, source="pyclient-stale-test",
                             legacy_broker=LEGACY)
        self.addCleanup(pub.close)
        for m in (1, 2):
            pub.add_machine(m, rack="r1", task_slots=4, cpu_millis=8000, memory_bytes=16 * GIB)
        pub.flush(WAIT_S)
        s = self.wait_status(deployment, lambda s: int(s["machines"]) == 2
                             and int(s["rounds_completed"]) > 0 and not s["round_in_flight"],
                             "the machines applied and rounds settled")
        published = int(s["rounds_published"])
        # "<pid> <start time>"
        worker = int((deployment.dir / "pids" / "solver-worker.pid").read_text().split()[0])
        os.kill(worker, signal.SIGSTOP)

        def resume():  # also if a wait fails
            try:
                os.kill(worker, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.addCleanup(resume)
        pub.submit_job(1, [dict(task_id=t, cpu_millis=1000, memory_bytes=GIB)
                           for t in range(1, 5)], name="goes-stale")
        pub.flush(WAIT_S)
        self.wait_status(deployment, lambda s: int(s["tasks"]) == 4 and s["round_in_flight"]
                         and int(s["rounds_published"]) > published,
                         "a round with the job in flight")
        for m in (1, 2):
            pub.remove_machine(m)
        pub.flush(WAIT_S)
        s = self.wait_status(deployment, lambda s: int(s["machines"]) == 0,
                             "the machines removed while the solver is paused")
        self.assertTrue(s["round_in_flight"])
        os.kill(worker, signal.SIGCONT)
        s = self.wait_status(deployment, lambda s: int(s["decisions_stale"]) > 0,
                             "the paused round's decisions rejected")
        stale_count = int(s["decisions_stale"])

        delivered, delivered_rounds, reported, reports = set(), set(), set(), []

        def on_round(r):
            delivered_rounds.add(r.round_id)
            self.assertEqual(r.stale, [])
            delivered.update(d.idempotency_key for d in r.decisions)

        def on_stale(report):
            reports.append(report.round_id)
            self.assertIn(report.round_id, delivered_rounds, "reported before delivery")
            self.assertTrue(report.stale)
            for d, reason in report.stale:
                self.assertIn(d.idempotency_key, delivered)
                self.assertNotIn(d.idempotency_key, reported)
                self.assertTrue(reason)
                reported.add(d.idempotency_key)

        with PlacementSubscriber(deployment.brokers, "py-stale", on_round, on_stale=on_stale,
                                 legacy_broker=LEGACY) as sub:
            sub.run(stop=lambda: len(reported) == stale_count, timeout=15)
            self.assertEqual(sub.stats.stale_reports, 1)
        self.assertEqual(len(reported), 4)  # every task placed on a machine gone
        self.assertEqual(stale_count, 4)
        self.assertEqual(len(reports), 1)  # one round went stale

        confirmed_stale = set()

        def on_confirmed(r):
            confirmed_stale.update(d.idempotency_key for d, _ in r.stale)

        with PlacementSubscriber(deployment.brokers, "py-stale-ledger", on_confirmed,
                                 confirm_with_ledger=True, legacy_broker=LEGACY) as sub:
            sub.run(stop=lambda: confirmed_stale == reported, timeout=15)
        self.assertEqual(confirmed_stale, reported)

        again = []  # the same group: the report was committed, not made again
        with PlacementSubscriber(deployment.brokers, "py-stale", lambda r: None,
                                 on_stale=again.append, legacy_broker=LEGACY) as sub:
            sub.run(timeout=2)
        self.assertEqual(again, [])


class GpuDeviceTest(unittest.TestCase):
    """Issue #31: accelerator devices, under the policies that put them in
    the network, a packing profile with a per-machine task limit among them
    (FLOWSCHED_GPU_POLICIES, separated by ';', picks others)."""

    _POLICIES = os.environ.get(
        "FLOWSCHED_GPU_POLICIES",
        "cpu-memory;load-spreading;profile:spread=0,pack=1000,max_tasks_per_machine=4")
    # ';' separates specs (a spec's parameters hold commas); plain names may
    # still be separated by ','.
    POLICIES = _POLICIES.split(";") if ";" in _POLICIES or ":" in _POLICIES \
        else _POLICIES.split(",")

    def test_devices_never_overcommitted(self):
        for policy in self.POLICIES:
            with self.subTest(policy=policy):
                self._check_devices(policy)

    def _check_devices(self, policy: str):
        deployment = Deployment(policy)
        self.addCleanup(deployment.stop)
        deployment.start()
        pub = EventPublisher(deployment.brokers, source="pyclient-gpu-test",
                             legacy_broker=LEGACY)
        # machine -> list of device capacities in milli
        devices = {1: [1000, 1000], 2: [1000] * 4, 3: [500]}
        pub.add_machine(1, task_slots=8, cpu_millis=32000, memory_bytes=64 * GIB,
                        accelerators=[dict(count=2, model="a10")])
        pub.add_machine(2, task_slots=8, cpu_millis=32000, memory_bytes=64 * GIB,
                        accelerators=[dict(count=4, model="a100", milli_per_device=1000)])
        pub.add_machine(3, task_slots=8, cpu_millis=32000, memory_bytes=64 * GIB,
                        accelerators=[dict(count=1, model="t4", milli_per_device=500)])
        pub.add_machine(4, task_slots=8, cpu_millis=32000, memory_bytes=64 * GIB)
        asks = {}  # task -> dict(count, milli) or None
        tasks = []
        shapes = [dict(count=1), dict(count=2), dict(milli=250), dict(milli=500),
                  dict(milli=300), None, dict(count=1), dict(milli=200), None, dict(milli=250)]
        for i, shape in enumerate(shapes, start=1):
            asks[i] = shape
            tasks.append(pub.task_spec(i, cpu_millis=1000, memory_bytes=GIB, accelerator=shape))
        pub.submit_job(1, tasks, name="gpu")
        pub.flush(WAIT_S)
        limit = re.search(r"max_tasks_per_machine=(\d+)", policy)
        limit = int(limit.group(1)) if limit else None

        use = collections.defaultdict(dict)  # (machine, device) -> task -> milli
        machine_of = {}  # task -> machine, every placed task
        held = {}  # task -> (machine, [(device, milli)])
        gpu_decisions = []

        def release(task):
            machine, devs = held.pop(task, (None, []))
            for dev, _ in devs:
                use[(machine, dev)].pop(task, None)

        def take(d):
            ask = asks[d.task_id]
            indices = list(d.device_indices)
            millis = list(d.device_milli)
            if ask is None:
                self.assertEqual(indices, [], f"devices for a task without an ask: {d}")
                return
            self.assertTrue(indices, f"GPU task placed without devices: {d}")
            self.assertEqual(len(millis), len(indices), d)
            self.assertEqual(len(set(indices)), len(indices), f"a device twice: {d}")
            caps = devices[d.machine_id]
            whole = not ask.get("milli")
            self.assertEqual(len(indices), ask.get("count", 1) if whole else 1, d)
            taken = []
            for dev, milli in zip(indices, millis):
                self.assertLess(dev, len(caps), f"no device {dev} on machine {d.machine_id}")
                on_dev = use[(d.machine_id, dev)]
                if whole:
                    self.assertEqual(on_dev, {}, f"whole device {dev} not free: {d}, {on_dev}")
                    self.assertEqual(milli, caps[dev], d)
                else:
                    self.assertEqual(milli, ask["milli"], d)
                    whole_users = [t for t in on_dev if not asks[t].get("milli")]
                    self.assertEqual(whole_users, [], f"device {dev} held whole: {d}")
                self.assertLessEqual(sum(on_dev.values()) + milli, caps[dev],
                                     f"device {dev} of machine {d.machine_id} over-committed")
                taken.append((dev, milli))
            for dev, milli in taken:
                use[(d.machine_id, dev)][d.task_id] = milli
            held[d.task_id] = (d.machine_id, taken)
            gpu_decisions.append(d)

        placed = set()

        def on_round(r):
            # The graph manager's order: preemptions, migrations, placements.
            order = {ACTION.ACTION_PREEMPT: 0, ACTION.ACTION_MIGRATE: 1, ACTION.ACTION_PLACE: 2}
            for d in sorted(r.decisions, key=lambda d: (order.get(d.action, 3), d.task_id)):
                release(d.task_id)
                machine_of.pop(d.task_id, None)
                if d.action == ACTION.ACTION_PREEMPT:
                    placed.discard(d.task_id)
                    continue
                take(d)
                placed.add(d.task_id)
                machine_of[d.task_id] = d.machine_id
            if limit is not None:
                counts = collections.Counter(machine_of.values())
                self.assertLessEqual(max(counts.values(), default=0), limit,
                                     f"over the task limit: {counts}")

        # Devices are the graph manager's choice when it applies a round:
        # the ledger's applied copies name them.
        sub = PlacementSubscriber(deployment.brokers, "gpu", on_round,
                                  confirm_with_ledger=True, legacy_broker=LEGACY)
        self.addCleanup(sub.close)
        def fits_somewhere(task):
            # The consumer's view of free devices, as the fit rule reads it.
            ask = asks[task]
            counts = collections.Counter(machine_of.values())
            open_machines = [m for m in (1, 2, 3, 4)
                             if limit is None or counts[m] < limit]
            if ask is None:
                return bool(open_machines)  # CPU and memory are plentiful here
            for machine, caps in devices.items():
                if machine not in open_machines:
                    continue
                free = [caps[i] - sum(use[(machine, i)].values()) for i in range(len(caps))]
                whole_free = [i for i in range(len(caps)) if not use[(machine, i)]]
                if ask.get("milli"):
                    if any(f >= ask["milli"] and all(asks[t].get("milli")
                                                     for t in use[(machine, i)])
                           for i, f in enumerate(free)):
                        return True
                elif len(whole_free) >= ask.get("count", 1):
                    return True
            return False

        # Rounds go on while some waiting task fits somewhere (each places at
        # least one); once quiet, every task still waiting fits nowhere.
        # Which ones wait depends on packing (GPU fragmentation, issue #32).
        poll_until_quiet(self, sub, lambda: len(gpu_decisions) + len(placed))
        for task in set(asks) - placed:
            self.assertFalse(fits_somewhere(task),
                             f"task {task} ({asks[task]}) waits but fits; use {dict(use)}")
        self.assertGreaterEqual(len(placed), 8, f"placed {sorted(placed)}")
        for (machine, dev), users in use.items():
            self.assertLessEqual(sum(users.values()), devices[machine][dev])
        self.assertTrue(gpu_decisions, "no decision assigned devices")
        # Nothing finishes or leaves here, so no decision can go stale in a
        # race: a stale one was proposed where it did not fit.
        self.assertEqual(sub.stats.stale_decisions, 0, sub.stats)


class GangTest(unittest.TestCase):
    """Issue #32 item 3: gangs (JobSubmitted.min_members) asking for whole and
    fractional GPUs. From the consumer's side (ledger-confirmed rounds): after
    every round each gang has none or at least min_members of its tasks
    placed, every decision of a gang carries the marker, no device is
    over-committed, and a gang that can never fit never places a task."""

    GANGS = {  # job -> (tasks, min_members, accelerator ask per task)
        10: (4, 4, dict(count=2)),      # 8 whole GPUs
        11: (3, 3, dict(count=1)),      # 3 whole GPUs
        12: (4, 4, dict(milli=500)),    # 4 halves
        13: (3, 3, dict(count=4)),      # 4 GPUs on each of 3 machines: never
        14: (6, 4, dict(milli=250)),    # at least 4 quarters
    }
    SMALL = {15: (3, dict(count=1)), 16: (2, None)}  # not gangs

    def test_no_partial_gang_and_no_overcommitted_device(self):
        deployment = Deployment("cpu-memory")
        self.addCleanup(deployment.stop)
        deployment.start()
        pub = EventPublisher(deployment.brokers, source="pyclient-gang-test",
                             legacy_broker=LEGACY)
        devices = {1: [1000] * 4, 2: [1000] * 4, 3: [1000] * 2}  # 10 GPUs
        for machine, caps in devices.items():
            pub.add_machine(machine, task_slots=16, cpu_millis=64000,
                            memory_bytes=128 * GIB,
                            accelerators=[dict(count=len(caps), model="a100")])
        asks, job_of = {}, {}
        jobs = [(job, count, min_members, ask)
                for job, (count, min_members, ask) in self.GANGS.items()]
        jobs += [(job, count, 0, ask) for job, (count, ask) in self.SMALL.items()]
        for job, count, min_members, ask in jobs:
            tasks = []
            for task in range(job * 100 + 1, job * 100 + count + 1):
                asks[task], job_of[task] = ask, job
                tasks.append(pub.task_spec(task, cpu_millis=1000, memory_bytes=GIB,
                                           accelerator=ask))
            pub.submit_job(job, tasks, name=f"job{job}", min_members=min_members)
        pub.flush(WAIT_S)

        use = collections.defaultdict(dict)  # (machine, device) -> task -> milli
        where = {}  # task -> machine
        rounds = []

        def on_round(r):
            for d in r.decisions:
                job = job_of[d.task_id]
                if job in self.GANGS:
                    self.assertEqual(d.gang_job_id, job, d)
                    self.assertEqual(d.gang_min_members, self.GANGS[job][1], d)
                else:
                    self.assertEqual((d.gang_job_id, d.gang_min_members), (0, 0), d)
                self.assertEqual(d.action, ACTION.ACTION_PLACE, d)  # nothing ends
                self.assertNotIn(d.task_id, where, d)
                where[d.task_id] = d.machine_id
                ask = asks[d.task_id] or {}
                for dev, milli in zip(d.device_indices, d.device_milli):
                    on_dev = use[(d.machine_id, dev)]
                    if not ask.get("milli"):
                        self.assertEqual(on_dev, {}, f"whole device not free: {d}")
                    self.assertLessEqual(sum(on_dev.values()) + milli,
                                         devices[d.machine_id][dev],
                                         f"device over-committed: {d}")
                    on_dev[d.task_id] = milli
                self.assertEqual(len(d.device_indices),
                                 0 if not ask else (1 if ask.get("milli") else ask["count"]), d)
            for job, (_, min_members, _) in self.GANGS.items():
                placed = sum(1 for t in where if job_of[t] == job)
                self.assertTrue(placed == 0 or placed >= min_members,
                                f"round {r.round_id}: gang {job} partial ({placed})")
            rounds.append(r.round_id)

        sub = PlacementSubscriber(deployment.brokers, "gang", on_round,
                                  confirm_with_ledger=True, legacy_broker=LEGACY)
        self.addCleanup(sub.close)
        poll_until_quiet(self, sub, lambda: len(where))
        self.assertTrue(rounds, "no round delivered")
        self.assertFalse([t for t in where if job_of[t] == 13],
                         "a gang that never fits was placed")
        gangs_placed = {job for t, job in job_of.items() if t in where and job in self.GANGS}
        self.assertTrue(gangs_placed, f"no gang placed; {where}")
        self.assertEqual(sub.stats.stale_decisions, 0, sub.stats)
        for (machine, dev), users in use.items():
            self.assertLessEqual(sum(users.values()), devices[machine][dev])


if __name__ == "__main__":
    unittest.main(verbosity=2)
