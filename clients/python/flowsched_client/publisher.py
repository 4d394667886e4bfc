"""EventPublisher: ClusterEvents to the events topic, validated first.

Keys and partitioning follow the C++ CLI (tools/workload/workload_generator.cc
EventKey, services/bus/producer.cc): "job/<id>" for job and task events,
"machine/<id>" for machine events, partitioned by librdkafka's murmur2
partitioner (the Java client's), so the events of one entity stay in order on
one partition whichever client published them. SetPolicy and Tick go to
partition 0, as `flowsched policy set` does: a graph manager in deterministic
mode reads only that partition.
"""

from __future__ import annotations

import time
from typing import Iterable, Mapping

from confluent_kafka import Producer

from .protos import events_pb2

ClusterEvent = events_pb2.ClusterEvent

# services/cluster/validation_limits.h (the graph manager's defaults).
MAX_TASKS_PER_JOB = 100_000
MAX_TASK_SLOTS = 1_000
MAX_CPU_MILLIS = 1 << 32
MAX_MEMORY_BYTES = 1 << 50
MAX_NETWORK_BYTES_PER_SEC = 1 << 40
MAX_INPUT_BYTES = 1 << 50
MAX_LOCALITY_ENTRIES = 64
MAX_LABELS = 64
MAX_STRING_BYTES = 256
MAX_NAMED_RESOURCES = 32
MAX_SCALAR_AMOUNT = 1 << 50
MAX_DEVICES_PER_MACHINE = 64
MAX_ACCELERATOR_MODELS = 16
# Fit reasons; the decoder refuses them as scalar names.
RESERVED_SCALAR_NAMES = ("cpu", "memory", "network", "slots")


class InvalidEventError(ValueError):
    """An event the graph manager would reject; it was not sent."""


class PublishError(RuntimeError):
    """The broker did not acknowledge every event."""


def event_key(event: ClusterEvent) -> str:
    kind = event.WhichOneof("event")
    if kind is None:
        raise InvalidEventError("ClusterEvent carries no event")
    body = getattr(event, kind)
    if kind in ("job_submitted", "task_submitted", "task_finished", "task_failed",
                "task_killed", "task_updated", "task_usage"):
        return f"job/{body.job_id}"
    if kind.startswith("machine_"):
        return f"machine/{body.machine_id}"
    if kind == "tick":
        return "tick"
    if kind == "set_policy":
        return "admin"
    return "unknown"


def _check_string(field: str, value: str) -> None:
    if len(value.encode()) > MAX_STRING_BYTES:
        raise InvalidEventError(
            f"{field} is {len(value.encode())} bytes; the limit is {MAX_STRING_BYTES}")


def _check_range(field: str, value: int, maximum: int) -> None:
    if value < 0 or value > maximum:
        raise InvalidEventError(f"{field} = {value} is outside [0, {maximum}]")


def _check_id(field: str, value: int) -> None:
    if value == 0:
        raise InvalidEventError(f"{field} must not be 0")


def _check_resources(field: str, r) -> None:
    _check_range(f"{field}.cpu_millis", r.cpu_millis, MAX_CPU_MILLIS)
    _check_range(f"{field}.memory_bytes", r.memory_bytes, MAX_MEMORY_BYTES)
    _check_range(f"{field}.network_bytes_per_sec", r.network_bytes_per_sec,
                 MAX_NETWORK_BYTES_PER_SEC)
    if len(r.scalars) > MAX_NAMED_RESOURCES:
        raise InvalidEventError(
            f"{field}.scalars has {len(r.scalars)} names; the limit is {MAX_NAMED_RESOURCES}")
    for name, amount in r.scalars.items():
        if not name:
            raise InvalidEventError(f"{field}.scalars has an empty name")
        if name in RESERVED_SCALAR_NAMES:
            raise InvalidEventError(f"{field}.scalars names \"{name}\", which is reserved")
        _check_string(f"{field}.scalars name", name)
        _check_range(f"{field}.scalars[{name}]", amount, MAX_SCALAR_AMOUNT)


