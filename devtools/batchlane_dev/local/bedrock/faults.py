"""Fault injection for the offline Bedrock emulator.

The offline stack reads one setting, ``BATCHLANE_EMULATOR_FAULTS``, a comma-separated
list of ``key=value`` pairs (``"job_outcome=expired,time_scale=3600"``), and hands it to
:func:`parse_faults`. An unknown key or a bad value raises ``ValueError`` naming it, so
a typo fails at start-up instead of silently running the happy path.

Faults are deterministic: a batch record's faults are drawn from a hash of its
recordId, a Converse call's from a hash of its body plus how many times that same body
was seen before. Reruns therefore match, while a retried Converse call gets a fresh
draw (as a retry against the real service might succeed).

| key | values | default | effect |
|---|---|---|---|
| ``job_outcome`` | ``completed`` ``partially_completed`` ``failed`` ``expired`` ``stopped`` | ``completed`` | how every batch job ends (below) |
| ``record_error_rate`` | float in [0, 1] | ``0`` | share of batch records answered with an ``error`` line (errorCode 400) |
| ``truncate_rate`` | float in [0, 1] | ``0`` | share of answers (batch and Converse) cut short, stopReason ``max_tokens`` |
| ``content_filter_rate`` | float in [0, 1] | ``0`` | share of answers with stopReason ``content_filtered`` and empty text |
| ``guardrail_rate`` | float in [0, 1] | ``0`` | share of answers with stopReason ``guardrail_intervened`` and a canned refusal |
| ``drop_terminal_event`` | ``0`` / ``1`` | ``0`` | terminal-status events are never published; the others still are |
| ``duplicate_events`` | ``0`` / ``1`` | ``0`` | every state-change event is published twice |
| ``event_delay_s`` | float >= 0 | ``0`` | real seconds each event waits before it is published (order is kept) |
| ``throttle_rpm`` | int >= 0 | ``0`` | Converse requests per real minute before ThrottlingException (HTTP 429); 0 = unlimited |
| ``converse_latency_ms`` | int >= 0 | ``0`` | real milliseconds each Converse call sleeps before answering |
| ``throttle_rate`` | float in [0, 1] | ``0`` | share of Converse calls answered ThrottlingException whatever the quota (a retry gets a fresh draw) |
| ``output_ms_per_token`` | float >= 0 | ``0`` | real milliseconds each Converse call also sleeps per output token (generation time) |
| ``omit_rate`` | float in [0, 1] | ``0`` | share of answers that cover only the first third of the page text (stopReason end_turn) |
| ``marker_fault_rate`` | float in [0, 1] | ``0`` | share of multi-document answers whose ``<!-- Page N -->`` markers are skipped, repeated or reordered |
| ``create_throttle`` | int >= 0 | ``0`` | the first N CreateModelInvocationJob calls answer ThrottlingException |
| ``time_scale`` | float > 0 or ``auto`` | ``1`` | emulated seconds per real second, for the emulator AND the handlers' timeouts (one clock); ``auto``: the fastest scale this machine sustains at ``records_per_hour`` (clock.auto_time_scale) |
| ``records_per_hour`` | float > 0 | ``5000`` | the calibrated batch throughput: a job spends records / records_per_hour emulated hours InProgress |
| ``job_hours`` | float >= 0 | ``0`` | when > 0, a fixed InProgress time instead, spread evenly over the records (tests) |
| ``record_cost_ms`` | float >= 0 | ``0`` | real milliseconds the emulator spends on each batch record, as a slower machine would (``auto`` accounts for it) |
| ``stopping_s`` | float >= 0 | ``30`` | emulated seconds a stopped job stays Stopping before Stopped (its manifest appears only then) |
| ``refuse_pages`` | page numbers joined by ``+`` (``3+7``) | none | every answer (batch and runtime) for a request holding one of these pages (document named/titled ``page-N``) is declined: stopReason ``content_filtered`` / stop_reason ``refusal``, empty text |

``refuse_pages`` is deterministic page by page (a rate cannot say which pages fail); the
runtime's answer faults can be changed while the stack runs
(:meth:`BedrockEmulator.set_runtime_faults`), so a test can make pages fail, then pass:
what a retry of failed pages is for.

``job_outcome``:

* ``completed``: Completed, or PartiallyCompleted when any record errored (as AWS does).
* ``partially_completed``: the first record always errors, so the job ends PartiallyCompleted.
* ``failed``: half the records are processed, their output and the manifest written, then
  Failed with a failureMessage. (Input that fails validation ends Failed with no output
  whatever this setting says.)
* ``expired``: half the records are processed, the job idles until its
  timeoutDurationInHours is up, writes the partial output and manifest, ends Expired.
  A job whose ``job_hours`` exceed its timeout expires the same way on its own.
* ``stopped``: after half the records the emulator stops the job itself, as an operator
  would: Stopping, then Stopped with the partial output and manifest.

Terminal statuses are Completed, PartiallyCompleted, Failed, Stopped and Expired. Phases
before InProgress take fixed emulated times (Submitted 30 s, Validating 60 s, Scheduled
120 s; Stopping ``stopping_s``, 30 s by default), so ``time_scale=200000`` runs a whole small job in well under a
second of real time, while a 24-hour timeout lasts about 0.4 s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from .clock import BATCH_RECORDS_PER_HOUR, auto_time_scale

JOB_OUTCOMES = ("completed", "partially_completed", "failed", "expired", "stopped")


@dataclass(frozen=True)
class Faults:
    """The parsed fault setting; the defaults are a healthy, real-time Bedrock."""

    job_outcome: str = "completed"
    record_error_rate: float = 0.0
    truncate_rate: float = 0.0
    content_filter_rate: float = 0.0
    guardrail_rate: float = 0.0
    drop_terminal_event: bool = False
    duplicate_events: bool = False
    event_delay_s: float = 0.0
    throttle_rpm: int = 0
    converse_latency_ms: int = 0
    throttle_rate: float = 0.0
    output_ms_per_token: float = 0.0
    omit_rate: float = 0.0
    marker_fault_rate: float = 0.0
    create_throttle: int = 0
    time_scale: float = 1.0
    records_per_hour: float = BATCH_RECORDS_PER_HOUR
    job_hours: float = 0.0
    record_cost_ms: float = 0.0
    stopping_s: float = 30.0
    refuse_pages: frozenset[int] = frozenset()

    def in_progress_s(self, records: int) -> float:
        """Emulated seconds a job of ``records`` records spends InProgress."""
        if self.job_hours:
            return self.job_hours * 3600
        return records * 3600 / self.records_per_hour


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be between 0 and 1")
    return value


def _flag(text: str) -> bool:
    if text not in ("0", "1", "true", "false"):
        raise ValueError("must be 0 or 1")
    return text in ("1", "true")


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0.0:  # also rejects nan
        raise ValueError("must be >= 0")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0.0 or value == float("inf"):
        raise ValueError("must be a finite number > 0")
    return value


def _pages(text: str) -> frozenset[int]:
    pages = frozenset(int(part) for part in text.split("+") if part.strip())
    if not pages or min(pages) < 1:
        raise ValueError("must be page numbers >= 1 joined by + (3+7)")
    return pages


def _outcome(text: str) -> str:
    if text not in JOB_OUTCOMES:
        raise ValueError(f"must be one of {', '.join(JOB_OUTCOMES)}")
    return text


_PARSERS: dict[str, Callable[[str], Any]] = {
    "job_outcome": _outcome,
    "record_error_rate": _rate,
    "truncate_rate": _rate,
    "content_filter_rate": _rate,
    "guardrail_rate": _rate,
    "drop_terminal_event": _flag,
    "duplicate_events": _flag,
    "event_delay_s": _non_negative,
    "throttle_rpm": _count,
    "converse_latency_ms": _count,
    "throttle_rate": _rate,
    "output_ms_per_token": _non_negative,
    "omit_rate": _rate,
    "marker_fault_rate": _rate,
    "create_throttle": _count,
    "time_scale": _positive,
    "records_per_hour": _positive,
    "job_hours": _non_negative,
    "record_cost_ms": _non_negative,
    "stopping_s": _non_negative,
    "refuse_pages": _pages,
}
assert set(_PARSERS) == {f.name for f in fields(Faults)}


def parse_faults(text: str) -> Faults:
    """Parse ``"key=value,key=value"``; empty text gives the defaults."""
    values: dict[str, Any] = {}
    for item in (part.strip() for part in (text or "").split(",")):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if key not in _PARSERS:
            known = ", ".join(sorted(_PARSERS))
            raise ValueError(f"unknown emulator fault {key!r}; known: {known}")
        if not sep or not raw:
            raise ValueError(f"emulator fault {key!r} needs a value ({key}=...)")
        if key == "time_scale" and raw.lower() == "auto":
            values[key] = "auto"  # resolved below, once records_per_hour and record_cost_ms are known
            continue
        try:
            values[key] = _PARSERS[key](raw.lower())
        except ValueError as exc:
            raise ValueError(f"bad value {raw!r} for emulator fault {key!r}: {exc}") from None
    if values.get("time_scale") == "auto":
        values["time_scale"] = auto_time_scale(values.get("records_per_hour", BATCH_RECORDS_PER_HOUR), values.get("record_cost_ms", 0.0))
    return Faults(**values)


def draw(seed: str, fault: str) -> float:
    """A uniform number in [0, 1) fixed by ``seed`` and the fault's name.

    Each fault gets its own draw, so raising one rate never changes which records
    another fault hits.
    """
    digest = hashlib.sha256(f"{fault}\x00{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def answer_fault(faults: Faults, seed: str, pages: frozenset[int] = frozenset()) -> str | None:
    """Which answer-level fault (if any) hits the call identified by ``seed`` holding ``pages``."""
    if faults.refuse_pages & pages:
        return "content_filter"
    for name, rate in (
        ("content_filter", faults.content_filter_rate),
        ("guardrail", faults.guardrail_rate),
        ("truncate", faults.truncate_rate),
        ("omit", faults.omit_rate),
    ):
        if rate and draw(seed, name) < rate:
            return name
    if faults.marker_fault_rate and draw(seed, "markers") < faults.marker_fault_rate:
        kinds = ("markers_skip", "markers_repeat", "markers_reorder")
        return kinds[int(draw(seed, "marker_kind") * len(kinds))]
    return None
