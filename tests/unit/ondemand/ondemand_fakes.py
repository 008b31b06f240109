"""In-memory fakes for the on-demand path: the emulated page model without HTTP."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from batchlane.claude import ConverterConfig, ModelAnswer, ModelCallError, PageRequest, answer_from_messages
from batchlane.domain.cost import PriceTable
from batchlane.pdf.split import ChunkSpan, Page, open_pdf
from batchlane_dev.local.bedrock import model
from batchlane_dev.local.pdfgen import make_pdf

PRICES = PriceTable({"m": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})
CONFIG = ConverterConfig(model_id="m", max_tokens=8192, temperature=0.0)


class ModelTransport:
    """Answers like the offline emulator's model; ``fault(request, n)`` picks a fault per call."""

    def __init__(self, fault: Callable[[PageRequest, int], str | None] = lambda request, n: None) -> None:
        self.fault = fault
        self.sent: list[PageRequest] = []
        self._lock = threading.Lock()

    def send(self, request: PageRequest) -> ModelAnswer:
        with self._lock:
            self.sent.append(request)
            n = len(self.sent)
        fault = self.fault(request, n)
        if fault == "throttle":
            raise ModelCallError("ThrottlingException", "slow down", retryable=True)
        return answer_from_messages(model.answer_messages(request.body(), fault=fault), served_by="on_demand")


def chunk_pages(count: int, *, blank_every: int = 0, lines_per_page: int = 18) -> list[Page]:
    document = open_pdf(make_pdf(count, blank_every=blank_every, lines_per_page=lines_per_page), max_pages=count)
    return list(document.pages(ChunkSpan(0, 1, count)))


class RecordingLimiter:
    """A limiter whose slots are counted, so a test can see that backoff happens while one is held."""

    def __init__(self, pace_waits: tuple[float, ...] = ()) -> None:
        self.pace_waits = list(pace_waits)  # what pace() answers, in turn (0 once spent)
        self.held = 0
        self.max_held = 0
        self.events: list[str] = []
        self._lock = threading.Lock()

    @contextmanager
    def slot(self, pool: str, *, aborted: Callable[[], bool]) -> Iterator[Any]:
        with self._lock:
            self.held += 1
            self.max_held = max(self.max_held, self.held)
            self.events.append("acquire")
        try:
            yield self
        finally:
            with self._lock:
                self.held -= 1
                self.events.append("release")

    def renew(self) -> None:
        return None

    def pace(self, pool: str, *, aborted: Callable[[], bool] = lambda: False) -> float:
        with self._lock:
            self.events.append(f"pace/{self.held}")  # the slots held when a start time is asked for
            return self.pace_waits.pop(0) if self.pace_waits else 0.0
