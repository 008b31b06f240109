"""Delivery of "Batch Inference Job State Change" events, with the event faults.

Events leave through one dispatcher thread and a queue, never from the thread that
changed the status: the caller's ``publish_event`` may well run a handler that calls
back into the emulator (GetModelInvocationJob from a callback Lambda), which must not
happen under a job's lock. One thread also keeps events in transition order, and
``event_delay_s`` delays each event from the moment it was raised without reordering.

A publish_event failure is logged and dropped, as a lost event: AWS delivers these
best effort, and the code under test must survive that anyway.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from .faults import Faults
from .job import TERMINAL, Job

log = logging.getLogger(__name__)

SOURCE = "aws.bedrock"
DETAIL_TYPE = "Batch Inference Job State Change"

PublishEvent = Callable[[dict[str, Any]], Any]


class EventDispatcher:
    def __init__(self, publish_event: PublishEvent | None, faults: Faults) -> None:
        self._publish = publish_event
        self._faults = faults
        self._queue: queue.Queue[tuple[float, dict[str, Any]] | None] = queue.Queue()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bedrock-emulator-events", daemon=True)
        self.published: list[dict[str, Any]] = []
        self.dropped = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop promptly; events still waiting out their delay are dropped."""
        self._stopping.set()
        self._queue.put(None)
        self._thread.join(timeout=5)

    def job_changed(self, job: Job) -> None:
        """Called by Job.transition under the job's lock: snapshot and enqueue only."""
        detail = job.event_detail()
        if self._faults.drop_terminal_event and detail["status"] in TERMINAL:
            log.info("emulator drops terminal event (fault drop_terminal_event) job=%s status=%s", job.arn, detail["status"])
            self.dropped += 1
            return
        entry = {
            "Source": SOURCE,
            "DetailType": DETAIL_TYPE,
            "Detail": json.dumps(detail),
            "Resources": [job.arn],
        }
        due = time.monotonic() + self._faults.event_delay_s
        copies = 2 if self._faults.duplicate_events else 1
        for _ in range(copies):
            self._queue.put((due, entry))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None or self._stopping.is_set():
                return
            due, entry = item
            if self._stopping.wait(max(0.0, due - time.monotonic())):
                return
            self._deliver(entry)

    def _deliver(self, entry: dict[str, Any]) -> None:
        self.published.append(entry)
        if self._publish is None:
            return
        try:
            self._publish(dict(entry))
        except Exception:
            log.exception("publish_event failed; the event is lost (job=%s)", entry["Resources"][0])
