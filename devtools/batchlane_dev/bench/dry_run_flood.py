"""B's API latency while A floods dry runs of hostile PDFs (issue 40), beside B's latency alone, same stack.

Shared by ``tenant_isolation`` (the figure) and tests/e2e/test_tenant_isolation.py (which asserts every answer, no timing). A floods
from a few clients as fast as it is answered, never waiting out a Retry-After: each dry run is an estimate the API
records and answers 202 (or 429 past A's rate or its running estimates), and the estimate worker reads the PDF
within its bounds. B makes the same read, one call after another, first alone and then under the flood.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from batchlane_dev.local import cpu_shares
from batchlane_dev.local.pdfgen import object_flood_pdf, operator_bomb_pdf

B_CALLS = 40  # B's calls per measurement: enough for a median and a high percentile of the same calls


def hostile_dry_run_pdfs() -> dict[str, bytes]:
    """The review's two dry-run bombs (issue 40), built here: 15 MB of drawing operators in ~80 KB (a survey of
    seconds of pdfium parsing), and 900,000 objects with no usable xref (~70 MB: pypdf rebuilds it for 24-31 s)."""
    return {"operator-bomb.pdf": operator_bomb_pdf(15_000_000), "object-flood.pdf": object_flood_pdf(900_000)}


def request(base_url: str, method: str, path: str, *, user: str, timeout_s: float = 120) -> int:
    """One request, its HTTP status (no retry); 0 when it was not answered within ``timeout_s``."""
    data = b"{}" if method == "POST" else None
    headers = {"Authorization": f"Bearer local:{user}", "Content-Type": "application/json"}
    req = urllib.request.Request(base_url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        return int(exc.code)
    except OSError:
        return 0


B_GAP_S = 0.25  # between B's calls: 4 a second, within B's own rate (5 a second), as a polling client calls


def timed(call: Callable[[], int], n: int, *, gap_s: float = B_GAP_S) -> tuple[list[float], list[int]]:
    """``call`` ``n`` times, ``gap_s`` apart: (seconds each, status each)."""
    seconds, statuses = [], []
    for _ in range(n):
        started = time.perf_counter()
        statuses.append(call())
        seconds.append(time.perf_counter() - started)
        time.sleep(gap_s)
    return seconds, statuses


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


@dataclass
class Flood:
    """A's dry runs as they were answered: (HTTP status, seconds) each."""

    answers: list[tuple[int, float]] = field(default_factory=list)

    def statuses(self) -> set[int]:
        return {status for status, _ in self.answers}

    def p99_s(self) -> float:
        return percentile([s for _, s in self.answers], 99) if self.answers else 0.0


def _client(base_url: str, user: str, file_ids: list[str], offset: int, stop: Any, answers: Any, cpu_group: str | None = None) -> None:
    """One of A's clients, in a process of its own (in A's CPU group when given): dry runs of ``file_ids`` in turn until
    ``stop`` is set."""
    cpu_shares.enter(cpu_group)
    turn, mine = offset, []
    while not stop.is_set():
        file_id = file_ids[turn % len(file_ids)]
        turn += 1
        started = time.perf_counter()
        status = request(base_url, "POST", f"/api/v1/files/{file_id}/convert?dry_run=true", user=user)
        mine.append((status, time.perf_counter() - started))
    answers.put(mine)


@contextmanager
def dry_run_flood(base_url: str, user: str, file_ids: list[str], *, clients: int = 3, cpu_group: str | None = None) -> Iterator[Flood]:
    """A's flood for the ``with`` body: ``clients`` processes posting dry runs of ``file_ids`` in turn, as fast as
    answered. Processes, not threads of the caller: A's clients are not in the process that hosts the offline stack
    (its API's front, moto), as no attacker's client is in API Gateway's; with ``cpu_group`` (A's, local/cpu_shares.py)
    their CPU is A's too, as an attacker's machines are not the service's."""
    context = multiprocessing.get_context("spawn")
    stop, answers = context.Event(), context.Queue()
    processes = [context.Process(target=_client, args=(base_url, user, file_ids, i, stop, answers, cpu_group), daemon=True) for i in range(clients)]
    for process in processes:
        process.start()
    flood = Flood()
    try:
        yield flood
    finally:
        stop.set()
        for _ in processes:
            flood.answers.extend(answers.get(timeout=180))
        for process in processes:
            process.join(timeout=30)


def summary(alone: list[float], flooded: list[float], alone_after: list[float] | None = None) -> dict[str, float]:
    """p50 and p99 of B's calls alone and under the flood, in ms, and the ratios (flooded over alone). With
    ``alone_after`` (B alone again once the flood and its estimates ended), alone is the mean of the two measurements'
    p50 and of their p99: a load that comes or goes on a shared machine meanwhile is not counted as the flood's."""
    a50, a99, f50, f99 = statistics.median(alone), percentile(alone, 99), statistics.median(flooded), percentile(flooded, 99)
    if alone_after:
        a50, a99 = (a50 + statistics.median(alone_after)) / 2, (a99 + percentile(alone_after, 99)) / 2
    return {
        "alone_p50_ms": round(a50 * 1000, 1),
        "alone_p99_ms": round(a99 * 1000, 1),
        "flood_p50_ms": round(f50 * 1000, 1),
        "flood_p99_ms": round(f99 * 1000, 1),
        "ratio_p50": round(f50 / a50, 3) if a50 else 0.0,
        "ratio_p99": round(f99 / a99, 3) if a99 else 0.0,
    }
