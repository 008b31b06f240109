"""Publishing our own events to EventBridge."""

from __future__ import annotations

import json
from typing import Any

from batchlane.contract import EVENT_SOURCE


class EventBridgeBus:
    def __init__(self, events: Any, bus_name: str = "default") -> None:
        self._events = events
        self._bus = bus_name

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        response = self._events.put_events(
            Entries=[{"Source": EVENT_SOURCE, "DetailType": detail_type, "Detail": json.dumps(detail), "EventBusName": self._bus}]
        )
        if response.get("FailedEntryCount"):
            raise RuntimeError(f"EventBridge rejected the event: {response['Entries']}")