def _check_labels(field: str, owner: str, labels: Mapping[str, str],
                  allow_empty_key: bool = True) -> None:
    if len(labels) > MAX_LABELS:
        raise InvalidEventError(
            f"{owner} has {len(labels)} {field}; the limit is {MAX_LABELS}")
    for key, value in labels.items():
        if not key and not allow_empty_key:
            raise InvalidEventError(f"{owner} has an empty {field} key")
        _check_string(f"{field} key", key)
        _check_string(f"{field} value", value)


def _check_task(task) -> None:
    _check_id("task.task_id", task.task_id)
    _check_resources("task.request", task.request)
    _check_range("task.input_bytes", task.input_bytes, MAX_INPUT_BYTES)
    if len(task.input) > MAX_LOCALITY_ENTRIES:
        raise InvalidEventError(
            f"task {task.task_id} has {len(task.input)} input locality entries; "
            f"the limit is {MAX_LOCALITY_ENTRIES}")
    for entry in task.input:
        _check_range("task.input.bytes", entry.bytes, MAX_INPUT_BYTES)
        _check_string("task.input.rack", entry.rack)
        if entry.machine_id == 0 and not entry.rack:
            raise InvalidEventError("task.input entry names neither a machine nor a rack")
    owner = f"task {task.task_id}"
    _check_labels("required_labels", owner, task.required_labels, False)
    _check_labels("preferred_labels", owner, task.preferred_labels, False)
    if task.HasField("accelerator"):
        a = task.accelerator
        if a.count < 0 or a.milli < 0 or a.memory_bytes < 0:
            raise InvalidEventError(f"{owner}: accelerator values must not be negative")
        if a.milli >= 1000:
            raise InvalidEventError(f"{owner}: accelerator.milli = {a.milli} is not below 1000")
        if a.milli > 0 and a.count > 1:
            raise InvalidEventError(
                f"{owner}: a fractional accelerator ask (milli {a.milli}) is on one device, "
                f"not {a.count}")
        if a.milli == 0 and a.count == 0:
            raise InvalidEventError(f"{owner}: accelerator asks for nothing")
        if a.count > MAX_DEVICES_PER_MACHINE:
            raise InvalidEventError(
                f"{owner}: accelerator.count = {a.count}; no machine has more than "
                f"{MAX_DEVICES_PER_MACHINE} devices")
        _check_range(f"{owner}: accelerator.memory_bytes", a.memory_bytes, MAX_MEMORY_BYTES)
        if a.HasField("models"):
            if not a.models.models:
                raise InvalidEventError(f"{owner}: accelerator.models is present but empty")
            if len(a.models.models) > MAX_ACCELERATOR_MODELS:
                raise InvalidEventError(
                    f"{owner}: {len(a.models.models)} models; the limit is "
                    f"{MAX_ACCELERATOR_MODELS}")
            for model in a.models.models:
                if not model:
                    raise InvalidEventError(f"{owner}: accelerator.models lists an empty model")
                _check_string("accelerator model", model)
        _check_preferred_models(owner, a)


def _check_preferred_models(owner: str, a) -> None:
    if len(a.preferred_models) > MAX_ACCELERATOR_MODELS:
        raise InvalidEventError(
            f"{owner}: {len(a.preferred_models)} preferred models; the limit is "
            f"{MAX_ACCELERATOR_MODELS}")
    acceptable = set(a.models.models) if a.HasField("models") else None
    seen = set()
    for model in a.preferred_models:
        if not model:
            raise InvalidEventError(f"{owner}: accelerator.preferred_models lists an empty model")
        _check_string("accelerator model", model)
        if acceptable is not None and model not in acceptable:
            raise InvalidEventError(
                f"{owner}: preferred model '{model}' is not among the acceptable models")
        if model in seen:
            raise InvalidEventError(f"{owner}: preferred model '{model}' is listed twice")
        seen.add(model)


