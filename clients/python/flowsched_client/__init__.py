"""flowsched_client: publish ClusterEvents to flowsched and act on its
placement decisions with the consumer contract behind one callback."""

from .assembler import LedgerRounds, Round, RoundAssembler, StaleReport, Stats
from .protos import events_pb2, ledger_pb2, placements_pb2
from .publisher import (EventPublisher, InvalidEventError, PublishError, event_key,
                        validate_event)
from .subscriber import PlacementSubscriber

__all__ = [
    "EventPublisher", "InvalidEventError", "PublishError", "event_key", "validate_event",
    "PlacementSubscriber", "Round", "RoundAssembler", "LedgerRounds", "StaleReport",
    "Stats",
    "events_pb2", "placements_pb2", "ledger_pb2",
]