def validate_event(event: ClusterEvent) -> None:
    """Raises InvalidEventError for what the graph manager's decoder rejects
    without looking at the cluster state (services/cluster/event_decoder.cc):
    zero ids, negative or huge resources, task slots outside [1, 1000],
    duplicate task ids in a job, oversized strings and maps. Unknown ids and
    duplicates across events need the state and are left to the graph manager
    (it dead-letters them)."""
    _check_string("event_id", event.event_id)
    _check_string("source", event.source)
    if event.event_time_us < 0:
        raise InvalidEventError(f"event_time_us = {event.event_time_us} is negative")
    kind = event.WhichOneof("event")
    if kind is None:
        raise InvalidEventError("ClusterEvent carries no event")
    m = getattr(event, kind)
    if kind == "job_submitted":
        _check_id("job_submitted.job_id", m.job_id)
        _check_string("job_submitted.name", m.name)
        announced = m.task_count or len(m.tasks)
        if announced > MAX_TASKS_PER_JOB or len(m.tasks) > MAX_TASKS_PER_JOB:
            raise InvalidEventError(
                f"job {m.job_id} announces {announced} tasks; the limit is "
                f"{MAX_TASKS_PER_JOB}")
        if m.task_count and m.task_count != len(m.tasks):
            raise InvalidEventError(
                f"job {m.job_id} announces {m.task_count} tasks but carries {len(m.tasks)}")
        seen = set()
        for task in m.tasks:
            _check_task(task)
            if task.task_id in seen:
                raise InvalidEventError(f"job {m.job_id} lists task {task.task_id} twice")
            seen.add(task.task_id)
    elif kind == "task_submitted":
        _check_id("task_submitted.job_id", m.job_id)
        if not m.HasField("task"):
            raise InvalidEventError("task_submitted has no task")
        _check_task(m.task)
    elif kind in ("task_finished", "task_failed", "task_killed", "task_updated",
                  "task_usage"):
        _check_id(f"{kind}.job_id", m.job_id)
        _check_id(f"{kind}.task_id", m.task_id)
        if kind == "task_failed":
            _check_string("task_failed.reason", m.reason)
        if kind == "task_updated":
            _check_resources("task_updated.request", m.request)
        if kind == "task_usage":
            _check_resources("task_usage.used", m.used)
    elif kind == "machine_added":
        _check_id("machine_added.machine_id", m.machine_id)
        _check_string("machine_added.rack", m.rack)
        if not 1 <= m.task_slots <= MAX_TASK_SLOTS:
            raise InvalidEventError(
                f"machine_added.task_slots = {m.task_slots} is outside [1, {MAX_TASK_SLOTS}]")
        _check_labels("labels", f"machine {m.machine_id}", m.labels)
        _check_resources("machine_added.capacity", m.capacity)
        devices = 0
        for group in m.accelerators:
            if group.count < 1:
                raise InvalidEventError(
                    f"machine {m.machine_id}: an accelerator group has count "
                    f"{group.count}; at least 1")
            devices += group.count
            if devices > MAX_DEVICES_PER_MACHINE:
                raise InvalidEventError(
                    f"machine {m.machine_id} has at least {devices} devices; the limit "
                    f"is {MAX_DEVICES_PER_MACHINE}")
            if not 0 <= group.milli_per_device <= 1000:
                raise InvalidEventError(
                    f"machine {m.machine_id}: milli_per_device = "
                    f"{group.milli_per_device} is outside [0, 1000]")
            _check_range(f"machine {m.machine_id}: accelerator memory_bytes",
                         group.memory_bytes, MAX_MEMORY_BYTES)
            _check_string("accelerator model", group.model)
    elif kind in ("machine_removed", "machine_failed", "machine_usage"):
        _check_id(f"{kind}.machine_id", m.machine_id)
        if kind == "machine_failed":
            _check_string("machine_failed.reason", m.reason)
        if kind == "machine_usage":
            _check_resources("machine_usage.used", m.used)
    elif kind == "set_policy":
        if not m.policy:
            raise InvalidEventError("set_policy.policy is empty")
        _check_string("set_policy.policy", m.policy)


def _fill_resources(target, cpu_millis=0, memory_bytes=0, network_bytes_per_sec=0):
    target.cpu_millis = int(cpu_millis)
    target.memory_bytes = int(memory_bytes)
    target.network_bytes_per_sec = int(network_bytes_per_sec)


class EventPublisher:
    """Publishes ClusterEvents, keyed by entity, after local validation.

    >>> pub = EventPublisher("127.0.0.1:9092")
    >>> pub.add_machine(1, rack="r1", task_slots=4, cpu_millis=8000)
    >>> pub.submit_job(1, [{"task_id": 1, "cpu_millis": 500}])
    >>> pub.flush()

    Every helper builds a ClusterEvent and calls publish(); publish() takes any
    ClusterEvent. Sending is asynchronous: flush() waits for the broker's
    acknowledgements and raises PublishError if any event was not delivered.
    `legacy_broker=True` is for a Kafka 0.9 broker (no idempotent producer).
    """

    def __init__(self, brokers: str, topic_prefix: str = "flowsched.",
                 source: str = "python-client", legacy_broker: bool = False,
                 kafka: Mapping[str, str] | None = None):
        conf = {
            "bootstrap.servers": brokers,
            "partitioner": "murmur2_random",
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 30000,
        }
        if legacy_broker:
            conf.update({"api.version.request": False,
                         "broker.version.fallback": "0.9.0.1"})
        else:
            conf["enable.idempotence"] = True
        conf.update(kafka or {})
        self.topic = topic_prefix + "events"
        self.source = source
        self._producer = Producer(conf)
        self._errors: list[str] = []
        self._sent = 0

    def _on_delivery(self, err, msg):
        if err is not None:
            self._errors.append(f"{msg.key()!r}: {err}")

    def publish(self, event: ClusterEvent) -> None:
        validate_event(event)
        if not event.source:
            event.source = self.source
        if not event.event_time_us:
            event.event_time_us = int(time.time() * 1e6)
        if not event.event_id:
            self._sent += 1
            event.event_id = f"{self.source}-{id(self):x}-{self._sent}"
        kwargs = {}
        if event.WhichOneof("event") in ("tick", "set_policy"):
            kwargs["partition"] = 0
        value = event.SerializeToString()
        while True:
            try:
                self._producer.produce(self.topic, value=value, key=event_key(event),
                                       on_delivery=self._on_delivery, **kwargs)
                break
            except BufferError:
                self._producer.poll(0.1)  # local queue full: let it drain
        self._producer.poll(0)

    def publish_all(self, events: Iterable[ClusterEvent]) -> None:
        for event in events:
            self.publish(event)

    def flush(self, timeout: float = 30.0) -> None:
        remaining = self._producer.flush(timeout)
        errors, self._errors = self._errors, []
        if remaining:
            errors.append(f"{remaining} events not acknowledged within {timeout} s")
        if errors:
            raise PublishError("; ".join(errors[:5]) +
                               (f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""))

    # Helpers -------------------------------------------------------------

    def add_machine(self, machine_id: int, *, rack: str = "", task_slots: int = 1,
                    cpu_millis: int = 0, memory_bytes: int = 0,
                    network_bytes_per_sec: int = 0,
                    labels: Mapping[str, str] | None = None,
                    accelerators: Iterable[Mapping] | None = None) -> ClusterEvent:
        """accelerators: dicts of AcceleratorGroup fields (count, model,
        milli_per_device, memory_bytes); needs a proto that has them."""
        event = ClusterEvent()
        m = event.machine_added
        m.machine_id = machine_id
        m.rack = rack
        m.task_slots = task_slots
        _fill_resources(m.capacity, cpu_millis, memory_bytes, network_bytes_per_sec)
        m.labels.update(labels or {})
        if accelerators:
            for group in accelerators:
                g = m.accelerators.add()
                for key, value in group.items():
                    setattr(g, key, value)
        self.publish(event)
        return event

    @staticmethod
    def task_spec(task_id: int, cpu_millis: int = 0, memory_bytes: int = 0,
                  network_bytes_per_sec: int = 0, priority: int = 0,
                  required_labels: Mapping[str, str] | None = None,
                  preferred_labels: Mapping[str, str] | None = None,
                  accelerator: Mapping | None = None):
        """A TaskSpec. accelerator: a dict of AcceleratorRequest fields
        (count, milli, memory_bytes, models=[...], preferred_models=[...])."""
        spec = events_pb2.TaskSpec(task_id=task_id, priority=priority)
        _fill_resources(spec.request, cpu_millis, memory_bytes, network_bytes_per_sec)
        spec.required_labels.update(required_labels or {})
        spec.preferred_labels.update(preferred_labels or {})
        if accelerator is not None:
            ask = dict(accelerator)
            models = ask.pop("models", None)
            spec.accelerator.preferred_models.extend(ask.pop("preferred_models", []))
            for key, value in ask.items():
                setattr(spec.accelerator, key, value)
            if models is not None:
                # Present even when empty, so validation refuses models=[]
                # instead of reading it as "any model".
                spec.accelerator.models.SetInParent()
                spec.accelerator.models.models.extend(models)
            spec.accelerator.SetInParent()
        return spec

    def submit_job(self, job_id: int, tasks: Iterable, *, name: str = "",
                   priority: int = 0, different_machines: bool = False,
                   min_members: int = 0) -> ClusterEvent:
        """tasks: TaskSpec messages or dicts of task_spec() arguments.
        min_members > 1: a gang, placed all-or-nothing (at least that many)."""
        event = ClusterEvent()
        j = event.job_submitted
        j.job_id = job_id
        j.name = name
        j.priority = priority
        j.different_machines = different_machines
        j.min_members = min_members
        for task in tasks:
            spec = task if isinstance(task, events_pb2.TaskSpec) else self.task_spec(**task)
            j.tasks.append(spec)
        self.publish(event)
        return event

    def submit_task(self, job_id: int, task) -> ClusterEvent:
        event = ClusterEvent()
        event.task_submitted.job_id = job_id
        spec = task if isinstance(task, events_pb2.TaskSpec) else self.task_spec(**task)
        event.task_submitted.task.CopyFrom(spec)
        self.publish(event)
        return event

    def finish_task(self, job_id: int, task_id: int) -> ClusterEvent:
        return self._emit("task_finished", job_id=job_id, task_id=task_id)

    def fail_task(self, job_id: int, task_id: int, reason: str = "") -> ClusterEvent:
        return self._emit("task_failed", job_id=job_id, task_id=task_id, reason=reason)

    def kill_task(self, job_id: int, task_id: int) -> ClusterEvent:
        return self._emit("task_killed", job_id=job_id, task_id=task_id)

    def remove_machine(self, machine_id: int) -> ClusterEvent:
        return self._emit("machine_removed", machine_id=machine_id)

    def fail_machine(self, machine_id: int, reason: str = "") -> ClusterEvent:
        return self._emit("machine_failed", machine_id=machine_id, reason=reason)

    def set_policy(self, policy: str) -> ClusterEvent:
        return self._emit("set_policy", policy=policy)

    def tick(self) -> ClusterEvent:
        return self._emit("tick")

    def _emit(self, body: str, **fields) -> ClusterEvent:
        """Publishes a ClusterEvent whose `body` message has `fields`."""
        event = ClusterEvent()
        message = getattr(event, body)
        message.SetInParent()
        for name, value in fields.items():
            setattr(message, name, value)
        self.publish(event)
        return event

    def close(self, timeout: float = 30.0) -> None:
        self.flush(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            self._producer.flush(5)
